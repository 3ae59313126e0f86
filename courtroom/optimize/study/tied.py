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

Each member reads on its own: its configuration (its design in a study across designs, and the
searched values), the dev cases its record holds (more than ``--dev-limit`` where the race extended
it), its accuracy on them (the one figure every output shows for the trial: :func:`dev_score`), its
cost per case, the raw p of "worse than the best" and the Holm-corrected one. The configurations the
race stopped are listed beside it (:class:`Stopped`) with their p against the best on the cases they
saw. Two trials whose configurations ask the same models the same things (a mixed panel that asked
only its first model, :mod:`._asked`, is that model) are one configuration: counted once, the
later named on the earlier (``same``).

Studies whose trials hold no case-by-case record (made before it was kept, or optimising macro-F1)
have no set: they export their best trial as before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom.optimize.study._asked import effective
from courtroom.optimize.study.race import OUTCOMES, accuracy, cost_of, discordant, full_trials, marks, one_sided_p

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
    design: str | None = None
    """Its design, in a study across designs (``config`` holds that design's own values)."""
    same: tuple[int, ...] = ()
    """Later trials of the same configuration (e.g. a mixed panel that asked only this model): counted here once."""

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"trial": self.number, **({"design": self.design} if self.design else {}),
                "accuracy": round(self.accuracy, 4), "dev_cases": self.cases, "cost_per_case": round(self.cost, 6),
                "cost_unit": self.unit, "p": round(self.p, 6), "p_holm": round(self.p_holm, 6), "tied": self.tied,
                "config": self.config, **({"same": list(self.same)} if self.same else {})}  # fmt: skip


@dataclass(frozen=True)
class Stopped:
    """A configuration the race stopped: worse than its incumbent on the cases it saw, so not in the set."""

    number: int
    accuracy: float
    cases: int
    p: float
    """One-sided exact McNemar p of "worse than the best", on the cases both saw."""
    race: dict[str, Any]
    """The race's own decision (:class:`~courtroom.optimize.study.race.Verdict`: its incumbent, cases and p)."""
    cost: float
    unit: str
    config: dict[str, Any] = field(default_factory=dict)
    design: str | None = None

    def to_dict(self) -> dict[str, Any]:  # noqa: D102
        return {"trial": self.number, **({"design": self.design} if self.design else {}),
                "accuracy": round(self.accuracy, 4), "dev_cases": self.cases, "cost_per_case": round(self.cost, 6),
                "cost_unit": self.unit, "p": round(self.p, 6), "race": self.race, "config": self.config}  # fmt: skip


@dataclass(frozen=True)
class TiedSet:
    """The best configuration, the others beside it, and which are tied with it."""

    best: int
    cases: int
    """Dev cases the best's record holds (each pair is tested on the cases both saw: :attr:`Member.cases`)."""
    members: list[Member]
    level: float = LEVEL
    stopped: list[Stopped] = field(default_factory=list)
    """The configurations the race stopped (no later trial continued them), not in the set."""

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
        return {"level": self.level,
                "test": "exact one-sided McNemar on the cases each pair saw, every ordered pair, Holm-corrected",
                "dev_cases": self.cases, "best": self.best, "prefer": prefer, "exported": self.pick(prefer).number,
                "members": [m.to_dict() for m in self.members],
                "stopped": [s.to_dict() for s in self.stopped]}  # fmt: skip


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
    done, same = _once(done)
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
        p = 1.0 if t is best else one_sided_p(*discordant(record[t.number], record[best.number]))
        p_holm = worst.get(t.number, 1.0)
        mine = record[t.number]
        return Member(t.number, accuracy(mine), cost_of(t), unit, p, p_holm, p_holm >= level, _config(t), len(mine),
                      t.user_attrs.get("design"), tuple(same.get(t.number, ())))  # fmt: skip

    members = [member(best)]
    members += sorted(
        (member(t) for t in done if t is not best),
        key=lambda m: (not m.tied, -m.cases, -m.accuracy, m.cost, m.number),
    )
    stopped = [
        Stopped(
            t.number,
            accuracy(mine),
            len(mine),
            one_sided_p(*discordant(mine, record[best.number])),
            dict(t.user_attrs.get("race") or {}),
            cost_of(t),
            str(t.user_attrs.get("cost_unit", "calls")),
            _config(t),
            t.user_attrs.get("design"),
        )  # fmt: skip
        for t in stopped_trials(study)
        for mine in [str(t.user_attrs.get(OUTCOMES, ""))]
    ]
    stopped.sort(key=lambda s: (-s.cases, -s.accuracy, s.number))
    return TiedSet(best.number, len(record[best.number]), members, level, stopped)


def _config(trial: Any) -> dict[str, Any]:
    return dict(trial.user_attrs.get("config", trial.params))


def _once(done: list[Any]) -> tuple[list[Any], dict[int, list[int]]]:
    """``done`` with each configuration once, and each kept trial -> the other trials of its configuration.

    Two trials are one configuration when their designs and effective configurations
    (:func:`~courtroom.optimize.study._asked.effective`) are equal. The one kept names its values as
    they ran (the plain model rather than the panel that asked only it), else it is the earliest.
    """
    import json

    groups: dict[str, list[Any]] = {}
    for t in sorted(done, key=lambda t: t.number):
        key = json.dumps([t.user_attrs.get("design"), effective(t)], sort_keys=True, default=str)
        groups.setdefault(key, []).append(t)
    kept, same = [], {}
    for trials in groups.values():
        first = min(trials, key=lambda t: (effective(t) != _config(t), t.number))
        kept.append(first)
        if len(trials) > 1:
            same[first.number] = [t.number for t in trials if t is not first]
    return kept, same


def stopped_trials(study: Any) -> list[Any]:
    """Trials the race stopped whose configuration no later trial continued (repeats and cut-short runs aside)."""
    from optuna.trial import TrialState

    from courtroom.optimize.study.race import CONTINUES

    trials = study.get_trials(deepcopy=False)
    continued = {int(t.user_attrs[CONTINUES]) for t in trials if CONTINUES in t.user_attrs}
    return [
        t
        for t in trials
        if t.state == TrialState.PRUNED and (t.user_attrs.get("race") or {}).get("stop") and t.number not in continued
    ]


def dev_score(study: Any, trial: Any) -> tuple[float, int] | None:
    """(dev accuracy, dev cases) of ``trial`` as its tied set reads it: its extended record where the race extended it.

    None when the trial holds no case-by-case record or the study optimises another objective.
    """
    if (study.user_attrs.get("courtroom") or {}).get("objective", "accuracy") != "accuracy":
        return None
    mine = marks(study, trial)
    return (accuracy(mine), len(mine)) if mine else None


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


def alike(configs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The values all of ``configs`` (two or more) hold alike: said once above a table of them; {} otherwise."""
    if len(configs) < 2:
        return {}
    first, rest = configs[0], configs[1:]
    return {k: v for k, v in first.items() if all(k in c and c[k] == v for c in rest)}


def described(config: Mapping[str, Any], design: str | None = None, said: Mapping[str, Any] | None = None) -> str:
    """``design=jot, model:classifier=a`` (the design first; the values ``said`` once elsewhere left out); ``-``."""
    from courtroom.reporting.formatting import number

    shown = ({"design": design} if design else {}) | dict(config)
    text = ", ".join(f"{k}={number(v)}" for k, v in shown.items() if k not in (said or {}))
    return text or "-"
