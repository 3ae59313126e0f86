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
    from courtroom.eval.budget import Budget

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


def check_compile_budget(est: Any, optimizer: str, max_calls: int | None, max_cost: float | None) -> None:
    """Compile runs as one unit: it starts only if its dry-run bound fits the budget (else one line, exit 3)."""
    import typer

    from courtroom.eval.dry_run import PROGRAM_RUNS

    why = None
    if optimizer not in PROGRAM_RUNS:
        why = f"{optimizer} decides its own number of calls (no bound): use bootstrap, bootstrap-rs, labeled or knn"
    elif max_calls is not None and est.calls > max_calls:
        why = f"it could send {est.calls} request(s), over --max-calls {max_calls}"
    elif max_cost is not None and (est.cost is None or est.completion_tokens is None):
        why = "its dollars are unknown (no price or no max_tokens): pass --prices and --max-tokens"
    elif max_cost is not None and est.cost > max_cost:
        why = f"it could cost ${est.cost:.4f}, over --max-cost {max_cost:g}"
    if why:
        Console(stderr=True).print(
            f"budget: compile not started, {why}; nothing was sent (see --dry-run; lower --train/--dev)",
            markup=False,
            soft_wrap=True,
        )
        raise typer.Exit(3)
