"""How Debate-Feedback reads a probability out of the judge: fields, vote shares or log-probabilities."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom.errors import ConfigError

PROB_METHODS = ("field", "votes", "logprobs")


def add_probability_fields(signature: type[dspy.Signature], labels: Sequence[str]) -> type[dspy.Signature]:
    """Append the judge's probability outputs.

    Binary tasks get ``probability`` (of labels[0]); multi-class tasks get ``p_1 .. p_K``, one per
    label, normalised afterwards.
    """
    if len(labels) == 2:
        return signature.append(
            "probability",
            dspy.OutputField(desc=f"probability between 0 and 1 that the correct label is {labels[0]!r}"),
            type_=float,
        )
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


def from_fields(out: dspy.Prediction, labels: Sequence[str]) -> dict[str, float]:
    """The distribution stated in the probability fields."""
    if len(labels) == 2:
        p = clamp(out.probability)
        return {labels[0]: p, labels[1]: 1.0 - p}
    return normalise([clamp(out[f"p_{i}"]) for i in range(1, len(labels) + 1)], labels)


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


def decide(dist: Mapping[str, float], labels: Sequence[str]) -> str:
    """Binary: labels[0] iff its probability >= 0.5. Multi-class: argmax, ties by label order."""
    if len(labels) == 2:
        return labels[0] if dist[labels[0]] >= 0.5 else labels[1]
    return max(labels, key=lambda lab: (dist[lab], -labels.index(lab)))


def smooth(previous: Mapping[str, float], new: Mapping[str, float], t: float) -> dict[str, float]:
    """O_i = (1 - T) * O_{i-1} + T * new, label by label."""
    return {lab: (1.0 - t) * previous[lab] + t * new[lab] for lab in previous}
