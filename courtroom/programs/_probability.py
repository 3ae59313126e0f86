"""How Debate-Feedback reads a probability out of the judge: fields, vote shares or log-probabilities."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom.errors import ConfigError

PROB_METHODS = ("field", "votes", "logprobs")
TIES = ("initial", "previous", "last")


def add_probability_fields(signature: type[dspy.Signature], labels: Sequence[str]) -> type[dspy.Signature]:
    """Append one probability output per label, ``p_1 .. p_K``, each naming its label.

    One field per label, binary tasks included: a single "probability of labels[0]" placed after the
    ``label`` field is easily filled with the confidence in the chosen label, which flips the result
    whenever that label is labels[1]. The values are normalised and checked against the written
    label by :func:`from_fields`.
    """
    for i, label in enumerate(labels, 1):
        signature = signature.append(
            f"p_{i}",
            dspy.OutputField(desc=f"probability between 0 and 1 that the correct label is {label!r}"),
            type_=float,
        )
    return signature


def clamp(x: Any) -> float:
    """``x`` as a float in [0, 1] (unparseable or NaN: 0)."""
    try:
        v = float(x)
    except (TypeError, ValueError):
        return 0.0
    return 0.0 if math.isnan(v) else min(max(v, 0.0), 1.0)


def normalise(weights: Sequence[float], labels: Sequence[str]) -> dict[str, float]:
    """A distribution over ``labels`` from non-negative weights (all zero: uniform)."""
    total = sum(weights)
    if total <= 0:
        return {lab: 1.0 / len(labels) for lab in labels}
    return {lab: w / total for lab, w in zip(labels, weights, strict=True)}


def from_fields(out: dspy.Prediction, labels: Sequence[str]) -> tuple[dict[str, float], bool]:
    """The distribution stated in the per-label fields, checked against the written ``label``.

    Returns (distribution, agreed). The values are normalised (all zero: uniform). They agree with
    the written label when it has the highest probability, ties included (so at exactly 0.5 on a
    binary task the written label stands). On disagreement the written label wins, the judge's
    committed answer, constrained to the label space, and the numbers are read as misplaced: the
    written label's probability and the highest one are swapped, which keeps the stated confidence.
    """
    dist = normalise([clamp(out.get(f"p_{i}")) for i in range(1, len(labels) + 1)], labels)
    written = out.get("label")
    top = max(dist.values())
    if written not in dist or dist[written] >= top:
        return dist, True
    best = next(lab for lab in labels if dist[lab] == top)
    swapped = dict(dist)
    swapped[written], swapped[best] = dist[best], dist[written]
    return swapped, False


def from_votes(votes: Sequence[str], labels: Sequence[str]) -> dict[str, float]:
    """The vote share of each label."""
    counts = Counter(votes)
    return {lab: counts[lab] / len(votes) for lab in labels}


def _tokens(logprobs: Any) -> list[tuple[str, float]]:
    content = logprobs.get("content") if isinstance(logprobs, Mapping) else getattr(logprobs, "content", logprobs)
    out = []
    for tok in content or []:
        get = tok.get if isinstance(tok, Mapping) else lambda k, t=tok: getattr(t, k, None)
        if get("token") is not None and get("logprob") is not None:
            out.append((str(get("token")), float(get("logprob") or 0.0)))
    return out


def from_logprobs(out: dspy.Prediction, labels: Sequence[str]) -> dict[str, float]:
    """The chosen label's probability from token log-probabilities; the rest shared evenly.

    P(chosen) = exp(sum of the log-probabilities of the tokens spelling the label in the JSON answer).

    Raises:
        ConfigError: the provider returned no log-probabilities.
    """
    tokens = _tokens(out.get("logprobs"))
    if not tokens:
        raise ConfigError(
            "debate-feedback: prob_method='logprobs' but the model returned no log-probabilities; "
            "use prob_method='field' or 'votes', or a provider that returns logprobs"
        )
    label = out.label
    text = "".join(t for t, _ in tokens)
    key = text.find('"label"')
    start = text.find(f'"{label}"', max(key, 0)) + 1
    if start <= 0:
        raise ConfigError("debate-feedback: could not find the label in the log-probabilities; use prob_method='field'")
    end, pos, total = start + len(label), 0, 0.0
    for tok, lp in tokens:
        if pos < end and pos + len(tok) > start:
            total += lp
        pos += len(tok)
    p = math.exp(total)
    rest = (1.0 - p) / (len(labels) - 1)
    return {lab: p if lab == label else rest for lab in labels}


def decide(dist: Mapping[str, float], labels: Sequence[str], tie: str | None = None) -> str:
    """The most probable label (binary: p > 0.5).

    A tie, e.g. exactly 0.5 on a binary task, goes to ``tie`` if it is among the tied labels, else
    to the first tied label in label order.
    """
    top = max(dist[lab] for lab in labels)
    tied = [lab for lab in labels if math.isclose(dist[lab], top, abs_tol=1e-12)]
    return tie if tie in tied else tied[0]


def tie_winner(rule: str, initial: str, previous: str, last: str) -> str:
    """The label a tie in O goes to under ``rule`` (Debate-Feedback's ``tie`` knob).

    ``initial``: O_0's label. ``previous``: the label standing before the round, O_{i-1}'s. ``last``:
    the label the judge wrote in the latest estimate smoothed into O (O_0's after a round that did
    not pass, which resets O to O_0).

    The paper states no tie rule; its Table 5 implies ``initial``. With one-hot answers (its judge
    outputs a label) and T = 0.5, O_n = 0.5^n O_0 + sum_i 0.5^(n-i+1) LM_i: the last answer weighs
    0.5, as much as O_0 and every earlier answer together, so it decides unless they all oppose it,
    a tie. Under ``last`` the verdict is then always the last answer, as at T = 1 (a round that does
    not pass resets O to O_0 at either T): Table 5's two rows would be one rule, yet it reports 102
    corrections and 115 degradations at T = 1 against 93 and 11 at T = 0.5. Under ``initial``, two
    rounds leave O_0 only when both answers oppose it: a single stray flip (a,b) gives
    O_2 = 0.25 + 0.25 + 0 = 0.5 for O_0's label, a tie that keeps it; a judge persuaded in both
    rounds still corrects. Both rows start from the same first answers: 0.628 * 3000 - 102 + 115 =
    1897 and 0.657 * 3000 - 93 + 11 = 1889 of the 3000 cases right at O_0 (63.2% and 63.0%).
    One-hot answers tie only when every earlier estimate sides with O_0, so ``previous`` is
    ``initial`` there; the two differ with stated probabilities.
    """
    return {"initial": initial, "previous": previous, "last": last}[rule]


def smooth(previous: Mapping[str, float], new: Mapping[str, float], t: float) -> dict[str, float]:
    """O_i = (1 - T) * O_{i-1} + T * new, label by label."""
    return {lab: (1.0 - t) * previous[lab] + t * new[lab] for lab in previous}


def max_change(previous: Mapping[str, float], current: Mapping[str, float]) -> float:
    """How far O moved in a round: the largest absolute change of any label's probability."""
    return max(abs(current[lab] - previous[lab]) for lab in previous)
