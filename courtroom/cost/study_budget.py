"""Budgets of studies: a trial starts only if the budget admits it (:mod:`courtroom.cost.budget`).

The run config one study trial evaluates (:func:`study_run_config`), the guard that admits each
Optuna trial and settles what it spent (:func:`guard_objective`), and the one-line outcome of a
study stopped at its budget (:func:`stopped_study`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from courtroom._secrets import without_password
from courtroom._stop import with_flags
from courtroom.cost.budget import Budget, BudgetExhausted
from courtroom.errors import ConfigError


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
    space's most expensive point. While a trial runs, every request is reserved before it goes
    out, as in a run (:meth:`Budget.counting`): retries and unknown completion lengths cannot
    pass a limit. A refused trial, or one cut off by a refused request, ends pruned with the
    user attribute ``budget`` and the study stops starting trials; a cut trial gives its place
    back (``budget.admitted``), so the resume command runs it again (its answers are cached).
    """
    import optuna

    from courtroom.cost.dry_run import estimate_study
    from courtroom.models._requests import OverBudget

    est = unit or estimate_study(study_run_config(config), space, 1, prices=budget.prices)
    fits_none(est, budget)
    budget.bound(est.calls, est.cost if est.completion_tokens is not None else None, list(est.models.values()))

    def guarded(trial: Any) -> Any:
        with budget.counting():
            if not budget.admit():
                trial.set_user_attr("budget", "not run: budget reached")
                trial.study.stop()
                raise optuna.TrialPruned("budget reached")
            try:
                return objective(trial)
            except OverBudget:
                refusal = fits_no_request(budget)
                if refusal is not None:  # raised from the trial: no trial line, the trial not counted
                    trial.set_user_attr("budget", "not run: --max-cost fits no request")  # not counted
                    trial.set_user_attr("error", str(refusal))  # what a continued study's report says of it
                    raise refusal from None
                with budget._lock:
                    budget.admitted -= 1
                trial.set_user_attr("budget", "stopped: budget reached")
                trial.study.stop()
                raise optuna.TrialPruned("budget reached") from None
            finally:
                budget.settle(None)

    return guarded


def continue_line(config: Any, *args: str) -> str:
    """``courtroom study ...`` that continues the study of ``config``: its whole spec, data included, as flags."""
    from courtroom.spec import Experiment

    if config.spec:
        spec = Experiment.from_dict(config.spec)
    else:  # a study run from a bare StudyConfig: what it names
        models = list(getattr(config, "models", None) or [])
        spec = Experiment.build("study", data=getattr(config, "data", "auto"))
        if models:
            spec = spec.updated(lm=models)
    spec.command = "study"
    if not spec.design.frameworks and getattr(config, "frameworks", None):
        spec.design.frameworks = list(config.frameworks)  # a study across designs
    if not spec.design.frameworks and not spec.design.framework:
        spec.design.framework = config.framework
    if not spec.data.dataset and not spec.data.task:
        spec.data.task = config.task
    head = [spec.design.framework] if spec.design.framework and not spec.design.frameworks else []
    tail = [
        "--study-name",
        config.name,
        *args,
        *(["--storage", without_password(config.storage)] if config.storage else []),
    ]
    if spec.output.export_best:
        tail += ["--export-best", spec.output.export_best]  # the continued study writes what this one would have
    return spec.command_line(*head, *tail, identity=True)


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


def fits_no_request(budget: Budget) -> ConfigError | None:
    """The refusal of a ``--max-cost`` that refused the first request of the first trial, nothing sent.

    Without ``--max-tokens`` a trial's dollars are unknown, so :func:`fits_none` cannot decide
    before the study; the first request's own reservation (its prompt at its price, no answer
    yet: the least any request costs) decides before it is sent. Such a budget fits no trial:
    a bad input (exit 2), as with ``--max-tokens``, not a budget reached (exit 3).
    """
    if budget.refused_cost is None or budget.spent_calls or budget.admitted != 1:
        return None
    return ConfigError(
        f"a trial's first request alone costs ${budget.refused_cost:.4f} (its prompt at its model's price); "
        f"--max-cost {budget.max_cost:g} fits none, nothing was sent: raise it above {budget.refused_cost:.4f}"
    )


def stopped_study(budget: Budget, config: Any, done: int) -> BudgetExhausted:
    """The one-line outcome of a study stopped at its budget."""
    left = max(0, config.trials - done)
    resume = with_flags(continue_line(config, "--trials", str(config.trials)))  # --trials: what the study holds
    line = (
        f"budget reached ({budget.limit_text()}): spent {budget.spent_text()}; {left} trial(s) not started; "
        f"continue with: {resume}"
    )
    return BudgetExhausted(line, budget, left, resume)
