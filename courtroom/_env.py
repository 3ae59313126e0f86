"""``COURTROOM_*`` environment variables: which there are, what each may hold, and the check of all of them.

:data:`VARIABLES` declares every variable courtroom reads, with the values it takes; each is read
by one function here (:func:`env_seconds`, :func:`env_count`, :func:`env_switch`,
:func:`env_choice`, ...). A bad value (``COURTROOM_RETRY_WAIT=soon``, ``COURTROOM_N_SAMPLING=maybe``,
``COURTROOM_PROMPT_LAYOUT=bogus``) is bad input: :func:`check_environment` refuses it in one line
naming the variable and the values it takes (exit 2), at the CLI's start and in every
:mod:`courtroom.api` entry point, before anything is written or sent, rather than failing
mid-run or being read as something else.
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

ON = ("1", "on", "yes", "true")
OFF = ("0", "off", "no", "false")
SWITCHES = {"COURTROOM_N_SAMPLING": True}
"""Variables that turn something on or off (:data:`ON`, :data:`OFF`), with their defaults."""

LAYOUT_ENV = "COURTROOM_PROMPT_LAYOUT"
MAX_CHARS_ENV = "COURTROOM_LOCAL_MAX_CHARS"
THREADS_ENV = "COURTROOM_LOCAL_THREADS"
MODEL_ENV = "COURTROOM_LOCAL_MODEL"

VARIABLES = {
    **{name: "seconds, a number >= 0" for name in SECONDS},
    **{name: "a whole number >= 1" for name in COUNTS},
    **{name: f"{'|'.join(ON)} (on) or {'|'.join(OFF)} (off)" for name in SWITCHES},
    LAYOUT_ENV: "classic, cache or auto",
    MAX_CHARS_ENV: "a whole number >= 0 (0: no cap beyond --max-tokens)",
    THREADS_ENV: "a whole number >= 1",
    MODEL_ENV: "a .gguf file",
    "COURTROOM_CACHE_DIR": "a folder (created if missing)",
    "COURTROOM_LM": "a model name (a dspy.LM string, or local)",
    "COURTROOM_PROGRAM_KEY": "any text: the key that signs program files",
}
"""Every variable courtroom reads -> the values it takes (what a refusal names)."""


def _refuse(name: str, raw: str) -> ConfigError:
    return ConfigError(f"{name}={raw!r}: use {VARIABLES[name]}, or unset it")


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


def env_switch(name: str, default: bool) -> bool:
    """On or off from ``$name`` (``default`` when unset): one of :data:`ON` or :data:`OFF`, else ConfigError."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in ON + OFF:
        raise _refuse(name, raw)
    return value in ON


def env_choice(name: str, choices: tuple[str, ...], default: str) -> str:
    """One of ``choices`` from ``$name`` (``default`` when unset; any case), else :class:`ConfigError`."""
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    value = raw.strip().lower()
    if value not in choices:
        raise _refuse(name, raw)
    return value


def prompt_layout() -> str:
    """``$COURTROOM_PROMPT_LAYOUT``: auto (the default: by price), classic or cache."""
    from courtroom.models._layout_names import LAYOUTS

    return env_choice(LAYOUT_ENV, LAYOUTS, "auto")


def n_sampling() -> bool:
    """``$COURTROOM_N_SAMPLING``: on unless it says off."""
    return env_switch("COURTROOM_N_SAMPLING", SWITCHES["COURTROOM_N_SAMPLING"])


def check_environment() -> None:
    """Every ``COURTROOM_*`` variable with a value courtroom cannot use: one line naming it and what it takes."""
    for name, default in SECONDS.items():
        env_seconds(name, default)
    for name, count in COUNTS.items():
        env_count(name, count)
    n_sampling()
    prompt_layout()
    cache = os.environ.get("COURTROOM_CACHE_DIR")
    if cache and Path(cache).expanduser().exists() and not Path(cache).expanduser().is_dir():
        raise ConfigError(f"COURTROOM_CACHE_DIR={cache!r} is not a folder: point it at a folder (created if missing)")
    weights = os.environ.get(MODEL_ENV)
    if weights and weights.strip() and not Path(weights).expanduser().is_file():
        raise ConfigError(f"{MODEL_ENV}={weights} is not a file: point it at a .gguf file, or unset it")
    max_chars()  # the embedded model's settings, parsed here: importing its package imports DSPy
    default_threads()


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
