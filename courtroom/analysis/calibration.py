"""Calibration of predictions that carry a confidence (SPEC §10).

A prediction's confidence is the probability its framework gives the chosen label:

* the share of votes for it, where the output has ``votes`` (Courtroom-LLM's judges,
  self-consistency samples, parallel votes);
* its final probability, where the output has ``probabilities`` (Debate-Feedback's O_n);
* an explicit ``confidence`` field wins over both (a ``swap-vote`` verdict taken from the swapped
  order carries that order's confidence, :mod:`courtroom.analysis.bias`).

The scores are top-label ones, on the examples that have a confidence: the **Brier score**
``mean((confidence - correct)^2)`` and the **expected calibration error** over equal-width
confidence bins, ``sum(n_b / n * |accuracy_b - confidence_b|)``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

BINS = 10


def confidence(prediction: str | None, fields: Mapping[str, Any] | None) -> float | None:
    """The probability the framework's own output gives ``prediction``; None when it carries none."""
    if prediction is None or not fields:
        return None
    if isinstance(fields.get("confidence"), int | float):
        return round(float(fields["confidence"]), 6)
    votes = fields.get("votes")
    if isinstance(votes, list) and votes:
        return round(sum(v == prediction for v in votes) / len(votes), 6)
    probabilities = fields.get("probabilities")
    if isinstance(probabilities, list) and probabilities and isinstance(probabilities[-1], Mapping):
        value = probabilities[-1].get(prediction)
        return None if value is None else round(float(value), 6)
    return None


def _pairs(rows: Iterable[Mapping[str, Any]]) -> list[tuple[float, bool]]:
    return [
        (float(r["confidence"]), r.get("prediction") == r.get("gold"))
        for r in rows
        if r.get("confidence") is not None and r.get("prediction") is not None
    ]


def reliability(rows: Iterable[Mapping[str, Any]], bins: int = BINS) -> list[dict[str, float]]:
    """Per non-empty confidence bin: its range, mean confidence, accuracy and count."""
    buckets: list[list[tuple[float, bool]]] = [[] for _ in range(bins)]
    for conf, right in _pairs(rows):
        buckets[min(int(conf * bins), bins - 1)].append((conf, right))
    return [
        {
            "low": i / bins,
            "high": (i + 1) / bins,
            "confidence": sum(c for c, _ in b) / len(b),
            "accuracy": sum(r for _, r in b) / len(b),
            "n": len(b),
        }
        for i, b in enumerate(buckets)
        if b
    ]


def scores(rows: Sequence[Mapping[str, Any]], bins: int = BINS) -> dict[str, Any] | None:
    """``{"brier", "ece", "n", "bins"}`` over the rows with a confidence; None when no row has one."""
    pairs = _pairs(rows)
    if not pairs:
        return None
    n = len(pairs)
    table = reliability(rows, bins)
    return {
        "brier": round(sum((c - r) ** 2 for c, r in pairs) / n, 6),
        "ece": round(sum(b["n"] / n * abs(b["accuracy"] - b["confidence"]) for b in table), 6),
        "n": n,
        "bins": table,
    }
