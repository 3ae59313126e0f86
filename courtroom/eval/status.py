"""Whether an evaluation counts as a success: the failed fraction against ``--fail-on-error``.

Like inspect_ai's ``--fail-on-error``: a run (a comparison's runs, a study trial, compile's dev
scores) whose failed examples exceed the threshold fraction is a failure of the command, so a
script never mistakes 38 failed examples out of 40 for a result. ``1`` turns the check off.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from courtroom.errors import ConfigError, CourtroomError

DEFAULT_FAIL_ON_ERROR = 0.1
"""Fail when more than 10% of the examples failed."""


class TooManyFailures(CourtroomError):
    """More examples failed than ``--fail-on-error`` allows."""


def check_threshold(value: float | None) -> float | None:
    """``value`` if it is a fraction in [0, 1] (None: the default), else a one-line error."""
    if value is None:
        return DEFAULT_FAIL_ON_ERROR
    if not 0 <= value <= 1:
        raise ConfigError(f"--fail-on-error must be a fraction in [0, 1] (got {value:g}): e.g. 0.1, or 1 to never fail")
    return float(value)


def status(failures: int, n: int, threshold: float | None, errors: Sequence[str | None] = ()) -> dict[str, Any]:
    """``{"status": "ok" | "failed", "status_reason": str | None}`` for ``failures`` of ``n``."""
    threshold = DEFAULT_FAIL_ON_ERROR if threshold is None else threshold
    if n == 0 or failures / n <= threshold:
        return {"status": "ok", "status_reason": None}
    reason = f"{failures} of {n} examples failed ({failures / n:.0%} > --fail-on-error {threshold:g})"
    first = next((e for e in errors if e), None)
    if first:
        reason += f"; first error: {first}"
    if any(e and TIMED_OUT.search(e) for e in errors):
        reason += "; requests timed out: give each one longer with --timeout SECONDS"
    return {"status": "failed", "status_reason": reason}


TIMED_OUT = re.compile(r"timeout|timed out", re.IGNORECASE)
"""An example's error that a longer ``--timeout`` may cure (``LMTimeoutError``, ``Request timed out``)."""
