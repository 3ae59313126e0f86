"""Scores over gold and predicted labels. A failure (no prediction) counts as wrong."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sklearn.metrics import f1_score, precision_recall_fscore_support

from courtroom.errors import DataError

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


def user_prices(
    models: Mapping[str, Any],
    prices: Mapping[str, Sequence[float]] | None,
) -> dict[str, tuple[float, float]] | None:
    """The user's prices (per 1M input, output tokens) for the models LiteLLM has no price for.

    LiteLLM's price wins where it knows the model; the user's table fills the gaps.
    """
    if not prices:
        return None
    from courtroom.usage import price_per_token

    return {m: (float(p[0]), float(p[1])) for m, p in prices.items() if m in models and price_per_token(m) is None}


def load_prices(path: str | Path) -> dict[str, list[float]]:
    """Read a price table.

    JSON ``{"model": [input, output]}`` or ``{"model": {"input":..,"output":..}}``
    (dollars per 1M tokens), or CSV with columns ``model,input,output``.
    """
    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise DataError(f"cannot read price table {path}: {exc.strerror or exc}") from exc
    rows: dict[str, Any]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        missing = {"model", "input", "output"} - set(reader.fieldnames or [])
        if missing:
            raise DataError(
                f"price table {path}: missing column {', '.join(sorted(missing))}; "
                "write model,input,output (dollars per 1M tokens)"
            )
        rows = {r["model"]: [r["input"], r["output"]] for r in reader}
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"price table {path}: not valid JSON ({exc}); use a .json or .csv file") from exc
        if not isinstance(rows, dict):
            raise DataError(f"price table {path}: expected an object of model -> [input, output]")
    out: dict[str, list[float]] = {}
    for model, price in rows.items():
        if isinstance(price, Mapping):
            price = [price.get("input"), price.get("output")]
        try:
            inp, outp = (float(x) for x in price)
        except (TypeError, ValueError) as exc:
            raise DataError(
                f"price table {path}: bad price for {model!r} ({price!r}); write [input, output] dollars per 1M tokens"
            ) from exc
        out[str(model)] = [inp, outp]
    return out
