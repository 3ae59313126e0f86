"""What the spending commands share for ``--dry-run``: printing the estimates."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console


def print_estimates(estimates: Mapping[str, Any], notes: Sequence[str] = ()) -> None:
    """Print a dry run's table (stdout)."""
    from courtroom.cost.dry_run import estimate_lines

    console = Console()
    for line in estimate_lines(estimates, notes=notes):
        console.print(line, markup=False, soft_wrap=True)
