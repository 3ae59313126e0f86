"""What the spending commands share for ``--dry-run`` and budgets: printing only."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console


def print_estimates(estimates: Mapping[str, Any], notes: Sequence[str] = ()) -> None:
    """Print a dry run's table (stdout)."""
    from courtroom.eval.dry_run import estimate_lines

    console = Console()
    for line in estimate_lines(estimates, notes=notes):
        console.print(line, markup=False, soft_wrap=True)


def make_budget(max_calls: int | None, max_cost: float | None, prices: Any = None, repeats: int = 1) -> Any:
    """A :class:`courtroom.eval.budget.Budget` from the flags (None when neither is set)."""
    if max_calls is None and max_cost is None:
        return None
    from courtroom.errors import ConfigError
    from courtroom.eval.budget import Budget

    if repeats > 1:
        raise ConfigError("--max-calls/--max-cost apply to single runs: drop --repeats, or run the repeats one by one")
    return Budget(max_calls=max_calls, max_cost=max_cost, prices=prices)


def opt_budget(budget: Any, fn: Any, *args: Any, **kwargs: Any) -> Any:
    """Call ``fn`` (with ``budget=`` when one is set); a stop at the budget prints its line and exits 3."""
    import typer

    from courtroom.eval.budget import BudgetExhausted

    try:
        return fn(*args, **kwargs, budget=budget) if budget is not None else fn(*args, **kwargs)
    except BudgetExhausted as stop:
        Console(stderr=True).print(stop.line, markup=False, soft_wrap=True)
        raise typer.Exit(3) from None
