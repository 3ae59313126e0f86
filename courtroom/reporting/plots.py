"""Paper-style plots (matplotlib, Agg backend).

Accuracy bars, box plots over repeats, judge agreement curves,
the ambiguity split, and a confusion matrix. Each function writes one PNG and returns its path.
``note`` is the provenance subtitle (:func:`courtroom.runner.provenance.subtitle`) that
:func:`stamp` writes under the figure; ``chance`` is ``(rate, legend)`` of the accuracy to beat
(:meth:`courtroom.runner.provenance.Provenance.chance`), drawn as a dashed line.
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from courtroom.eval.metrics import wilson  # noqa: E402, F401 - re-exported: plots draw its intervals

Chance = tuple[float, str]
"""(accuracy rate, legend text) of the line to beat."""


def stamp(fig: Any, note: str | None) -> None:
    """Write ``note`` (the provenance subtitle) in small grey text under the figure."""
    if not note:
        return
    width = max(40, int(fig.get_figwidth() * 72 / (6.5 * 0.6)))
    text = "\n".join(textwrap.fill(line, width, subsequent_indent="  ") for line in note.splitlines())
    fig.text(0.01, 0.0, text, ha="left", va="top", fontsize=6.5, color="#555", gid="provenance")


def _save(fig: Any, path: Path, note: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    stamp(fig, note)  # after the layout, below the axes: the tight bounding box takes it in
    fig.savefig(path, dpi=110, bbox_inches="tight", pad_inches=0.08)
    plt.close(fig)
    return path


def _chance(ax: Any, chance: Chance | None) -> None:
    if chance:
        ax.axhline(chance[0], linestyle="--", color="#888", linewidth=1, label=chance[1], gid="chance")


def accuracy_bars(
    accuracy: pd.Series,
    path: Path,
    errors: Sequence[Sequence[float]] | None = None,
    title: str = "",
    *,
    n: pd.Series | None = None,
    chance: Chance | None = None,
    ci_label: str = "95% CI",
    note: str | None = None,
) -> Path:
    """Accuracy per framework, ``n`` on each bar; ``errors`` (below, above) draws its 95% CI."""
    fig, ax = plt.subplots(figsize=(max(4.4, 0.9 * len(accuracy) + 2.0), 3.6))
    xs = list(range(len(accuracy)))
    bars = ax.bar(xs, accuracy.fillna(0), color="#5c6bc0", label="accuracy")
    if errors is not None:
        # An interval's end read back rounded can sit a hair past its point (1.00 scored, high 0.9999...).
        errors = [[max(0.0, float(e)) for e in side] for side in errors]
        ax.errorbar(xs, accuracy.fillna(0), yerr=errors, fmt="none", ecolor="#222", capsize=4, label=ci_label)
    if n is not None:
        for bar, size in zip(bars, n.reindex(accuracy.index), strict=True):
            if pd.notna(size):
                ax.annotate(
                    f"n={int(size)}", (bar.get_x() + bar.get_width() / 2, 0.02), ha="center", fontsize=7, color="white"
                )
    _chance(ax, chance)
    ax.set_xticks(xs, list(accuracy.index), rotation=30, ha="right")
    ax.set_ylim(0, 1.3)  # room for the legend above 1
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("accuracy")
    ax.set_title(title or "accuracy")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7, loc="upper right", ncols=3)
    return _save(fig, path, note)


def repeats_boxplot(
    accuracies: Mapping[str, Sequence[float]],
    path: Path,
    title: str = "",
    *,
    n: int | None = None,
    chance: Chance | None = None,
    note: str | None = None,
) -> Path:
    """Accuracy over repeats, one box per framework (the JoT paper's Appendix B), with a legend."""
    names = list(accuracies)
    fig, ax = plt.subplots(figsize=(max(4.4, 1.1 * len(names) + 2.0), 3.8))
    parts = ax.boxplot([list(accuracies[k]) for k in names], showmeans=True)
    ax.set_xticks(
        range(1, len(names) + 1), [f"{k}\n({len(accuracies[k])} repeats)" for k in names], rotation=30, ha="right"
    )
    _chance(ax, chance)
    handles = [
        Line2D([], [], color="black", linewidth=6, alpha=0.3, label="middle half of the repeats (box)"),
        Line2D([], [], color=parts["medians"][0].get_color(), label="median"),
        Line2D([], [], color=parts["means"][0].get_markerfacecolor(), marker="^", linestyle="none", label="mean"),
        Line2D([], [], color="black", marker="_", markersize=10, linestyle="-", label="whiskers: within 1.5 IQR"),
    ]
    if chance:
        handles.append(Line2D([], [], color="#888", linestyle="--", label=chance[1]))
    ax.legend(handles=handles, fontsize=7, loc="lower right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy" + (f" (n={n} examples per repeat)" if n else ""))
    ax.set_title(title or "accuracy over repeats")
    ax.grid(axis="y", alpha=0.3)
    return _save(fig, path, note)


def agreement_curves(
    curves: Mapping[str, Sequence[float | None]],
    path: Path,
    *,
    ylabel: str,
    title: str = "",
    note: str | None = None,
) -> Path:
    """One line per framework: how often the judge at each position agrees (with what, says the label)."""
    fig, ax = plt.subplots(figsize=(5.4, 3.6))
    for name, values in curves.items():
        xs = [i + 1 for i, v in enumerate(values) if v is not None]
        ax.plot(xs, [v for v in values if v is not None], marker="o", label=name)
    ax.set_xlabel("judge position")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel(ylabel)
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    ax.set_title(title or "judges agreeing")
    return _save(fig, path, note)


def ambiguity_bars(
    split: pd.DataFrame,
    path: Path,
    title: str = "",
    *,
    chance: Chance | None = None,
    note: str | None = None,
) -> Path:
    """Accuracy on normal vs ambiguous cases, for each ambiguity rule (n on each bar).

    A case is ambiguous when its K preliminary-hearing samples disagree (the rule says how much).
    """
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
    _chance(ax, chance)
    ax.set_xticks(range(len(rules)), rules)
    ax.set_xlabel("rule over the hearing samples' agreement")
    ax.set_ylim(0, 1.35)  # room for the legend above 1
    ax.set_yticks([0, 0.2, 0.4, 0.6, 0.8, 1.0])
    ax.set_ylabel("accuracy")
    ax.legend(fontsize=7, loc="upper right", ncols=3)
    ax.set_title(title or "ambiguous vs normal cases (hearing samples disagreeing)")
    return _save(fig, path, note)


def confusion(
    golds: Sequence[str],
    preds: Sequence[str | None],
    labels: Sequence[str],
    path: Path,
    *,
    title: str = "",
    note: str | None = None,
) -> Path:
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
    ax.set_title(title or f"confusion matrix (n={len(golds)})", fontsize=10)
    return _save(fig, path, note)


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
    ci_label: str = "95% CI",
    chance: Chance | None = None,
    n: int | None = None,
    note: str | None = None,
) -> Path:
    """Accuracy (95% CI bars) against cost per example, one point per row, the Pareto front drawn."""
    names = [k for k in accuracy.index if pd.notna(cost[k]) and pd.notna(accuracy[k])]
    points = {k: (float(cost[k]), float(accuracy[k])) for k in names}
    front = pareto(points)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for k in names:
        x, y = points[k]
        on = k in front
        ax.errorbar(
            x,
            y,
            yerr=[[max(0.0, y - float(low[k]))], [max(0.0, float(high[k]) - y)]],
            fmt="o",
            capsize=4,
            color="#d84315" if on else "#5c6bc0",
            markersize=7 if on else 5,
        )
    if len(front) > 1:
        ax.step([points[k][0] for k in front], [points[k][1] for k in front], where="post", color="#d84315", alpha=0.6)
    ax.plot([], [], "o", color="#d84315", label="Pareto front")
    ax.plot([], [], "o", color="#5c6bc0", label="dominated")
    ax.plot([], [], "|", color="#555", markersize=10, label=ci_label)
    _chance(ax, chance)
    if names and max(points[k][0] for k in names) / max(min(points[k][0] for k in names), 1e-12) > 20:
        ax.set_xscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("accuracy" + (f" (n={n} examples)" if n else ""))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
    ax.set_title(title or "accuracy vs cost")
    place_labels(ax, [(k, points[k]) for k in names])  # after the scales: labels are measured where they land
    return _save(fig, path, note)


_OFFSETS = [(6, 5, "left"), (6, -12, "left"), (-6, 5, "right"), (-6, -12, "right"), (6, 16, "left"),
            (-6, 16, "right"), (6, -23, "left"), (-6, -23, "right"), (6, 27, "left"), (-6, 27, "right"),
            (6, -34, "left"), (-6, -34, "right")]  # fmt: skip
"""Where a point's label may go (points right/up, then around it, further out): the first free one wins."""


def place_labels(ax: Any, labels: Sequence[tuple[str, tuple[float, float]]]) -> list[Any]:
    """Annotate each point with its name where it overlaps no label placed before (the text artists)."""
    renderer = ax.figure.canvas.get_renderer()
    boxes: list[Any] = []
    texts = []
    for name, xy in labels:
        for i, (dx, dy, ha) in enumerate(_OFFSETS):
            text = ax.annotate(name, xy, textcoords="offset points", xytext=(dx, dy), fontsize=8, ha=ha)
            box = text.get_window_extent(renderer)
            if i == len(_OFFSETS) - 1 or not any(box.overlaps(b) for b in boxes):
                boxes.append(box)
                texts.append(text)
                break
            text.remove()
    return texts


def reliability_diagram(
    curves: Mapping[str, Sequence[Mapping[str, float]]], path: Path, *, title: str = "", note: str | None = None
) -> Path:
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
    ax.set_title(title or "reliability diagram (n per bin)")
    return _save(fig, path, note)
