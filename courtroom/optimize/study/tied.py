"""The configurations a study's dev data cannot separate from the best, and the one it exports.

After a study, each completed configuration with a full case-by-case dev record
(:data:`~courtroom.optimize.study.race.OUTCOMES`) is paired with the best one (the highest dev
accuracy; a tie: the trial that reached it first, as Optuna's best trial) on the same dev
cases, and with every other configuration: the exact one-sided McNemar test asks of each ordered
pair whether the first is worse, and Holm's step-down correction over all the pairs holds the
family-wise error at :data:`LEVEL` (the best is picked by the same data, so a family of the
comparisons with the best alone would find a difference too often). A configuration the corrected
tests find worse than none is *tied with the best*: the dev data cannot tell them apart. A
configuration the race stopped was found worse on its cases, and is not in the set.

The exported configuration (``--export-best``, and the one scored once on the test split) is
the best, or with ``--prefer cheapest`` (the default with ``--cost-objective``) the cheapest of
the tied set: the same accuracy as far as the data can tell, at its cost per case.

Studies whose trials hold no case-by-case record (made before it was kept, or optimising macro-F1)
have no set: they export their best trial as before.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom.optimize.study.race import accuracy, cost_of, discordant, full_trials, marks, one_sided_p

LEVEL = 0.05
"""Family-wise level of the comparisons with the best (Holm)."""
PREFER = ("best", "cheapest")
PREFER_ATTR = "prefer"
"""Study user attribute: which member of the tied set the study exports (``best`` or ``cheapest``)."""


@dataclass(frozen=True)
class Member:
    """One configuration beside the best: its dev accuracy, cost per case and the corrected test."""

    number: int
    accuracy: float
    cost: float
    unit: str
    p: float
    """One-sided exact McNemar p-value of "worse than the best" (1.0 for the best itself)."""
    p_holm: float
    """The smallest Holm-corrected p-value of "worse than" another configuration (every ordered pair)."""
    tied: bool
    config: dict[str, Any] = field(default_factory=dict)
    cases: int = 0
    """Dev cases its record holds (more than ``--dev-limit`` where the race extended it, :mod:`.extend`)."""

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"trial": self.number, "accuracy": round(self.accuracy, 4), "cost_per_case": round(self.cost, 6),
                "cost_unit": self.unit, "p": round(self.p, 6), "p_holm": round(self.p_holm, 6), "tied": self.tied,
                "config": self.config, "dev_cases": self.cases}  # fmt: skip


@dataclass(frozen=True)
class TiedSet:
    """The best configuration, the others beside it, and which are tied with it."""

    best: int
    cases: int
    members: list[Member]
    level: float = LEVEL

    @property
    def tied(self) -> list[Member]:
        """The set: the best and every configuration not found worse, best first."""
        return [m for m in self.members if m.tied]

    def cheapest(self) -> Member:
        """The cheapest member of the set (a tie in cost: the more accurate, then the earlier)."""
        return min(self.tied, key=lambda m: (m.cost, -m.accuracy, m.number))

    def pick(self, prefer: str) -> Member:
        """The member exported under ``prefer`` (``best`` or ``cheapest``)."""
        return self.cheapest() if prefer == "cheapest" else self.tied[0]

    def to_dict(self, prefer: str) -> dict[str, Any]:  # noqa: D102
        return {"level": self.level, "test": "exact one-sided McNemar, every ordered pair, Holm-corrected",
                "dev_cases": self.cases, "best": self.best, "prefer": prefer, "exported": self.pick(prefer).number,
                "members": [m.to_dict() for m in self.members]}  # fmt: skip


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (each at most 1, never below an earlier one's)."""
    order = sorted(range(len(pvalues)), key=lambda i: pvalues[i])
    adjusted = [1.0] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(pvalues) - rank) * pvalues[i]))
        adjusted[i] = running
    return adjusted


def tied_set(study: Any, level: float = LEVEL) -> TiedSet | None:
    """The study's tied set; None when no completed trial holds a case-by-case dev record (or it optimises F1)."""
    if (study.user_attrs.get("courtroom") or {}).get("objective", "accuracy") != "accuracy":
        return None
    done = full_trials(study)
    if not done:
        return None
    record = {t.number: marks(study, t) for t in done}  # extended where the race gave the close ones more cases
    # The best: the highest accuracy among the longest records (a tie: the first to reach it).
    best = max(done, key=lambda t: (len(record[t.number]), accuracy(record[t.number]), -t.number))
    # Every ordered pair (is a worse than b?, on the cases both saw), Holm over them all: the best is
    # picked by the same data, so testing the others against it alone would find a difference too often.
    pairs = [(a, b) for a in done for b in done if a.number != b.number]
    raw = [one_sided_p(*discordant(record[a.number], record[b.number])) for a, b in pairs]
    adjusted = holm(raw)
    worst: dict[int, float] = {}  # trial -> its strongest corrected evidence of being worse than another
    for (a, _), p_holm in zip(pairs, adjusted, strict=True):
        worst[a.number] = min(worst.get(a.number, 1.0), p_holm)

    def member(t: Any) -> Member:
        unit = str(t.user_attrs.get("cost_unit", "calls"))
        config = dict(t.user_attrs.get("config", t.params))
        p = 1.0 if t is best else one_sided_p(*discordant(record[t.number], record[best.number]))
        p_holm = worst.get(t.number, 1.0)
        mine = record[t.number]
        return Member(t.number, accuracy(mine), cost_of(t), unit, p, p_holm, p_holm >= level, config, len(mine))

    members = [member(best)]
    members += sorted(
        (member(t) for t in done if t is not best),
        key=lambda m: (not m.tied, -m.cases, -m.accuracy, m.cost, m.number),
    )
    return TiedSet(best.number, len(record[best.number]), members, level)


def preference(study: Any) -> str:
    """What the study exports from its tied set: ``prefer`` as recorded, else cheapest with a cost objective."""
    saved = study.user_attrs.get(PREFER_ATTR)
    if saved in PREFER:
        return str(saved)
    return "cheapest" if len(study.directions) > 1 else "best"


def exported(study: Any) -> Any | None:
    """The trial the study exports and tests (see the module docstring); None when it has no tied set."""
    found = tied_set(study)
    if found is None:
        return None
    number = found.pick(preference(study)).number
    return next(t for t in study.get_trials(deepcopy=False) if t.number == number)
