"""``COURTROOM_*`` environment variables: each read by one function, each checked before a command runs.

A bad value (``COURTROOM_RETRY_WAIT=soon``, ``COURTROOM_STOP_GRACE=inf``) is bad input: the CLI stops
at once, naming the variable (:func:`check_environment`, exit 2), rather than failing mid-run.
"""

from __future__ import annotations

import math
import os
from pathlib import Path

from courtroom.errors import ConfigError

SECONDS = {
    "COURTROOM_RETRY_WAIT": 1.0,
    "COURTROOM_STOP_GRACE": 10.0,
    "COURTROOM_PROGRESS_EVERY": 5.0,
    "COURTROOM_BATCH_POLL": 10.0,
    "COURTROOM_BATCH_WAIT": 30.0,
    "COURTROOM_BATCH_TURNAROUND": 3600.0,
}
"""Variables that hold seconds, with their defaults."""

COUNTS = {"COURTROOM_BATCH_LINES": 50_000}
"""Variables that hold a whole number >= 1, with their defaults."""


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


def env_count(name: str, default: int) -> int:
    """A whole number >= 1 from ``$name`` (``default`` when unset), else :class:`ConfigError`."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"{name}={raw!r} is not a whole number >= 1: fix or unset it")
    return value


def check_environment() -> None:
    """Every ``COURTROOM_*`` variable with a value courtroom cannot use: one line naming it."""
    for name, default in SECONDS.items():
        env_seconds(name, default)
    for name, count in COUNTS.items():
        env_count(name, count)
    cache = os.environ.get("COURTROOM_CACHE_DIR")
    if cache and Path(cache).expanduser().exists() and not Path(cache).expanduser().is_dir():
        raise ConfigError(f"COURTROOM_CACHE_DIR={cache!r} is not a folder: point it at a folder (created if missing)")
    max_chars()  # the embedded model's settings, parsed here: importing its package imports DSPy
    default_threads()


MAX_CHARS_ENV = "COURTROOM_LOCAL_MAX_CHARS"
THREADS_ENV = "COURTROOM_LOCAL_THREADS"


def max_chars() -> int | None:
    """``$COURTROOM_LOCAL_MAX_CHARS``, the embedded model's per-field character cap (None: unset; 0: no cap)."""
    raw = os.environ.get(MAX_CHARS_ENV)
    if raw is None or not raw.strip():
        return None
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ConfigError(f"{MAX_CHARS_ENV}={raw!r} is not a whole number >= 0 (0: no cap beyond --max-tokens)")
    return value


def default_threads() -> int:
    """llama.cpp's threads: ``$COURTROOM_LOCAL_THREADS``, else the machine's cores (1 to 4).

    ggml's threads spin while they wait for each other, so on a machine busy with other work fewer
    threads can be faster: measured on 2 cores, 64 tokens took 1.1 s on 2 threads and 1.6-2.2 s on
    1 when idle, but 4.5-5.6 s on 2 and 1.5-2.0 s on 1 beside one other busy process.
    """
    raw = os.environ.get(THREADS_ENV)
    if raw is not None and raw.strip():
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if value < 1:
            raise ConfigError(f"{THREADS_ENV}={raw!r} is not a whole number >= 1: fix or unset it")
        return value
    return max(1, min(os.cpu_count() or 2, 4))
