"""Installed versions of the libraries that shape results (run folders and saved programs record them)."""

from __future__ import annotations

import functools
import platform
from importlib import metadata

VERSIONED = ("courtroom", "dspy", "litellm", "optuna", "datasets", "pandas", "scikit-learn")


def versions() -> dict[str, str]:
    """Installed versions of the libraries that shape results."""
    return dict(_read())


@functools.cache
def _read() -> tuple[tuple[str, str], ...]:
    # Read once per process: a long-lived caller (a notebook, a study's trials) asks again and again.
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return tuple(out.items())
