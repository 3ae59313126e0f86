"""``COURTROOM_*`` environment variables: each read by one function, each checked before a command runs.

A bad value (``COURTROOM_RETRY_WAIT=soon``, ``COURTROOM_STOP_GRACE=inf``) is bad input: the CLI stops
at once, naming the variable (:func:`check_environment`, exit 2), rather than failing mid-run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from courtroom.errors import ConfigError

SECONDS = {"COURTROOM_RETRY_WAIT": 1.0, "COURTROOM_STOP_GRACE": 10.0, "COURTROOM_PROGRESS_EVERY": 5.0}
"""Variables that hold seconds, with their defaults."""


def env_seconds(name: str, default: float, *, strict: bool = True) -> float:
    """Seconds from ``$name`` (``default`` when unset): a finite number >= 0, else :class:`ConfigError`.

    ``strict=False`` (a library reading it mid-run, after the CLI checked it) gives ``default`` instead.
    """
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        if not strict:
            return default
        raise ConfigError(f"{name}={raw!r} is not a number of seconds >= 0: fix or unset it")
    return value


def check_environment() -> None:
    """Every ``COURTROOM_*`` variable with a value courtroom cannot use: one line naming it."""
    for name, default in SECONDS.items():
        env_seconds(name, default)
    cache = os.environ.get("COURTROOM_CACHE_DIR")
    if cache and Path(cache).expanduser().exists() and not Path(cache).expanduser().is_dir():
        raise ConfigError(f"COURTROOM_CACHE_DIR={cache!r} is not a folder: point it at a folder (created if missing)")
    if os.environ.get("COURTROOM_LOCAL_MAX_CHARS"):
        from courtroom.models.local._lm import string_cap

        string_cap()
    if os.environ.get("COURTROOM_LOCAL_THREADS"):
        from courtroom.models.local._server import default_threads

        default_threads()
