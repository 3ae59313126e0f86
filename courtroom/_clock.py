"""When the command started, so that a run's summary can say what its start-up took."""

from __future__ import annotations

import time

_began: float | None = None


def begin() -> None:
    """Mark the command's start (the CLI's entry point)."""
    global _began
    _began = time.perf_counter()


def start_up(until: float) -> float | None:
    """Seconds from the command's start to ``until`` (a ``perf_counter`` time), once per command.

    None from Python (no command started) and for a command's later runs (a comparison's second
    row): their start-up was the first run's.
    """
    global _began
    began, _began = _began, None
    return None if began is None else max(0.0, until - began)
