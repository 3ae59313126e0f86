"""Scores over gold and predicted labels. A failure (no prediction) counts as wrong."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sklearn.metrics import f1_score, precision_recall_fscore_support

FAILED = "<failed>"


def score(golds: Sequence[str], preds: Sequence[str | None], labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-class precision/recall; ``None`` predictions are failures."""
    preds_ = [p if p is not None else FAILED for p in preds]
    n = len(golds)
    correct = sum(g == p for g, p in zip(golds, preds_, strict=True))
    out: dict[str, Any] = {
        "n": n,
        "accuracy": correct / n if n else 0.0,
        "macro_f1": float(f1_score(golds, preds_, labels=list(labels), average="macro", zero_division=0)) if n else 0.0,
        "failures": sum(p is None for p in preds),
    }
    if n:
        p, r, _, support = precision_recall_fscore_support(golds, preds_, labels=list(labels), zero_division=0)
        out["per_class"] = {
            lab: {"precision": float(p[i]), "recall": float(r[i]), "support": int(support[i])}
            for i, lab in enumerate(labels)
        }
    return out


def metric(example: Any, pred: Any, trace: Any = None) -> bool:
    """DSPy-style metric: the predicted label equals the gold label."""
    return getattr(pred, "label", None) == example.label
