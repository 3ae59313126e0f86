"""How many LM requests may a racing study still send? ``--race-calls N``: a cap on the whole study.

``--race-calls N`` is the requests the study's trials and the race's extension rounds
(:mod:`courtroom.optimize.study.extend`) may send together, counting what earlier sessions and
other workers sent. It is a :class:`~courtroom.cost.budget.Budget` of requests whose limit is
N less what the study recorded before this process's trials (:meth:`RaceCap.refresh`), and:

* every request of this process's trials and rounds is reserved before it is sent
  (:meth:`~courtroom.cost.budget.Budget.counting`): a request that would pass the cap is refused,
  so one process never takes the study past N (a cache hit costs nothing and is never refused);
* a trial starts only if its first block of dev cases fits, at the space's dearest point, beside
  what is sent and what the trials in flight may still send (:func:`block_requests`); otherwise
  the study starts no more trials;
* a trial cut by a refused request ends pruned, marked ``budget`` (it does not count against
  ``--trials``, as a trial cut by ``--max-calls`` does not), with the requests it sent recorded,
  and the study starts no more trials.

Several processes on one storage: each subtracts what the others recorded when it starts a trial,
so together they may pass N by what the others' trials in flight send before they record it.
Where the cap cannot act it is refused before anything is written or sent
(:func:`courtroom.spec.race_calls_conflict`, :func:`check_fits`).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from courtroom.cost.budget import Budget
from courtroom.errors import ConfigError

TAG = "race_cap"
"""Trial user attribute: the :class:`RaceCap` that counted the trial's requests live."""


class RaceCap(Budget):
    """``--race-calls``: a :class:`Budget` of requests whose limit follows what the study recorded."""

    def __init__(self, limit: int, unit: int) -> None:  # noqa: D107
        super().__init__(max_calls=limit)
        self.limit = limit
        """``--race-calls``: the study's requests, all sessions and workers together."""
        self.tag = uuid.uuid4().hex
        self.bound(unit, None)

    def refresh(self, study: Any) -> None:
        """Subtract from the limit what the study recorded that this cap did not count itself."""
        from courtroom.optimize.study.extend import SENT

        trials = study.get_trials(deepcopy=False)
        others = sum(int(t.user_attrs.get("sent", 0)) for t in trials if t.user_attrs.get(TAG) != self.tag)
        with self._lock:
            self.max_calls = max(0, self.limit - others - int(study.user_attrs.get(SENT, 0)))

    def left(self) -> int:
        """Requests this process may still send."""
        with self._lock:
            return max(0, int(self.max_calls or 0) - self.spent_calls)

    def limit_text(self) -> str:  # noqa: D102
        return f"--race-calls {self.limit}"


def block_requests(est: Any, block: int) -> int:
    """The most requests a trial sends up to the end of its first ``block`` dev cases, by the dry run ``est``.

    ``est`` is one trial at the space's dearest point: its training (and compile) calls and
    ``block`` of its cases at the most calls a case can take.
    """
    per_case = est.max_calls_per_example or -(-(est.calls - est.prepare_calls) // max(1, est.examples))
    return max(1, int(est.calls - max(0, est.examples - block) * per_case))


def check_fits(race_calls: int, need: int, block: int) -> None:
    """Refuse, before anything is written or sent, a cap below one block's requests (it could race nothing)."""
    if race_calls < need:
        raise ConfigError(
            f"--race-calls {race_calls} is below one block's requests: a trial's first {block} dev case(s) may send "
            f"up to {need} (the dry run at the space's dearest point); give at least {need}, or lower --dev-limit"
        )


def checked(config: Any, budget: Any = None, estimate: Any = None) -> int | None:
    """One block's requests (the unit a trial is admitted by) under ``config.race_calls``; None without it.

    Refuses, before anything is written or sent, a cap that cannot act: with ``budget``
    (``--max-calls``/``--max-cost``) or where nothing races (:func:`courtroom.spec.pruning_conflict`),
    or below one block's requests (:func:`check_fits`, by the dry run of one trial at the space's
    dearest point: ``estimate(config)``, by default :func:`trial_estimate`; a design study passes
    its own, so this module imports no study pipeline).
    """
    from courtroom.optimize.study._trials import block_size
    from courtroom.spec import pruning_conflict

    race_calls = getattr(config, "race_calls", None)
    limited = budget is not None and getattr(budget, "active", True)
    why = pruning_conflict(
        prune=config.prune, pruner=getattr(config, "pruner", "race"), objective=config.objective,
        race_calls=race_calls, budget=budget.limit_text() if limited else None,
    )  # fmt: skip
    if why:
        raise ConfigError(why)
    if race_calls is None:
        return None
    block = block_size(config, config.dev)
    need = block_requests((estimate or trial_estimate)(config), block)
    check_fits(race_calls, need, block)
    return need


def race_cap(config: Any, study: Any, need: int | None) -> RaceCap | None:
    """The cap of ``config.race_calls`` on this process's trials and rounds (None without one)."""
    if need is None:
        return None
    cap = RaceCap(int(config.race_calls), need)
    cap.refresh(study)
    return cap


def capped_objective(objective: Any, cap: RaceCap) -> Any:
    """An Optuna objective whose trial starts only if its first block fits the cap, each request reserved.

    A trial refused, or cut by a refused request, ends pruned with the user attribute ``budget``
    (not counted against ``--trials``; the study starts no more trials) and its requests recorded.
    """
    import optuna

    from courtroom.cost.budget import _unit
    from courtroom.models._requests import OverBudget

    def capped(trial: Any) -> Any:
        cap.refresh(trial.study)
        trial.set_user_attr(TAG, cap.tag)
        with cap.counting():
            if not cap.admit():
                trial.set_user_attr("budget", f"not run: {cap.limit_text()} reached")
                trial.study.stop()
                raise optuna.TrialPruned(f"{cap.limit_text()} reached")
            unit = _unit.get()
            try:
                return objective(trial)
            except OverBudget:
                sent = unit.calls if unit is not None else 0
                trial.set_user_attr("sent", sent)
                trial.set_user_attr("budget", f"stopped: {cap.limit_text()} reached")
                trial.study.stop()
                raise optuna.TrialPruned(f"{cap.limit_text()} reached after {sent} request(s)") from None
            finally:
                cap.settle(None)

    return capped


def say_if_reached(cap: RaceCap | None, study: Any, config: Any) -> None:
    """One line when the cap stopped the trials: how many the study holds, and how to run the rest."""
    if cap is None or not cap.stopped:
        return
    from courtroom.optimize.study._attrs import ran

    logging.getLogger(__name__).warning(
        "%s reached after %d of %d trial(s): the set is chosen among those; a larger --race-calls "
        "continues the study",
        cap.limit_text(), ran(study), config.trials,
    )  # fmt: skip


def trial_estimate(config: Any) -> Any:
    """One trial of a single-framework study at the space's dearest point (the dry run; nothing sent)."""
    from courtroom.cost.dry_run import estimate_study
    from courtroom.cost.study_budget import study_run_config
    from courtroom.optimize.study.spaces import build_space

    space = build_space(
        config.framework, overrides=config.space, models=config.models, temperatures=config.search_temperature
    )
    return estimate_study(study_run_config(config), space, 1)
