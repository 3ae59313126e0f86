"""Racing a study's trials on shared dev cases: a configuration clearly worse than the incumbent stops.

Every trial scores the same dev cases in the same order, block by block (``StudyConfig.chunks``
blocks), and records what it got right case by case (user attribute :data:`OUTCOMES`: ``1`` right,
``0`` wrong or failed). After each block the trial is paired, on the cases both have seen, with
the *incumbent*: the completed configuration with the best dev accuracy so far. The paired test
is the exact one-sided McNemar test (a binomial test on the discordant cases: those one of the
two got right and the other wrong). The trial stops when the test says it is worse at
``LEVEL / (trials x looks)``: the study's level (:data:`LEVEL`) split over its trials and the looks
each gets, so a study stops any configuration as good as the incumbent in at most ``LEVEL`` of
studies, however many trials and blocks it runs (Bonferroni). A close configuration is not
stopped: it gets every dev case; a clearly worse one stops after a block or two.

A stopped configuration that the sampler draws again continues (:func:`floor`): the new trial
reads its earlier cases from the cache (nothing sent) and may not stop before it has seen one
block more than last time, so a configuration stopped by bad luck on its first cases can still
reach a full evaluation, as the study's budget allows.

:class:`RacePruner` is Optuna's pruner interface to the same test (a single-objective study);
a study with a cost objective, which Optuna does not let report partial values, asks :func:`verdict`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import optuna

OUTCOMES = "outcomes"
"""User attribute: the trial's dev cases in order, ``1`` right and ``0`` wrong (a failed case is wrong)."""
FLOOR = "race_floor"
"""User attribute: dev cases a continued configuration sees before the race may stop it."""
CONTINUES = "continues"
"""User attribute: the number of the stopped trial whose configuration this trial continues."""
LOOKS = "race_looks"
"""User attribute: how many times the race looks at the trial (blocks before the last)."""
LEVEL = 0.05
"""The race's level: a study stops a configuration as good as the incumbent in at most this share of studies."""


def level(trials: int) -> float:
    """One configuration's share of :data:`LEVEL`: split over the study's ``trials``, as each may be raced."""
    return LEVEL / max(1, trials)


def outcomes(results: Sequence[Any]) -> str:
    """Each result right (``1``) or not (``0``; under ``--metric``: its value below 0.5), in order."""
    from courtroom.eval.metrics import right

    return "".join("1" if right(r) else "0" for r in results)


def accuracy(marks: str) -> float:
    """The share of ``1`` in ``marks``."""
    return marks.count("1") / len(marks) if marks else 0.0


def one_sided_p(losses: int, wins: int) -> float:
    """P(at least ``losses`` of ``losses + wins`` discordant cases go against, if each side is as likely).

    The exact McNemar test of "worse" (a binomial test at 1/2 on the discordant cases); 1.0 with none.
    """
    n = losses + wins
    if n == 0 or losses <= wins:
        return 1.0
    return min(1.0, sum(math.comb(n, k) for k in range(losses, n + 1)) / 2**n)


def discordant(mine: str, theirs: str) -> tuple[int, int]:
    """(cases only ``theirs`` got right, cases only ``mine`` got right) on the cases both saw."""
    n = min(len(mine), len(theirs))
    losses = sum(1 for a, b in zip(mine[:n], theirs[:n], strict=True) if a == "0" and b == "1")
    wins = sum(1 for a, b in zip(mine[:n], theirs[:n], strict=True) if a == "1" and b == "0")
    return losses, wins


def full_trials(study: Any, exclude: int | None = None) -> list[Any]:
    """Completed trials that ran (not repeats) with a case-by-case record of every dev case."""
    from optuna.trial import TrialState

    from courtroom.optimize.study._attrs import DUPLICATE

    done = [
        t
        for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        if t.number != exclude and DUPLICATE not in t.user_attrs and t.user_attrs.get(OUTCOMES)
    ]
    if not done:
        return []
    longest = max(len(t.user_attrs[OUTCOMES]) for t in done)
    return [t for t in done if len(t.user_attrs[OUTCOMES]) == longest]


def cost_of(trial: Any) -> float:
    """A trial's cost per case: in its study's unit (a study across designs), else LM calls per case."""
    value = trial.user_attrs.get("cost_per_example", trial.user_attrs.get("calls_per_example"))
    return float(value) if value is not None else math.inf


def incumbent(study: Any, exclude: int | None = None) -> Any | None:
    """The completed configuration with the best dev accuracy (a tie: the earlier)."""
    done = full_trials(study, exclude)
    if not done:
        return None
    return max(done, key=lambda t: (accuracy(t.user_attrs[OUTCOMES]), -t.number))


@dataclass(frozen=True)
class Verdict:
    """One look of the race: this trial against the incumbent on the cases both saw."""

    against: int
    """The incumbent's trial number."""
    cases: int
    losses: int
    """Cases the incumbent got right and this trial wrong."""
    wins: int
    p: float
    """One-sided exact McNemar p-value of "this trial is worse"."""
    stop: bool
    alpha: float = LEVEL
    """The level ``p`` was held to (the study's level over its trials and the trial's looks)."""

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"against": self.against, "cases": self.cases, "losses": self.losses, "wins": self.wins,
                "p": round(self.p, 6), "stop": self.stop, "alpha": self.alpha}  # fmt: skip


def verdict(study: Any, number: int, marks: str, looks: int, level: float = LEVEL, floor: int = 0) -> Verdict | None:
    """The race's decision for trial ``number`` having seen ``marks``; None without an incumbent.

    It stops when the paired test rejects "as good as the incumbent" at ``level / looks``, and
    never before ``floor`` cases.
    """
    best = incumbent(study, exclude=number)
    if best is None or not marks:
        return None
    losses, wins = discordant(marks, best.user_attrs[OUTCOMES])
    p = one_sided_p(losses, wins)
    alpha = level / max(1, looks)
    stop = len(marks) >= floor and p < alpha
    return Verdict(best.number, min(len(marks), len(best.user_attrs[OUTCOMES])), losses, wins, p, stop, alpha)


def stop_stands(study: Any, trial: Any) -> bool:
    """Whether the race's stop of ``trial`` still holds: its configuration is not worth continuing.

    It does when the trial, on the cases it saw, is still worse than today's incumbent at the
    level it was stopped at (the incumbent may have changed since). Not a race stop (the median
    pruner's, a budget's, a Ctrl-C's): False.
    """
    said = trial.user_attrs.get("race") or {}
    attrs = trial.user_attrs
    if not said.get("stop") or "budget" in attrs or attrs.get("interrupted"):
        return False
    if "alpha" not in said:  # recorded before the level was: the stop as it was decided
        return True
    now = verdict(study, trial.number, str(attrs.get(OUTCOMES, "")), 1, float(said["alpha"]))
    return now is None or now.stop


def floor(stopped: Sequence[Any], block: int) -> int:
    """Cases a configuration stopped in ``stopped`` trials sees before the race may stop it again."""
    seen = max((int(t.user_attrs.get("examples", 0)) for t in stopped), default=0)
    return seen + block


class RacePruner(optuna.pruners.BasePruner):
    """Optuna's pruner interface to the race: prune a trial the paired test finds worse than the incumbent.

    The trial reports its running accuracy as Optuna expects; the decision reads its case-by-case
    record (:data:`OUTCOMES`), written before it reports.
    """

    def __init__(self, looks: int, level: float = LEVEL) -> None:  # noqa: D107
        self.looks = looks
        self.level = level

    def prune(self, study: Any, trial: Any) -> bool:  # noqa: D102
        marks = str(trial.user_attrs.get(OUTCOMES, ""))
        looks = int(trial.user_attrs.get(LOOKS, self.looks))
        said = verdict(study, trial.number, marks, looks, self.level, int(trial.user_attrs.get(FLOOR, 0)))
        return bool(said and said.stop)


# The race's extension (:mod:`.extend`) keeps longer records; what reads a record reads them here.
EXTENDED = "race_extended"
"""Study user attribute: trial number (as text) -> its dev record over ``--dev-limit`` and the reserve cases."""
SENT = "race_extended_sent"
"""Study user attribute: LM requests the extension rounds sent."""


def marks(study: Any, trial: Any) -> str:
    """The trial's case-by-case dev record: extended where the race extended it, else its own."""
    record = (study.user_attrs.get(EXTENDED) or {}).get(str(trial.number))
    return str(record if record else trial.user_attrs.get(OUTCOMES, ""))
