"""A comparison folder's files and plots: read it back, draw its plots and its accuracy-cost frontier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.errors import ConfigError, DataError
from courtroom.reporting import plots
from courtroom.runner.runs import load_run


def load_comparison(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame, dict[str, Any]]:
    """(comparison.json, table, analyses) of a comparison folder."""
    path = Path(path)
    if not (path / "comparison.json").is_file():
        raise ConfigError(
            f"{path} is not a comparison folder (no comparison.json): pass a folder printed by `courtroom compare`"
        )
    from courtroom._files import read_json
    from courtroom.runner._records import comparison_problem

    fix = f"restore it from a copy, or finish the comparison again with: courtroom compare --resume {path}"
    info = read_json(path / "comparison.json", fix)
    problem = comparison_problem(info)
    if problem:
        raise DataError(f"{path / 'comparison.json'} is damaged ({problem}): {fix}")
    table = pd.read_csv(path / "table.csv", index_col="framework")
    analyses = json.loads((path / "analyses.json").read_text()) if (path / "analyses.json").is_file() else {}
    return info, table, analyses


def draw_plots(out_dir: str | Path) -> dict[str, Path]:
    """Draw the comparison's plots from its files.

    Accuracy bars, box plots over repeats, agreement curves,
    the ambiguity split; returns name -> PNG path. Each names what ran under it
    (:mod:`courtroom.runner.provenance`) and has its own title.
    """
    from courtroom.runner.provenance import provenance, subtitle

    out_dir = Path(out_dir)
    info, table, analyses = load_comparison(out_dir)
    about = provenance(out_dir)
    note, chance, task = subtitle(about), about.chance(), info["task"]
    made: dict[str, Path] = {}
    low, high, ci_label = accuracy_interval(table)
    made["accuracy"] = plots.accuracy_bars(
        table["accuracy"],
        out_dir / "plots" / "accuracy.png",
        [(table["accuracy"] - low).fillna(0), (high - table["accuracy"]).fillna(0)],
        f"{task}: accuracy per framework",
        n=table["n"],
        chance=chance,
        ci_label=ci_label,
        note=note,
    )
    made["frontier"] = draw_frontier(out_dir, table, task)
    accs = {f: a["repeat_accuracies"] for f, a in analyses.items() if a.get("repeat_accuracies")}
    if accs:
        made["repeats"] = plots.repeats_boxplot(
            accs,
            out_dir / "plots" / "repeats.png",
            f"{task}: accuracy spread over repeats",
            n=about.n,
            chance=chance,
            note=note,
        )
    curves, against = {}, set()
    for f, a in analyses.items():
        agreement = a.get("agreement") or {}
        if agreement.get("mode") == "sequential" and agreement.get("by_judge"):
            curves[f"{f} (with previous judge)"] = [None, *agreement["by_judge"]]
            against.add("the previous judge")
        elif agreement.get("with_verdict"):
            curves[f"{f} (with the verdict)"] = agreement["with_verdict"]
            against.add("the verdict")
    if curves:
        made["agreement"] = plots.agreement_curves(
            curves,
            out_dir / "plots" / "agreement.png",
            ylabel="share of votes agreeing",
            title=f"{task}: each judge's vote agreeing with {' or '.join(sorted(against))}",
            note=note,
        )
    diagrams = {f: a["calibration"]["bins"] for f, a in analyses.items() if a.get("calibration")}
    if diagrams:
        made["reliability"] = plots.reliability_diagram(
            diagrams,
            out_dir / "plots" / "reliability.png",
            title=f"{task}: reliability diagram (n per bin)",
            note=note,
        )
    amb = json.loads((out_dir / "ambiguity.json").read_text()) if (out_dir / "ambiguity.json").is_file() else {}
    for f, a in analyses.items():
        if a.get("ambiguity"):
            made[f"ambiguity-{f}"] = plots.ambiguity_bars(
                pd.DataFrame(a["ambiguity"]),
                out_dir / "plots" / f"ambiguity-{f}.png",
                f"{task}, {f}: accuracy when {amb.get('k', 'K')} hearing samples agree or not",
                chance=chance,
                note=note,
            )
    return made


def accuracy_interval(table: pd.DataFrame) -> tuple[pd.Series, pd.Series, str]:
    """(low, high, legend) of each row's 95% CI: over repeats when there are any, else Wilson over examples."""
    if "accuracy_ci_low" in table.columns:
        low = table["accuracy_ci_low"].fillna(table["accuracy"])
        high = table["accuracy_ci_high"].fillna(table["accuracy"])
        repeats = int(table["repeats"].max()) if "repeats" in table.columns else 0
        return low, high, f"95% CI over {repeats} repeats (t)"
    cis = {f: plots.wilson(float(table.loc[f, "accuracy"]), int(table.loc[f, "n"])) for f in table.index}
    low = pd.Series({f: c[0] for f, c in cis.items()}, dtype=float)
    high = pd.Series({f: c[1] for f, c in cis.items()}, dtype=float)
    return low, high, "95% CI over examples (Wilson)"


def draw_frontier(out_dir: Path, table: pd.DataFrame, task: str) -> Path:
    """``frontier.png``: accuracy (95% CI: over repeats, else Wilson over examples) vs cost per example.

    Cost is dollars per example when every row has a price, else tokens per example.
    """
    from courtroom.runner.provenance import provenance, subtitle

    n = table["n"].astype(float)
    low, high, ci_label = accuracy_interval(table)
    from courtroom.comparison.matched import per_example, uncached

    rows = table.to_dict("index")
    cost = pd.Series([uncached(rows[f], "cost") for f in table.index], index=table.index, dtype=float)
    if cost.notna().all():
        x, label = cost / n, "dollars per example"
    else:
        x = pd.Series([per_example(rows[f], "tokens") for f in table.index], index=table.index, dtype=float)
        label = "tokens per example (cache hits included)"
    about = provenance(out_dir)
    return plots.frontier(
        x,
        table["accuracy"],
        low,
        high,
        out_dir / "frontier.png",
        xlabel=label,
        title=f"{task}: accuracy vs cost per example",
        ci_label=ci_label,
        chance=about.chance(),
        n=about.n,
        note=subtitle(about),
    )


def comparison_runs(path: str | Path) -> dict[str, Path]:
    """Framework -> the run folder holding its transcripts (repeat 0 for a repeat group)."""
    path = Path(path)
    info, _, _ = load_comparison(path)
    out = {}
    for f, rel in info["runs"].items():
        folder = path / rel
        out[f] = folder / "repeat-0" if (folder / "group.json").is_file() else folder
        load_run(out[f])  # fails clearly if a folder is missing
    return out
