"""DSPy's disk cache, kept in ``$COURTROOM_CACHE_DIR`` (default: the user cache dir)."""

from __future__ import annotations

import os
from pathlib import Path

import dspy
from platformdirs import user_cache_dir

_configured: Path | None = None


def cache_dir() -> Path:
    """Where the LM response cache lives."""
    return Path(os.environ.get("COURTROOM_CACHE_DIR") or user_cache_dir("courtroom")).expanduser()


def configure_cache(path: str | Path | None = None, *, enabled: bool = True) -> Path:
    """Point DSPy's memory and disk cache at ``path`` (idempotent)."""
    global _configured
    target = Path(path) if path else cache_dir()
    if _configured == target and enabled:
        return target
    target.mkdir(parents=True, exist_ok=True)
    dspy.configure_cache(enable_disk_cache=enabled, enable_memory_cache=enabled, disk_cache_dir=str(target))
    _configured = target if enabled else None
    return target
