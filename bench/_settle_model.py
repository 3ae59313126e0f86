"""What the settle bench's difficulty model predicts, and the most any settle design can reach under it.

The model (``bench/settle.py``): cases of a few *kinds* (easy, hard), each with its share of the
cases, the probability ``q`` that one panel answer is right and the probability ``r`` that the
trial's verdict is right; every answer is an independent draw. Binary labels, equally likely.

* :class:`Model` gives a fixed design's expected accuracy and calls (binomial sums) and the
  probability that one seed's cases land within one paired SE of the full trial.
* :func:`bound` is the most accurate any design can be in expectation within a calls budget, when it
  sees nothing but panel answers and, if it holds one, the trial's verdict: after each answer it may
  settle, ask one more panel member, or hold the trial and then decide on everything it heard. The
  design's own choices (panel size, threshold, escalating panels, overruling the verdict) are all
  such policies. It is exact by duality: for every price ``lam`` of a call, dynamic programming over
  the panel's vote counts gives the best ``accuracy - lam * calls``, ``V(lam)``, so no policy (nor a
  random mix of policies) spending at most ``C`` calls per case beats ``V(lam) + lam * C``; the bound
  is the least of these over the prices a bisection tries, and the best single policy found within
  ``C`` is reported beside it.
* :func:`expected_confidence_settle` is the settle design with one panel answer and the
  ``confidence`` signal when the stated confidence is informative (the oracle's ``confidence_auroc``).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

_PHI = NormalDist().cdf


@dataclass(frozen=True)
class Kind:
    """One kind of case: its share, a panel answer's accuracy ``q``, the trial verdict's ``r``."""

    share: float
    q: float
    r: float


def outcomes(k: int, q: float) -> list[tuple[float, float, bool]]:
    """(probability, vote share of the majority, majority right) of a panel of ``k`` answers right w.p. ``q``.

    A tie goes to the first answer (right with probability j/k when j of k are right).
    """
    out = []
    for j in range(k + 1):
        p = math.comb(k, j) * q**j * (1 - q) ** (k - j)
        share = round(max(j, k - j) / k, 6)  # as the design rounds its agreement
        if 2 * j == k:
            out += [(p * j / k, share, True), (p * (k - j) / k, share, False)]
        else:
            out.append((p, share, 2 * j > k))
    return out


def expected_settle(k: int, t: float, q: float, r: float, trial_calls: float) -> tuple[float, float]:
    """(accuracy, calls per case) of settle(k, t) on one kind of case: panel right w.p. q, trial w.p. r."""
    acc = calls = 0.0
    for p, share, right in outcomes(k, q):
        settled = share >= t
        acc += p * (right if settled else r)
        calls += p * (k + (0 if settled else trial_calls))
    return acc, calls


def expected_vote(n: int, q: float) -> float:
    """Accuracy of a majority of ``n`` answers right w.p. ``q`` (tie: the first answer)."""
    return sum(p for p, _, right in outcomes(n, q) if right)


def expected_gap(k: int, t: float, q: float, r: float) -> tuple[float, float]:
    """(mean, mean square) of settle(k, t)'s correctness minus the full trial's, per case of one kind.

    A tried case is the full trial's own draw (difference 0); a settled one is the panel's label
    against an independent judge right w.p. ``r``.
    """
    mean = square = 0.0
    for p, share, right in outcomes(k, q):
        if share >= t:
            mean += p * (right - r)
            square += p * ((1 - r) if right else r)
    return mean, square


def expected_confidence_settle(
    kinds: Sequence[Kind], auroc: float, t: float, trial_calls: float
) -> tuple[float, float]:
    """(accuracy, calls per case) of one panel answer settling when its stated confidence is >= ``t``.

    The oracle states ``0.5 + 0.5 * Phi(z)`` with ``z ~ N(+-d/2, 1)`` (right/wrong), ``d`` from the AUROC.
    """
    d = math.sqrt(2) * NormalDist().inv_cdf(auroc)
    cut = NormalDist().inv_cdf(min(max(2 * t - 1, 1e-12), 1 - 1e-12))  # z at which the stated value is t
    acc = calls = 0.0
    for kind in kinds:
        right = kind.q * (1 - _PHI(cut - d / 2))  # settled and right
        wrong = (1 - kind.q) * (1 - _PHI(cut + d / 2))  # settled and wrong
        tried = 1 - right - wrong
        acc += kind.share * (right + tried * kind.r)
        calls += kind.share * (1 + tried * trial_calls)
    return acc, calls


def best_confidence(
    kinds: Sequence[Kind], auroc: float, max_calls: float, trial_calls: float
) -> tuple[float, float, float]:
    """(accuracy, calls, threshold) of the best one-answer confidence design within ``max_calls``, expected."""
    fits = [(*expected_confidence_settle(kinds, auroc, t / 1000, trial_calls), t / 1000) for t in range(500, 1000)]
    return max((f for f in fits if f[1] <= max_calls + 1e-9), key=lambda f: f[0], default=(0.0, 1.0, 1.0))


def auroc_to_match(kinds: Sequence[Kind], full: float, max_calls: float, trial_calls: float) -> float:
    """The least AUROC at which a one-answer confidence design matches ``full`` in expectation (bisection)."""
    lo, hi = 0.5, 0.999
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if best_confidence(kinds, mid, max_calls, trial_calls)[0] >= full else (mid, hi)
    return hi


def mix(easy: float, hard: float, hard_share: float) -> float:
    return (1 - hard_share) * easy + hard_share * hard


class Model:
    """What the difficulty model predicts for a fixed settle design (binomial sums)."""

    def __init__(self, easy: float, hard_single: float, hard_judge: float, hard_share: float, trial_calls: float):
        self.h, self.trial_calls = hard_share, trial_calls
        self.kinds = ((easy, easy), (hard_single, hard_judge))

    def as_kinds(self) -> list[Kind]:
        return [Kind(1 - self.h, *self.kinds[0]), Kind(self.h, *self.kinds[1])]

    def settle(self, k: int, t: float) -> tuple[float, float]:
        e = [expected_settle(k, t, q, r, self.trial_calls) for q, r in self.kinds]
        return mix(e[0][0], e[1][0], self.h), mix(e[0][1], e[1][1], self.h)

    def full(self) -> float:
        return mix(self.kinds[0][1], self.kinds[1][1], self.h)

    def vote(self, n: int) -> float:
        return mix(*(expected_vote(n, q) for q, _ in self.kinds), self.h)

    def within(self, k: int, t: float, n: int) -> tuple[float, float]:
        """(expected settle - full, probability a seed of ``n`` cases is within one paired SE: normal approx.)."""
        g = [expected_gap(k, t, q, r) for q, r in self.kinds]
        mean, square = mix(g[0][0], g[1][0], self.h), mix(g[0][1], g[1][1], self.h)
        sd = math.sqrt(max(square - mean**2, 1e-12))
        return mean, _PHI(1 + mean * math.sqrt(n) / sd)


# -- the most any design can reach ---------------------------------------------------------------------


@dataclass(frozen=True)
class Bound:
    """The most accurate any design can be within ``max_calls`` calls per case, in expectation."""

    max_calls: float
    accuracy: float
    """No design (nor a mix of designs) spending at most ``max_calls`` per case is more accurate."""
    best_accuracy: float
    best_calls: float
    """The best single policy found within ``max_calls``: its accuracy and calls."""
    max_panel: int


def weights(kinds: Sequence[Kind], x: int, y: int) -> list[tuple[Kind, float, float]]:
    """(kind, P(kind, gold A, these votes), P(kind, gold B, these votes)), unnormalised: ``x`` votes said A, ``y`` B."""
    return [(k, k.share * k.q**x * (1 - k.q) ** y / 2, k.share * k.q**y * (1 - k.q) ** x / 2) for k in kinds]


@functools.cache
def _weighed(kinds: tuple[Kind, ...], x: int, y: int) -> tuple[float, float, float]:
    """What the policy weighs at ``x`` votes for A and ``y`` for B, whatever a call costs: the accuracy of
    settling now, that of holding the trial and deciding on its verdict too, and P(the next answer says A)."""
    w = weights(kinds, x, y)
    z = sum(a + b for _, a, b in w)
    settle = max(sum(a for _, a, _ in w), sum(b for _, _, b in w)) / z
    # hold the trial, hear its verdict v, then take the more probable label given everything
    heard = sum(
        max(
            sum(a * (k.r if v == "A" else 1 - k.r) for k, a, _ in w),
            sum(b * (k.r if v == "B" else 1 - k.r) for k, _, b in w),
        )
        for v in ("A", "B")
    )
    p_a = sum(a * k.q + b * (1 - k.q) for k, a, b in w) / z  # the next answer says A
    return settle, heard / z, p_a


def _policy(kinds: Sequence[Kind], trial_calls: float, lam: float, max_panel: int):  # noqa: ANN202
    """The best policy at price ``lam`` per call: ``value(x, y)`` and ``action(x, y)`` over vote counts.

    ``x`` answers said label A, ``y`` label B; the gold label is A or B with probability 1/2.
    """
    kinds = tuple(kinds)

    @functools.cache
    def best(x: int, y: int) -> tuple[float, str]:
        settle, heard, p_a = _weighed(kinds, x, y)
        options = [(settle, "settle"), (heard - lam * trial_calls, "trial")]
        if x + y < max_panel:
            options.append((p_a * best(x + 1, y)[0] + (1 - p_a) * best(x, y + 1)[0] - lam, "ask"))
        return max(options)

    return best


def _evaluate(kinds: Sequence[Kind], trial_calls: float, best) -> tuple[float, float]:  # noqa: ANN001
    """Exact (accuracy, calls) of the policy ``best`` (gold label A, by symmetry).

    The action depends only on the vote counts, so the probability of reaching each count ``(x, y)``
    is carried forward one answer at a time (a path through every sequence of answers is exponential).
    """
    acc = calls = 0.0
    for kind in kinds:
        level = {(0, 0): kind.share}  # the counts reached after x + y answers, and their probability
        while level:
            ahead: dict[tuple[int, int], float] = {}
            for (x, y), p in level.items():
                action = best(x, y)[1]
                if action == "ask":
                    ahead[x + 1, y] = ahead.get((x + 1, y), 0.0) + p * kind.q
                    ahead[x, y + 1] = ahead.get((x, y + 1), 0.0) + p * (1 - kind.q)
                    calls += p
                    continue
                post = weights(kinds, x, y)
                if action == "settle":
                    a, b = sum(a for _, a, _ in post), sum(b for _, _, b in post)
                    acc += p * (1.0 if a > b else 0.5 if a == b else 0.0)
                    continue
                calls += p * trial_calls
                for v_right, pv in ((True, kind.r), (False, 1 - kind.r)):  # the verdict says A (right) or B
                    a = sum(pa * (k.r if v_right else 1 - k.r) for k, pa, _ in post)
                    b = sum(pb * ((1 - k.r) if v_right else k.r) for k, _, pb in post)
                    acc += p * pv * (1.0 if a > b else 0.5 if a == b else 0.0)
            level = ahead
    return acc, calls


def bound(kinds: Sequence[Kind], max_calls: float, trial_calls: float, max_panel: int = 15) -> Bound:
    """The most accurate any design (panel answers up to ``max_panel``, at most one trial) can be.

    The calls of the best policy at price ``lam`` fall as ``lam`` rises, so bisection finds the
    price at which they cross ``max_calls``; every price gives an upper bound, and the least of
    those found is the bound. Beside it: the best policy found within ``max_calls``.
    """

    def at(lam: float) -> tuple[float, float, float]:
        best = _policy(kinds, trial_calls, lam, max_panel)
        return (best(0, 0)[0] + lam * max_calls, *_evaluate(kinds, trial_calls, best))

    upper, acc, calls = at(0.0)
    if calls <= max_calls + 1e-9:  # the most accurate policy of all fits
        return Bound(max_calls, acc, acc, calls, max_panel)
    found = (0.0, 0.0)
    lo, hi = 0.0, 1.0  # at a price of 1 per call no answer is worth asking: no calls
    for _ in range(40):
        mid = (lo + hi) / 2
        value, acc, calls = at(mid)
        upper = min(upper, value)
        if calls <= max_calls + 1e-9:
            hi = mid
            found = max(found, (acc, calls))
        else:
            lo = mid
    return Bound(max_calls, upper, found[0], found[1], max_panel)
