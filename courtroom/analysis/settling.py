"""Where a settle design should settle, priced from one run that tried every case (SPEC §13).

A settle design run with ``always_try`` hears its panel *and* holds the trial on every case, so
its records keep both answers a threshold chooses between: the panel's votes and the trial's
verdict. A design with a panel of ``k`` hears the first ``k`` of those votes (member ``i`` is
rollout ``i`` in both); at threshold ``t`` it settles the cases whose ``k`` votes agree at ``t``
or more, with their majority (a tie goes to the first vote, as the design breaks it), and takes
the trial's verdict on the others. It pays ``k`` calls on a settled case and ``k`` plus the
trial's calls on a tried one. So one run on dev cases prices every (panel size, threshold)
design, and :func:`choose` picks the most accurate within a calls budget, to be scored afresh on
test cases, as the design study scores its choice on the test split.

The trial's prompts do not depend on the panel unless it is shown the panel's answers
(``show_panel``), so on a seeded fake called serially the replay is exactly what a run of that
design gives; on real models it is an estimate with the sampling error of the run it replays.
A run with the ``confidence`` signal also keeps each member's stated probabilities
(``panel_p``), so it replays both signals: a panel of ``k`` settles at ``t`` when the top
probability of its first ``k`` members' mean is at or above ``t``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from courtroom.programs.settle import panel_agreement

SIGNALS = ("votes", "confidence")


@dataclass(frozen=True)
class Design:
    """One settle design replayed on a run's cases."""

    panel_size: int
    threshold: float
    """Agreement (vote share, or top mean probability) at or above which a case is settled."""
    accuracy: float
    calls: float
    """Mean calls per case."""
    calls_se: float
    """Standard error of that mean (how far another set of cases may land from it)."""
    tried: float
    """Share of the cases tried."""
    right: tuple[bool, ...]
    """Per case, in the run's order: whether the design's verdict is the gold label."""
    signal: str = "votes"
    """What the agreement is: ``votes`` (vote share) or ``confidence`` (stated probabilities)."""


@dataclass(frozen=True)
class _Case:
    gold: str
    votes: tuple[str, ...]
    verdict: str | None
    trial_calls: float
    dists: tuple[Mapping[str, float], ...] = ()


def _cases(rows: Iterable[Any]) -> list[_Case]:
    out = []
    for row in rows:
        row = row if isinstance(row, Mapping) else row.to_dict()
        if row.get("error"):
            raise ValueError(f"example {row.get('id')} failed ({row['error']}): run it again before replaying")
        fields = row.get("fields") or {}
        votes = tuple(str(v) for v in fields.get("panel_votes") or [])
        if fields.get("decided_by") != "trial" or not votes:
            raise ValueError("replay needs the records of a settle run with always_try (every case tried)")
        calls = row.get("calls", (row.get("usage") or {}).get("calls"))
        if calls is None:
            raise ValueError("replay needs each record's calls (its 'calls' or usage['calls'])")
        dists = tuple(dict(d) for d in fields.get("panel_p") or [])
        out.append(_Case(str(row.get("gold")), votes, row.get("prediction"), float(calls) - len(votes), dists))
    if not out:
        raise ValueError("replay needs at least one record")
    return out


def _agreement(case: _Case, labels: Sequence[str], k: int, signal: str = "votes") -> tuple[str, float]:
    """The label and agreement of the first ``k`` members, as the design computes them."""
    return panel_agreement(case.votes[:k], case.dists[:k] if signal == "confidence" else (), labels)


class _Panel:
    """Per case, for a panel of ``k``: its agreement, and whether its label and the trial's verdict are right.

    Arrays, so each threshold is replayed over every case at once: a run's distinct agreements
    are as many as its cases with the confidence signal, and :func:`designs` replays each.
    """

    def __init__(
        self,
        cases: Sequence[_Case],
        labels: Sequence[str],
        k: int,
        signal: str,
        agreements: Sequence[tuple[str, float]] | None = None,
    ) -> None:
        agreements = agreements or [_agreement(case, labels, k, signal) for case in cases]
        self.k, self.signal = k, signal
        self.shares = np.array([share for _, share in agreements], dtype=float)
        self.panel_right = np.array([label == c.gold for c, (label, _) in zip(cases, agreements, strict=True)])
        self.trial_right = np.array([c.verdict == c.gold for c in cases])
        self.trial_calls = np.array([c.trial_calls for c in cases], dtype=float)

    def replay(self, threshold: float) -> Design:
        settled = self.shares >= threshold
        right = np.where(settled, self.panel_right, self.trial_right)
        calls = np.where(settled, 0.0, self.trial_calls) + self.k
        n = len(calls)
        mean = float(calls.mean())
        spread = math.sqrt(float(((calls - mean) ** 2).sum()) / (n - 1) / n) if n > 1 else 0.0
        tried = float(n - settled.sum()) / n
        return Design(self.k, threshold, float(right.mean()), mean, spread, tried, tuple(right.tolist()), self.signal)


def _replay(cases: Sequence[_Case], labels: Sequence[str], k: int, threshold: float, signal: str) -> Design:
    """The design on ``cases``."""
    return _Panel(cases, labels, k, signal).replay(threshold)


def _signals(cases: Sequence[_Case], signal: str | None) -> tuple[str, ...]:
    """The signals these records replay (``confidence`` needs every member's probabilities)."""
    has = ("votes", "confidence") if all(len(c.dists) == len(c.votes) for c in cases) else ("votes",)
    if signal is None:
        return has
    if signal not in SIGNALS:
        raise ValueError(f"unknown signal {signal!r}; use one of {', '.join(SIGNALS)}")
    if signal not in has:
        raise ValueError("replaying the confidence signal needs a run with signal=confidence (its panel_p)")
    return (signal,)


def replay(
    rows: Iterable[Any], labels: Sequence[str], panel_size: int, threshold: float, signal: str = "votes"
) -> Design:
    """What settle(``panel_size``, ``threshold``, ``signal``) gives on the cases of an ``always_try`` run."""
    cases = _cases(rows)
    (signal,) = _signals(cases, signal)
    if not 1 <= panel_size <= min(len(c.votes) for c in cases):
        raise ValueError(f"the run's panel has {min(len(c.votes) for c in cases)} votes; cannot replay {panel_size}")
    return _replay(cases, labels, panel_size, threshold, signal)


def designs(rows: Iterable[Any], labels: Sequence[str], signal: str | None = None) -> list[Design]:
    """Every distinct design the run can replay: each signal, each panel size, each agreement seen.

    ``signal=None``: every signal the records keep; panel sizes up to the run's own.
    """
    cases = _cases(rows)
    out = []
    for sig in _signals(cases, signal):
        for k in range(1, min(len(c.votes) for c in cases) + 1):
            agreements = [_agreement(c, labels, k, sig) for c in cases]
            panel = _Panel(cases, labels, k, sig, agreements)
            out += [panel.replay(t) for t in sorted({a[1] for a in agreements})]
    return out


def choose(
    rows: Iterable[Any],
    labels: Sequence[str],
    max_calls: float | None = None,
    signal: str | None = None,
    margin: float = 0.0,
    new_cases: int | None = None,
) -> Design | None:
    """The most accurate design within ``max_calls`` per case (ties: fewer calls); None if none fits.

    ``margin`` standard errors of each design's calls are added before the budget is compared: a
    design that just fits on these cases spends more on others about half the time. The error is
    that of these cases' mean, or with ``new_cases`` (the number of cases the design will then
    answer) that of the difference between the two means, which is what the budget must survive:
    with as many new cases as these, sqrt(2) times larger. ``margin=1.645`` then keeps the new
    cases' calls within the budget with probability about 0.95 for a design chosen alone (choosing
    among many spends some of that: see ``bench/settle.py``).
    """
    widen = 1.0
    if new_cases is not None:
        if new_cases < 1:
            raise ValueError(f"new_cases must be >= 1, got {new_cases}")
        cases = rows if isinstance(rows, Sequence) else list(rows)
        rows, widen = cases, math.sqrt(1 + len(cases) / new_cases)
    fits = [
        d
        for d in designs(rows, labels, signal)
        if max_calls is None or d.calls + margin * widen * d.calls_se <= max_calls + 1e-9
    ]
    return max(fits, key=lambda d: (d.accuracy, -d.calls), default=None)
