"""Budgets of studies: a trial starts only if the budget admits it (:mod:`courtroom.cost.budget`).

The run config one study trial evaluates (:func:`study_run_config`), the guard that admits each
Optuna trial and settles what it spent (:func:`guard_objective`), and the one-line outcome of a
study stopped at its budget (:func:`stopped_study`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from courtroom._stop import with_flags
from courtroom.cost.budget import Budget, BudgetExhausted


def study_run_config(config: Any, framework: str | None = None) -> Any:
    """The run config one study trial of ``framework`` evaluates (dev split, train limit, first model).

    ``framework``: the design, in a study across designs (default: the study's framework).
    """
    from courtroom.runner.config import RunConfig

    framework = framework or config.framework
    knobs, preset = config.fixed_for(framework)
    return RunConfig(
        framework,
        config.task,
        data=config.data,
        split="dev",
        limit=config.dev,
        seed=config.seed,
        lm=config.models[0] if config.models else None,
        roles=dict(config.roles),
        max_tokens=config.max_tokens,
        api_base=config.api_base,
        train_limit=config.train,
        dataset=config.dataset,
        splits=config.splits,
        knobs=knobs,
        preset=preset,
    )


def guard_objective(objective: Any, budget: Budget, config: Any, space: Sequence[Any], unit: Any = None) -> Any:
    """An Optuna objective that starts a trial only if the budget admits it (else stops the study).

    Each trial is bounded by ``unit`` (an estimate of one trial), by default the dry run at the
    space's most expensive point. A refused trial ends pruned with the user attribute ``budget``
    and the study stops starting trials.
    """
    import optuna

    from courtroom.cost.dry_run import estimate_study

    est = unit or estimate_study(study_run_config(config), space, 1, prices=budget.prices)
    fits_none(est, budget)
    budget.bound(est.calls, est.cost if est.completion_tokens is not None else None, list(est.models.values()))
    dearest = max((budget._price(m) or (0.0, 0.0) for m in est.models.values()), key=lambda p: p[0] + p[1])

    def guarded(trial: Any) -> Any:
        if not budget.admit():
            trial.set_user_attr("budget", "not run: budget reached")
            trial.study.stop()
            raise optuna.TrialPruned("budget reached")
        try:
            return objective(trial)
        finally:
            attrs = trial.user_attrs
            # Trials record tokens, not tokens per model: price them at the dearest model (an upper bound).
            tokens = int(attrs.get("tokens", 0))
            budget.settle({"sent": attrs.get("sent", 0)})
            with budget._lock:
                budget.spent_cost += tokens * max(dearest)

    return guarded


def fits_none(est: Any, budget: Budget) -> None:
    """Refuse, before any request, a budget below what one trial may spend (it could start none)."""
    from courtroom.errors import ConfigError

    if budget.max_calls is not None and est.calls > budget.max_calls:
        raise ConfigError(
            f"one trial costs up to {est.calls} calls; --max-calls {budget.max_calls} fits none: raise it to at "
            f"least {est.calls}, or make a trial smaller (--dev-limit, --space)"
        )
    cost = est.cost if est.completion_tokens is not None else None
    if budget.max_cost is not None and cost is not None and cost > budget.max_cost:
        raise ConfigError(
            f"one trial costs up to ${cost:.4f}; --max-cost {budget.max_cost:g} fits none: raise it to at least "
            f"{cost:.4f}, or make a trial smaller (--dev-limit, --space, --max-tokens)"
        )


def stopped_study(budget: Budget, config: Any, done: int) -> BudgetExhausted:
    """The one-line outcome of a study stopped at its budget."""
    left = max(0, config.trials - done)
    designs = getattr(config, "frameworks", None)
    what = f"--frameworks {','.join(designs)}" if designs else config.framework
    resume = f"courtroom study {what} --task {config.task} --study-name {config.name} --trials {left}"
    if config.storage:
        resume += f" --storage {config.storage}"
    resume = with_flags(resume)
    line = (
        f"budget reached ({budget.limit_text()}): spent {budget.spent_text()}; {left} trial(s) not started; "
        f"continue with: {resume}"
    )
    return BudgetExhausted(line, budget, left, resume)
