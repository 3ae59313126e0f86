"""Scores over gold and predicted labels. A failure (no prediction) counts as wrong."""

from __future__ import annotations

import csv
import json
import logging
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom.errors import DataError

FAILED = "<failed>"

log = logging.getLogger(__name__)


def score(golds: Sequence[str], preds: Sequence[str | None], labels: Sequence[str]) -> dict[str, Any]:
    """Accuracy, macro-F1 and per-class precision/recall; ``None`` predictions are failures.

    Counted by hand, as scikit-learn's ``precision_recall_fscore_support(labels=...,
    zero_division=0)`` counts them (tests/test_harness.py checks the two agree): importing
    scikit-learn for four divisions would cost a command a second of start-up.
    """
    return score_counts(Counter(zip(golds, preds, strict=True)), labels)


def score_counts(pairs: Mapping[tuple[str, str | None], int], labels: Sequence[str]) -> dict[str, Any]:
    """:func:`score` from how many examples had each (gold, prediction) pair: a run counts them as results arrive."""
    n = sum(pairs.values())
    correct = sum(k for (g, p), k in pairs.items() if p is not None and g == p)
    per_class: dict[str, dict[str, Any]] = {}
    f1s = []
    for lab in labels:
        hit = sum(k for (g, p), k in pairs.items() if g == lab and p == lab)
        predicted = sum(k for (_, p), k in pairs.items() if p == lab)
        support = sum(k for (g, _), k in pairs.items() if g == lab)
        per_class[lab] = {
            "precision": hit / predicted if predicted else 0.0,
            "recall": hit / support if support else 0.0,
            "support": support,
        }
        # F1 = 2TP / (2TP + FP + FN) = 2TP / (predicted + support); 0 when both are 0.
        f1s.append(2 * hit / (predicted + support) if predicted + support else 0.0)
    out: dict[str, Any] = {
        "n": n,
        "accuracy": correct / n if n else 0.0,
        "macro_f1": sum(f1s) / len(f1s) if n and f1s else 0.0,
        "failures": sum(k for (_, p), k in pairs.items() if p is None),
    }
    if n:
        out["per_class"] = per_class
    return out


def metric(example: Any, pred: Any, trace: Any = None) -> bool:
    """DSPy-style metric: the predicted label equals the gold label."""
    return getattr(pred, "label", None) == example.label


def user_prices(
    models: Mapping[str, Any],
    prices: Mapping[str, Sequence[float]] | None,
) -> dict[str, tuple[float, ...]] | None:
    """The user's prices (per 1M input, output tokens, and any :data:`EXTRA_PRICES`) for the models of a run.

    The user's table wins over LiteLLM's price; LiteLLM fills the models the table leaves out.
    A key matches a model string (``openai/gpt-4o-mini``) or the same name without its provider.
    """
    if not prices:
        return None
    out = {}
    for m in models:
        for key in (m, m.split("/", 1)[-1]):
            if key in prices:
                out[m] = tuple(float(x) for x in prices[key])
                break
    return out


def price_aliases(prices: Mapping[str, Sequence[float]] | None, lms: Any) -> dict[str, list[float]] | None:
    """``prices`` keyed by the names the user typed, re-keyed by the model strings a run records.

    ``local`` is the embedded model's name, whatever its server calls it; unless priced, it costs
    $0 (it runs on this machine), as the dry run says. A price that matches no model of the run is
    logged as a warning (it would silently price nothing).
    """
    from courtroom.models.lms import LOCAL, model_name, saved_name
    from courtroom.models.panels import Panel

    members = [m for v in lms.values() for m in (v if isinstance(v, Panel) else [v])]
    models = {id(m): m for m in members}.values()
    prices = dict(prices or {})
    if any(saved_name(m) == LOCAL for m in models):
        prices.setdefault(LOCAL, [0.0, 0.0])
    if not prices:
        return None
    out = {k: list(v) for k, v in prices.items()}
    seen: set[str] = set()
    for lm in models:
        typed, actual = saved_name(lm), model_name(lm)
        seen |= {typed, actual, actual.split("/", 1)[-1]}
        if typed in prices and actual not in prices:
            out[actual] = list(prices[typed])
    unmatched = sorted(set(prices) - seen)
    if unmatched:
        log.warning(
            "--prices: no model of this run is named %s (its models: %s); that price is not used",
            ", ".join(unmatched),
            ", ".join(sorted({saved_name(lm) for lm in models})),
        )
    return out


EXTRA_PRICES = ("cache_read", "cache_write", "batch_input", "batch_output")
"""The prices a table row may add to ``input`` and ``output`` (dollars per 1M tokens): a row that names
any is six numbers, ``[input, output, cache_read, cache_write, batch_input, batch_output]``, the ones
it leaves out at the provider's usual rule (a cache token at the input price, a batch at half)."""


def price_pair(model: Any, price: Any, where: str) -> list[float]:
    """One price-table row: ``[input, output]`` dollars per 1M tokens, finite numbers >= 0.

    A mapping may also name :data:`EXTRA_PRICES`; the row is then six numbers (:data:`EXTRA_PRICES`).
    A NaN or negative price would turn every dollar total (and ``--max-cost``) into nonsense.
    """
    extra: dict[str, Any] = {}
    if isinstance(price, Mapping):
        extra = {k: price[k] for k in EXTRA_PRICES if price.get(k) not in (None, "")}
        price = [price.get("input"), price.get("output")]
    try:
        inp, outp = (float(x) for x in price)
        named = {k: float(v) for k, v in extra.items()}
    except (TypeError, ValueError) as exc:
        raise DataError(
            f"{where}: bad price for {model!r} ({price!r}); write [input, output] dollars per 1M tokens"
        ) from exc
    if not all(math.isfinite(x) and x >= 0 for x in (inp, outp, *named.values())):
        raise DataError(f"{where}: the price of {model!r} must be finite and >= 0 dollars per 1M tokens, got {price!r}")
    if not named:
        return [inp, outp]
    batch_in = named.get("batch_input", inp / 2)
    defaults = {"cache_read": inp, "cache_write": inp, "batch_input": batch_in, "batch_output": outp / 2}
    return [inp, outp, *(named.get(k, defaults[k]) for k in EXTRA_PRICES)]


def load_prices(path: str | Path) -> dict[str, list[float]]:
    """Read a price table.

    JSON ``{"model": [input, output]}`` or ``{"model": {"input":..,"output":..}}``
    (dollars per 1M tokens), or CSV with columns ``model,input,output``; a mapping (or a CSV's
    columns) may add :data:`EXTRA_PRICES`.
    """
    from courtroom._files import read_text

    path = Path(path)
    text = read_text(path, "price table")
    rows: dict[str, Any]
    if path.suffix.lower() == ".csv":
        reader = csv.DictReader(text.splitlines())
        missing = {"model", "input", "output"} - set(reader.fieldnames or [])
        if missing:
            raise DataError(
                f"price table {path}: missing column {', '.join(sorted(missing))}; "
                "write model,input,output (dollars per 1M tokens)"
            )
        rows = {r["model"]: r for r in reader}  # a mapping row: input, output and any EXTRA_PRICES
    else:
        try:
            rows = json.loads(text)
        except json.JSONDecodeError as exc:
            raise DataError(f"price table {path}: not valid JSON ({exc}); use a .json or .csv file") from exc
        if not isinstance(rows, dict):
            raise DataError(f"price table {path}: expected an object of model -> [input, output]")
    return {str(model): price_pair(model, price, f"price table {path}") for model, price in rows.items()}


def wilson(p: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """The 95% Wilson score interval of a proportion ``p`` over ``n`` cases (NaN, NaN for none)."""
    if n <= 0:
        return (math.nan, math.nan)
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))
