"""Numbers for reading: accuracy with its 95% CI, counts with thousands separators, headers in words.

Only the human views use this (the HTML report, ``table.md``, the table ``compare`` prints);
``table.csv``, ``summary.json`` and the other JSON files keep raw numbers and column names.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

HEADERS = {
    "accuracy": "accuracy (95% CI)",
    "macro_f1": "macro-F1",
    "n": "examples",
    "failures": "failures",
    "calls": "LM calls",
    "sent": "calls sent",
    "cached": "calls from cache",
    "prompt_tokens": "prompt tokens",
    "completion_tokens": "completion tokens",
    "tokens": "tokens",
    "cached_tokens": "tokens from cache",
    "tokens_counted": "tokens counted",
    "cost": "cost ($)",
    "wall_seconds": "time (s)",
    "brier": "Brier score",
    "ece": "calibration error (ECE)",
    "accuracy_sd": "accuracy sd",
    "macro_f1_sd": "macro-F1 sd",
    "repeats": "repeats",
    "calls_per_example": "calls per example",
    "tokens_per_example": "tokens per example",
    "cost_per_correct": "$ per correct answer",
    "matches": "matches the cost of",
    "matched_vote": "vote at the same cost",
    "discordant": "right only here / only in the vote",
    "mcnemar_p": "McNemar p (exact)",
    "status": "status",
    "status_reason": "why",
    "mean": "mean",
    "sd": "sd",
    "ci": "95% CI",
}
"""Column name -> header in words."""

MAIN_COLUMNS = (
    "accuracy",
    "macro_f1",
    "n",
    "failures",
    "repeats",
    "calls_per_example",
    "tokens_per_example",
    "cost",
    "wall_seconds",
    "matches",
    "matched_vote",
    "discordant",
    "mcnemar_p",
)
"""The comparison columns an HTML report shows first (the rest sit in a collapsed block)."""

_COUNTS = {
    "n",
    "failures",
    "calls",
    "sent",
    "cached",
    "prompt_tokens",
    "completion_tokens",
    "tokens",
    "cached_tokens",
    "repeats",
}
_MONEY = {"cost", "cost_per_correct"}


def header(column: str) -> str:
    """A column's header in words (``calls_per_example`` -> ``calls per example``)."""
    return HEADERS.get(column, column.replace("_", " "))


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v))


def count(v: Any, whole: bool = False) -> str:
    """An integer with thousands separators (a mean over repeats keeps one decimal unless ``whole``)."""
    if _missing(v):
        return "n/a"
    v = float(v)
    return f"{round(v):,}" if whole or v == round(v) else f"{v:,.1f}"


def seconds(v: Any) -> str:
    """A duration: one decimal, two significant digits under a second."""
    return "n/a" if _missing(v) else f"{float(v):,.1f}" if float(v) >= 1 else f"{float(v):.2g}"


def ratio(v: Any, digits: int = 2) -> str:
    """A share or score in [0, 1]."""
    return "n/a" if _missing(v) else f"{float(v):.{digits}f}"


def money(v: Any) -> str:
    """Dollars, to 3 significant digits."""
    return "n/a" if _missing(v) else f"${float(v):,.3g}"


def number(v: Any) -> str:
    """Any figure for reading: whole numbers bare (``1``, not ``1.000``), others to 3 significant digits."""
    if _missing(v):
        return ""
    if isinstance(v, bool) or not isinstance(v, int | float):
        return str(v)
    v = float(v)
    if v == round(v):
        return f"{round(v):,}"
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.3g}"


def accuracy_ci(accuracy: Any, low: Any = None, high: Any = None, n: Any = None) -> str:
    """``0.62 [0.55, 0.69]``: the given 95% CI (over repeats), else Wilson's over ``n`` examples."""
    if _missing(accuracy):
        return "n/a"
    if _missing(low) or _missing(high):
        if _missing(n):
            return ratio(accuracy)
        from courtroom.eval.metrics import wilson

        low, high = wilson(float(accuracy), int(n))
    return f"{float(accuracy):.2f} [{float(low):.2f}, {float(high):.2f}]"


def value(column: str, v: Any) -> str:
    """One cell for reading, by what its column holds."""
    if _missing(v):
        return "" if column in ("matched_vote", "discordant", "mcnemar_p") else "n/a"  # vote rows: no test
    if column in _COUNTS or column == "tokens_per_example":
        return count(v, whole="tokens" in column)
    if column in _MONEY:
        return money(v)
    if column == "wall_seconds":
        return seconds(v)
    if column.endswith("per_example"):
        return f"{float(v):,.1f}"
    if column == "mcnemar_p":
        return f"{float(v):.3g}"
    if isinstance(v, float):
        return f"{v:.3f}" if column in ("brier", "ece") or column.endswith("_sd") else f"{v:.2f}"
    return str(v)


def readable_table(table: pd.DataFrame) -> pd.DataFrame:
    """A comparison table for reading: accuracy with its 95% CI, formatted cells, headers in words."""
    out = pd.DataFrame(index=table.index)
    for column in table.columns:
        if column in ("accuracy_ci_low", "accuracy_ci_high"):
            continue
        if column == "accuracy":
            low = table.get("accuracy_ci_low", pd.Series(None, index=table.index))
            high = table.get("accuracy_ci_high", pd.Series(None, index=table.index))
            n = table.get("n", pd.Series(None, index=table.index))
            cells = [accuracy_ci(table.at[i, "accuracy"], low[i], high[i], n[i]) for i in table.index]
        else:
            cells = [value(column, table.at[i, column]) for i in table.index]
        out[header(column)] = cells
    out.index.name = table.index.name
    return out


def readable_summary(summary: Mapping[str, Any]) -> pd.DataFrame:
    """A run's summary as (what, value) rows for reading; lists and mappings are left out."""
    rows = {}
    for key, v in summary.items():
        if isinstance(v, list | dict) or key == "failed_ids":
            continue
        rows[header(key)] = accuracy_ci(v, n=summary.get("n")) if key == "accuracy" else value(key, v)
    return pd.DataFrame({"value": rows})


def readable_stats(stats: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """Statistics over repeats (metric -> mean, sd, ci_low, ci_high, n) for reading."""
    rows = {}
    for metric, s in stats.items():

        def fmt(v: Any, metric: str = metric) -> str:
            return ratio(v) if metric in ("accuracy", "macro_f1") else value(metric, v)

        ci = "n/a" if _missing(s.get("ci_low")) else f"[{fmt(s['ci_low'])}, {fmt(s['ci_high'])}]"
        sd = "n/a" if _missing(s.get("sd")) else f"{float(s['sd']):,.3g}"
        rows[header(metric).replace(" (95% CI)", "")] = {
            "mean": fmt(s.get("mean")),
            "sd": sd,
            "95% CI": ci,
            "repeats": count(s.get("n")),
        }
    return pd.DataFrame(rows).T
