"""What the spending commands share for ``--dry-run``: printing the estimates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def print_estimates(estimates: Mapping[str, Any], notes: Sequence[str] = ()) -> None:
    """Print a dry run's table and notes on stdout at the terminal's width (a table too wide: a paragraph per row)."""
    from courtroom.cost.dry_run import estimate_lines
    from courtroom.reporting.tables import print_text, stdout_console

    print_text(stdout_console(), estimate_lines(estimates, notes=notes))
