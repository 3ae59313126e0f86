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
Only the ``votes`` signal replays: the ``confidence`` signal averages each member's stated
probabilities, which the records keep in the transcript, not beside the votes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from courtroom.programs._common import majority


@dataclass(frozen=True)
class Design:
    """One settle design replayed on a run's cases."""

    panel_size: int
    threshold: float
    """Vote share at or above which a case is settled."""
    accuracy: float
    calls: float
    """Mean calls per case."""
    tried: float
    """Share of the cases tried."""
    right: tuple[bool, ...]
    """Per case, in the run's order: whether the design's verdict is the gold label."""


@dataclass(frozen=True)
class _Case:
    gold: str
    votes: tuple[str, ...]
    verdict: str | None
    trial_calls: float


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
        out.append(_Case(str(row.get("gold")), votes, row.get("prediction"), float(calls) - len(votes)))
    if not out:
        raise ValueError("replay needs at least one record")
    return out


def _agreement(votes: Sequence[str], labels: Sequence[str]) -> tuple[str, float]:
    """The panel's label and its vote share, as the design computes them (rounded to 6 places)."""
    label = majority(votes, labels, prefer=votes[0])
    return label, round(Counter(votes)[label] / len(votes), 6)


def _replay(cases: Sequence[_Case], labels: Sequence[str], k: int, threshold: float) -> Design:
    right, calls, tried = [], 0.0, 0
    for case in cases:
        votes = case.votes[:k]
        label, share = _agreement(votes, labels)
        if share >= threshold:
            right.append(label == case.gold)
            calls += k
        else:
            right.append(case.verdict == case.gold)
            calls += k + case.trial_calls
            tried += 1
    n = len(cases)
    return Design(k, threshold, sum(right) / n, calls / n, tried / n, tuple(right))


def replay(rows: Iterable[Any], labels: Sequence[str], panel_size: int, threshold: float) -> Design:
    """What settle(``panel_size``, ``threshold``) gives on the cases of an ``always_try`` run."""
    cases = _cases(rows)
    if not 1 <= panel_size <= min(len(c.votes) for c in cases):
        raise ValueError(f"the run's panel has {min(len(c.votes) for c in cases)} votes; cannot replay {panel_size}")
    return _replay(cases, labels, panel_size, threshold)


def designs(rows: Iterable[Any], labels: Sequence[str]) -> list[Design]:
    """Every distinct design the run can replay: each panel size up to its own, each vote share seen."""
    cases = _cases(rows)
    out = []
    for k in range(1, min(len(c.votes) for c in cases) + 1):
        shares = sorted({_agreement(c.votes[:k], labels)[1] for c in cases})
        out += [_replay(cases, labels, k, t) for t in shares]
    return out


def choose(rows: Iterable[Any], labels: Sequence[str], max_calls: float | None = None) -> Design | None:
    """The most accurate design within ``max_calls`` per case (ties: fewer calls); None if none fits."""
    fits = [d for d in designs(rows, labels) if max_calls is None or d.calls <= max_calls + 1e-9]
    return max(fits, key=lambda d: (d.accuracy, -d.calls), default=None)
