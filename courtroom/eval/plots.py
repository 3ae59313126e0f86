"""Paper-style plots (matplotlib, Agg backend).

Accuracy bars, box plots over repeats, judge agreement curves,
the ambiguity split, and a confusion matrix. Each function writes one PNG and returns its path.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402


def _save(fig: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def accuracy_bars(
    accuracy: pd.Series, path: Path, errors: Sequence[Sequence[float]] | None = None, title: str = ""
) -> Path:
    """Accuracy per framework; ``errors`` (below, above) draws the 95% CI of repeats."""
    fig, ax = plt.subplots(figsize=(max(4.0, 0.9 * len(accuracy) + 1.5), 3.4))
    ax.bar(range(len(accuracy)), accuracy.fillna(0), yerr=errors, capsize=4, color="#5c6bc0")
    ax.set_xticks(range(len(accuracy)), list(accuracy.index), rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title(title or "accuracy")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def repeats_boxplot(accuracies: Mapping[str, Sequence[float]], path: Path, title: str = "") -> Path:
    """Accuracy over repeats, one box per framework (the JoT paper's Appendix B)."""
    names = list(accuracies)
    fig, ax = plt.subplots(figsize=(max(4.0, 1.1 * len(names) + 1.5), 3.6))
    ax.boxplot([list(accuracies[n]) for n in names], showmeans=True)
    ax.set_xticks(range(1, len(names) + 1), names, rotation=30, ha="right")
    ax.set_ylabel("accuracy")
    ax.set_title(title or "accuracy over repeats")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path)


def agreement_curves(curves: Mapping[str, Sequence[float | None]], path: Path, *, ylabel: str) -> Path:
    """One line per framework: agreement rate by judge position."""
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    for name, values in curves.items():
        xs = [i + 1 for i, v in enumerate(values) if v is not None]
        ax.plot(xs, [v for v in values if v is not None], marker="o", label=name)
    ax.set_xlabel("judge")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title("judge agreement")
    return _save(fig, path)


def ambiguity_bars(split: pd.DataFrame, path: Path, title: str = "") -> Path:
    """Accuracy on normal vs ambiguous cases, for each ambiguity rule (n on each bar)."""
    rules = list(dict.fromkeys(split["rule"]))
    fig, ax = plt.subplots(figsize=(5.0, 3.4))
    width = 0.38
    for j, part in enumerate(("normal", "ambiguous")):
        sub = split[split["part"] == part].set_index("rule").reindex(rules)
        xs = [i + (j - 0.5) * width for i in range(len(rules))]
        bars = ax.bar(xs, sub["accuracy"].fillna(0), width, label=part)
        for bar, n in zip(bars, sub["n"], strict=True):
            ax.annotate(
                f"n={int(n)}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    ax.set_xticks(range(len(rules)), rules)
    ax.set_ylim(0, 1.15)
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=8)
    ax.set_title(title or "ambiguous vs normal cases")
    return _save(fig, path)


def confusion(golds: Sequence[str], preds: Sequence[str | None], labels: Sequence[str], path: Path) -> Path:
    """Counts of gold (rows) by prediction (columns); failures get their own column."""
    cols = [*labels, "failed"]
    grid = [
        [
            sum(1 for g, p in zip(golds, preds, strict=True) if g == gl and (p if p is not None else "failed") == c)
            for c in cols
        ]
        for gl in labels
    ]
    fig, ax = plt.subplots(figsize=(1.0 + 0.8 * len(cols), 0.9 + 0.6 * len(labels)))
    ax.imshow(grid, cmap="Blues")
    for i, line in enumerate(grid):
        for j, v in enumerate(line):
            ax.text(j, i, str(v), ha="center", va="center", fontsize=9)
    ax.set_xticks(range(len(cols)), cols, rotation=30, ha="right")
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlabel("prediction")
    ax.set_ylabel("gold")
    return _save(fig, path)


def wilson(accuracy: float, n: int, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson interval of a proportion (the CI of one run's accuracy over n examples)."""
    if not n:
        return (0.0, 1.0)
    centre = (accuracy + z * z / (2 * n)) / (1 + z * z / n)
    half = z * ((accuracy * (1 - accuracy) / n + z * z / (4 * n * n)) ** 0.5) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pareto(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names on the Pareto front of (cost, accuracy): nothing else is cheaper-or-equal and more accurate."""
    front = []
    for name, (x, y) in points.items():
        dominated = any(
            (x2 <= x and y2 >= y) and (x2 < x or y2 > y) for other, (x2, y2) in points.items() if other != name
        )
        if not dominated:
            front.append(name)
    return sorted(front, key=lambda n: points[n][0])


def frontier(
    cost: pd.Series,
    accuracy: pd.Series,
    low: pd.Series,
    high: pd.Series,
    path: Path,
    *,
    xlabel: str,
    title: str = "",
) -> Path:
    """Accuracy (95% CI bars) against cost per example, one point per row, the Pareto front drawn."""
    names = [n for n in accuracy.index if pd.notna(cost[n]) and pd.notna(accuracy[n])]
    points = {n: (float(cost[n]), float(accuracy[n])) for n in names}
    front = pareto(points)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for n in names:
        x, y = points[n]
        on = n in front
        ax.errorbar(
            x,
            y,
            yerr=[[y - float(low[n])], [float(high[n]) - y]],
            fmt="o",
            capsize=4,
            color="#d84315" if on else "#5c6bc0",
            markersize=7 if on else 5,
        )
        ax.annotate(n, (x, y), textcoords="offset points", xytext=(6, 5), fontsize=8)
    if len(front) > 1:
        ax.step([points[n][0] for n in front], [points[n][1] for n in front], where="post", color="#d84315", alpha=0.6)
    ax.plot([], [], "o", color="#d84315", label="Pareto front")
    ax.plot([], [], "o", color="#5c6bc0", label="dominated")
    if names and max(points[n][0] for n in names) / max(min(points[n][0] for n in names), 1e-12) > 20:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy (95% CI)")
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(title or "accuracy vs cost")
    return _save(fig, path)


def reliability_diagram(curves: Mapping[str, Sequence[Mapping[str, float]]], path: Path) -> Path:
    """Accuracy against stated confidence per bin, one line per framework; the diagonal is perfect calibration."""
    fig, ax = plt.subplots(figsize=(5.0, 4.2))
    ax.plot([0, 1], [0, 1], "--", color="#999", label="perfectly calibrated")
    for name, bins in curves.items():
        xs, ys = [b["confidence"] for b in bins], [b["accuracy"] for b in bins]
        ax.plot(xs, ys, marker="o", label=name)
        for b in bins:
            ax.annotate(
                f"{int(b['n'])}",
                (b["confidence"], b["accuracy"]),
                xytext=(3, -10),
                textcoords="offset points",
                fontsize=7,
            )
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("confidence (vote share or probability)")
    ax.set_ylabel("accuracy")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("reliability diagram (n per bin)")
    return _save(fig, path)
