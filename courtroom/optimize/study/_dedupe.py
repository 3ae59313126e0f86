"""Each configuration of a study runs once: a repeat gets the stored value, one in flight is waited for.

A sampler may propose a configuration the study has already evaluated (TPE and NSGA-II both do,
and on a small space they do it often). Running it again adds nothing: its answers come from the
cache, or, when another worker runs it at this moment, are sent twice. So before a trial runs,
it looks for the same parameters among the study's trials (:func:`claim`), under the storage's
lock so two workers cannot both claim one configuration:

* finished (COMPLETE): the trial returns the stored value and is marked ``duplicate_of``
  (refused by its framework, a PRUNED trial marked ``invalid``: pruned again, marked the same way);
* stopped by the race and still worse than the incumbent at the level it was stopped at
  (:func:`.race.stop_stands`): settled, not worth continuing; the trial is a repeat of it (pruned);
* otherwise stopped early (PRUNED: by the race, no longer clearly worse, or by the median pruner),
  none complete: the trial continues it, with at least one block of dev cases more before it may
  be stopped again (its earlier cases come from the cache);
* running in another worker or thread: the trial waits until that one ends (polling the storage),
  then does one of the above (or, if it failed, runs it itself);
* otherwise the trial claims the configuration (user attribute :data:`KEY`) and runs.

A duplicate does not count against ``--trials`` (:func:`ran` counts the study's trials that ran) and
is left out of the chosen trials and the Pareto front (:func:`distinct`).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from courtroom.optimize.study._attrs import DUPLICATE, KEY, counts, ran

__all__ = ["DUPLICATE", "KEY", "Duplicate", "chosen", "claim", "counts", "ran", "reuse", "run_distinct"]

POLL_SECONDS = 0.2

_local_lock = threading.Lock()


def config_key(params: dict[str, Any]) -> str:
    """The configuration's identity: its parameters as sorted JSON."""
    return json.dumps(params, sort_keys=True, default=str)


class Duplicate(Exception):  # noqa: N818 - an outcome, not a failure
    """The configuration was already evaluated by trial ``original``."""

    def __init__(self, original: Any) -> None:
        super().__init__(f"same configuration as trial {original.number}")
        self.original = original


def claim(trial: Any, params: dict[str, Any], storage: str | None, heartbeat: Any = None, block: int = 0) -> None:
    """Claim ``params`` for ``trial``, or raise :class:`Duplicate` naming the trial that evaluated them.

    A trial running the same configuration is waited for (``heartbeat()`` is called while waiting).
    A configuration the race stopped whose stop still stands (:func:`.race.stop_stands`) is settled:
    a :class:`Duplicate` of its last trial. Else one stopped early (pruned) and none completed: the
    trial continues it, and may not be stopped before it has seen ``block`` cases more than the
    stopped one (:func:`.race.floor`); one cut short by a stop (Ctrl-C) is simply run again. Either
    way its earlier cases come from the cache.
    """
    from optuna.trial import TrialState

    from courtroom.optimize.study import race

    key = config_key(params)
    study = trial.study
    while True:
        with _local_lock, _claim_lock(storage):
            same = [
                t for t in study.get_trials(deepcopy=False) if t.number != trial.number and t.user_attrs.get(KEY) == key
            ]
            done = [
                t
                for t in same
                if DUPLICATE not in t.user_attrs
                and (t.state == TrialState.COMPLETE or (t.state == TrialState.PRUNED and "invalid" in t.user_attrs))
            ]
            if done:
                raise Duplicate(min(done, key=lambda t: t.number))
            running = [t for t in same if t.state == TrialState.RUNNING]
            stopped = [t for t in same if t.state == TrialState.PRUNED and counts(t)]
            if not running and stopped and race.stop_stands(study, max(stopped, key=lambda t: t.number)):
                raise Duplicate(max(stopped, key=lambda t: t.number))  # settled: not worth continuing
            if not running:
                trial.set_user_attr(KEY, key)
                if stopped:
                    trial.set_user_attr(race.CONTINUES, max(t.number for t in stopped))
                    trial.set_user_attr(race.FLOOR, race.floor(stopped, block))
                return
        _wait(study, running[0], heartbeat)
        from courtroom import _stop

        if _stop.stop_requested():
            import optuna

            trial.set_user_attr("interrupted", True)
            raise optuna.TrialPruned(f"stopped while waiting for trial {running[0].number} (same configuration)")


def _claim_lock(storage: str | None) -> Any:
    """The storage's file lock under its own name (a queued trial runs under the creation lock itself)."""
    from courtroom._lock import FolderLock
    from courtroom.optimize.study import _storage

    lock = _storage.creation_lock(storage)
    if isinstance(lock, FolderLock):
        lock.lock_file = lock.lock_file.with_name(lock.lock_file.name.replace(".create-lock", ".claim-lock"))
    return lock


def _wait(study: Any, other: Any, heartbeat: Any) -> None:
    """Poll the storage until trial ``other`` is no longer running."""
    from optuna.trial import TrialState

    from courtroom import _stop
    from courtroom.optimize.study import _workers

    checked = time.monotonic()
    while study._storage.get_trial(other._trial_id).state == TrialState.RUNNING:
        if _stop.stop_requested():
            return
        if heartbeat is not None:
            heartbeat()
        if time.monotonic() - checked > 10:  # its worker may have died: fail it, and run the configuration here
            _workers.fail_stale_trials(study)
            checked = time.monotonic()
        time.sleep(POLL_SECONDS)


def reuse(trial: Any, original: Any) -> Any:
    """Record ``trial`` as a duplicate of ``original``: its value, or a prune if the framework refused it."""
    import optuna
    from optuna.trial import TrialState

    trial.set_user_attr(DUPLICATE, original.number)
    for name in ("config", "design", "accuracy", "macro_f1", "examples"):
        if name in original.user_attrs:
            trial.set_user_attr(name, original.user_attrs[name])
    if original.state == TrialState.PRUNED:
        why = "is invalid" if "invalid" in original.user_attrs else "the race stopped as worse than the best"
        raise optuna.TrialPruned(f"same configuration as trial {original.number}, which {why}")
    values = list(original.values)
    return values[0] if len(values) == 1 else tuple(values)


def distinct(trials: Iterable[Any]) -> list[Any]:
    """``trials`` without the duplicates (each configuration once)."""
    return [t for t in trials if DUPLICATE not in t.user_attrs]


def chosen(study: Any) -> list[Any]:
    """The trial a study chose, as a list: the one it exports from its tied set (:mod:`.tied`).

    A study without case-by-case dev records (or optimising F1) chooses as before: its best trial,
    or every point of its Pareto front.
    """
    from courtroom.optimize.study.tied import exported

    pick = exported(study)
    if pick is not None:
        return [pick]
    if len(study.directions) > 1:
        return pareto_front(study)
    return best_value(study)


def pareto_front(study: Any) -> list[Any]:
    """The Pareto front of a two-objective study, each configuration once."""
    try:
        return distinct(study.best_trials)
    except ValueError:
        return []


def best_value(study: Any) -> list[Any]:
    """The trial with the best value (a tie: the first that reached it), as a list; [] when none completed."""
    from optuna.study import StudyDirection
    from optuna.trial import TrialState

    done = distinct(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)))
    if not done:
        return []
    sign = 1.0 if study.direction == StudyDirection.MAXIMIZE else -1.0
    return [max(done, key=lambda t: (sign * t.values[0], -t.number))]


def settled(study: Any) -> set[str]:
    """Configurations the study is done with.

    Scored on every dev case, refused by their framework, or stopped by the race and not worth
    continuing: the last trial of the configuration is still worse than the incumbent at the
    level it was stopped at (:func:`.race.stop_stands`).
    """
    from optuna.trial import TrialState

    from courtroom.optimize.study.race import stop_stands

    done = scored(study)
    last: dict[str, Any] = {}  # configuration -> its last trial that counts (a continued one's continuation)
    for t in study.get_trials(deepcopy=False, states=(TrialState.PRUNED,)):
        key = t.user_attrs.get(KEY)
        if key is None or key in done or DUPLICATE in t.user_attrs or not counts(t):
            continue
        if t.number > getattr(last.get(key), "number", -1):
            last[key] = t
    return done | {key for key, t in last.items() if stop_stands(study, t)}


def evaluated(study: Any) -> int:
    """Distinct configurations the study is done with (:func:`settled`)."""
    return len(settled(study))


def configurations(space: Sequence[Any]) -> Iterator[dict[str, Any]]:
    """Every configuration of a (conditional) space of ints and choices, as a trial's drawn parameters."""

    def walk(i: int, drawn: dict[str, Any], shown: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if i == len(space):
            yield shown
            return
        p = space[i]
        if p.off(drawn):
            yield from walk(i + 1, drawn | {p.name: p.otherwise}, shown)
            return
        values = p.choices if p.kind == "cat" else range(int(p.low), int(p.high) + 1)
        for v in values:
            yield from walk(i + 1, drawn | {p.name: v}, shown | {p.name: v})

    yield from walk(0, {}, {})


def space_size(space: Sequence[Any], cap: int = 100_000) -> int | None:
    """How many configurations the (conditional) space holds; None when it has a float range or more than ``cap``."""
    if any(p.kind == "float" for p in space):
        return None
    count = 0
    for _ in configurations(space):
        count += 1
        if count > cap:
            return None
    return count


def enqueue_unseen(study: Any, space: Sequence[Any], seed: int) -> bool:
    """Queue a configuration of the (finite) space no trial has claimed, else one only stopped early.

    False when every configuration has been evaluated on every dev case.
    """
    import random

    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)
    seen = {t.user_attrs[KEY] for t in trials if KEY in t.user_attrs}
    complete = settled(study)
    # A queued trial holds its parameters as Optuna's ``fixed_params`` until it runs (its params are empty).
    waiting = {
        config_key(t.system_attrs.get("fixed_params") or t.params) for t in trials if t.state == TrialState.WAITING
    }
    every = [c for c in configurations(space) if config_key(c) not in waiting]
    left = [c for c in every if config_key(c) not in seen] or [c for c in every if config_key(c) not in complete]
    if not left:
        return False
    # Not skip_if_exists: a stopped configuration has a trial with its parameters, and is queued to continue.
    study.enqueue_trial(random.Random(seed).choice(left))
    return True


def run_distinct(study: Any, rounds: Any, trials: int, space: Sequence[Any]) -> int:
    """Call ``rounds(n, first)`` until the study holds ``trials`` trials that ran; returns how many ran here.

    ``--trials`` counts the study's trials (:func:`ran`), not this command's: a continued study
    runs only what it still owes, and several workers on one storage share the count (each may
    finish the trial it started, so the study can end a trial or two over per extra worker).
    ``rounds(n, first=True)`` runs the queued trials (it may run none), later calls up to ``n``
    sampled trials. It stops early when every configuration of a finite ``space`` is settled
    (:func:`settled`: scored, or stopped by the race and still worse than the best, whatever
    ``trials`` says; one line says so), when three rounds in a row ran nothing new, at a stop
    (Ctrl-C) and when the budget refused a trial.
    """
    import logging

    from courtroom import _stop

    size = space_size(space)
    before = ran(study)
    idle, first = 0, True
    while idle < 3 and not _stop.stop_requested():
        owed = trials - ran(study)
        if owed <= 0 or (size is not None and evaluated(study) >= size):
            break
        refused, held = _refused(study), ran(study)
        rounds(owed, first)
        if _refused(study) > refused:  # the budget stopped the study
            break
        idle = 0 if first or ran(study) > held else idle + 1
        # The sampler keeps proposing what ran: queue a configuration not yet run, if one is still owed
        # (another worker may have run it meanwhile: a queued trial left behind would wait for ever).
        if idle and size is not None and trials - ran(study) > 0:
            idle = 0 if enqueue_unseen(study, space, len(study.trials)) else idle
        first = False
    done = ran(study)
    if done < trials and size is not None and evaluated(study) >= size:
        stopped = size - len(scored(study))
        logging.getLogger(__name__).warning(
            "every configuration of the space is settled (%d scored on every dev case, %d stopped by the race "
            "as worse than the best): the study ends with %d trial(s), not %d",
            size - stopped, stopped, done, trials,
        )  # fmt: skip
    return done - before


def scored(study: Any) -> set[str]:
    """Configurations scored on every dev case, or refused by their framework (not stopped by the race)."""
    from optuna.trial import TrialState

    return {
        t.user_attrs[KEY]
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED))
        if KEY in t.user_attrs
        and DUPLICATE not in t.user_attrs
        and (t.state == TrialState.COMPLETE or "invalid" in t.user_attrs)
    }


def _refused(study: Any) -> int:
    return sum(1 for t in study.get_trials(deepcopy=False) if "budget" in t.user_attrs)
