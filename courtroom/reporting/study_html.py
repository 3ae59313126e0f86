"""The HTML report of a study folder (``courtroom study --out DIR``; ``courtroom report DIR``).

One self-contained page from the files the study wrote (``study.json``, ``trials.csv``,
``pareto.csv``, ``test.csv`` and the PNG plots): what ran, the best configuration, the Pareto
front, the parameter importances, the dev score beside the held-out test score of each chosen
trial, the score history and every trial. Numbers are formatted for reading; nothing is fetched.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.reporting.formatting import number

SCORES = ("accuracy", "macro_f1", "score", "values_0")
"""Columns of scores in [0, 1]: three decimals."""

TRIAL_COLUMNS = ("number", "state", "accuracy", "macro_f1", "calls_per_example", "failures", "sent", "cached",
                 "duplicate_of", "error")  # fmt: skip
"""The trials table's columns besides the searched parameters (the rest: ``trials.csv``)."""


def is_study_folder(folder: Path) -> bool:
    """A folder a study wrote its report to."""
    return (folder / "study.json").is_file() and (folder / "trials.csv").is_file()


def _cells(df: pd.DataFrame) -> pd.DataFrame:
    def cell(column: str, v: Any) -> str:
        if isinstance(v, float) and v == v and column.split(" ")[-1] in SCORES:
            return f"{v:.3f}"
        text = number(v)
        return "" if text in ("nan", "None", "<NA>") else text

    from courtroom.reporting.formatting import header

    out = df.astype(object).apply(lambda col: [cell(str(col.name), v) for v in col])
    out.columns = [header(str(c)).replace(" (95% CI)", "") if "_" in str(c) or c in SCORES else c for c in out.columns]
    out.index.name = "trial"
    return out


def study_sections(folder: Path, img: Any, table: Any, section: Any) -> tuple[str, list[str], str]:
    """(title, sections, provenance rows HTML) of a study folder's page; ``img``/``table``/``section`` draw."""
    from courtroom._secrets import without_password
    from courtroom.optimize.study._storage import DEFAULT_STORAGE

    info = json.loads((folder / "study.json").read_text())
    config = info.get("config") or {}
    trials = pd.read_csv(folder / "trials.csv")
    params = [c for c in trials.columns if c not in (*TRIAL_COLUMNS, "values_0", "values_1", "value", "config_key",
                                                      "paper_default", "seconds", "tokens", "calls", "examples",
                                                      "duration", "design")]  # fmt: skip
    objective = config.get("objective", "accuracy")
    cost = "calls per example" if config.get("cost_objective") else None
    best_rows = []
    for b in info.get("best") or []:
        values = b.get("values") or []
        shown = b.get("accuracy", values[0] if values else None) if objective == "accuracy" else None
        shown = values[0] if shown is None and values else shown  # the set's accuracy, on all its dev cases
        row = {"trial": b.get("number"), objective: f"{shown:.3f}" if shown is not None else ""}
        if b.get("dev_cases"):
            row["dev cases"] = number(b["dev_cases"])
        if b.get("design"):
            row["design"] = str(b["design"])
        if cost and len(values) > 1:
            row[cost] = number(values[1])
        row["configuration"] = ", ".join(f"{k}={number(v)}" for k, v in (b.get("params") or {}).items()) or "-"
        best_rows.append(row)
    best = pd.DataFrame(best_rows).set_index("trial") if best_rows else pd.DataFrame()
    what = "every point of the Pareto front (score up, cost down)" if cost else "the trial with the best dev score"
    sections = [
        section("best", "Best configuration", f"<p class=shown>Chosen: {what}.</p>" + table(best) if len(best) else ""),
    ]
    tied = info.get("tied")
    if tied:
        tested = (folder / "test.csv").is_file()
        sections.append(section("tied", "Tied with the best", _tied_html(tied, table, tested)))
    test = folder / "test.csv"
    if test.is_file():
        dev_test = _cells(pd.read_csv(test).set_index("trial"))
        note = (
            "<p class=shown>The dev score chose each trial; the test split is held out (no trial saw it). "
            "Intervals: 95% Wilson over the cases.</p>"
        )
        sections.append(section("dev-test", "Dev vs test", note + table(dev_test)))
    else:
        sections.append(section("dev-test", "Dev vs test", "<p class=none>no test split scored (--test-limit 0)</p>"))
    pareto_png, pareto_csv = folder / "pareto.png", folder / "pareto.csv"
    if cost:
        front = _cells(pd.read_csv(pareto_csv).set_index("number")) if pareto_csv.is_file() else pd.DataFrame()
        body = (img(pareto_png) if pareto_png.is_file() else "") + (table(front) if len(front) else "")
        sections.append(section("pareto", "Pareto front", body))
    importances = folder / "importances.png"
    sections.append(
        section(
            "importances",
            "Parameter importances",
            img(importances)
            if importances.is_file()
            else "<p class=none>not estimated: too few completed trials with different parameters</p>",
        )
    )
    history = folder / "history.png"
    sections.append(section("history", "Score by trial", img(history) if history.is_file() else ""))
    shown = [c for c in ("number", "state", "accuracy", "macro_f1", "calls_per_example") if c in trials.columns]
    shown += params + [c for c in TRIAL_COLUMNS if c in trials.columns and c not in shown]
    sections.append(section("trials", f"Trials ({len(trials)})", table(_cells(trials[shown].set_index("number")))))
    facts = [
        ("study", str(info.get("study", folder.name))),
        ("framework", str(config.get("framework", ""))),
        ("task", str(config.get("task", ""))),
        ("objective", objective + (f", {cost}" if cost else "")),
        ("models", ", ".join(config.get("models") or []) or "local"),
        ("dev examples per trial", number(config.get("dev"))),
        ("trials", number(info.get("trials"))),
        ("storage", without_password(str(config.get("storage") or DEFAULT_STORAGE))),  # null: the default
    ]
    rows = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in facts if v)
    block = f'<section id="provenance" class="provenance"><table class="provenance">{rows}</table></section>'
    return f"courtroom study: {info.get('study', folder.name)}", sections, block


def _tied_html(tied: dict[str, Any], table: Any, tested: bool = False) -> str:
    """The set tied with the best, then the excluded configurations, each with its dev cases, p and configuration.

    ``tested``: the study scored its chosen trial on the test split (``test.csv``).
    """
    from courtroom.optimize.study.tied import alike, described

    members = list(tied.get("members") or [])
    stopped = list(tied.get("stopped") or [])
    every = [*members, *stopped]
    configs = [({"design": m["design"]} if m.get("design") else {}) | dict(m.get("config") or {}) for m in every]
    said = alike(configs)
    rows = []
    for i, (m, config) in enumerate(zip(every, configs, strict=True)):
        best = m.get("trial") == tied.get("best")
        kind = "stopped" if i >= len(members) else "best" if best else ("yes" if m.get("tied") else "no")
        same = ", ".join(str(n) for n in m.get("same") or [])
        rows.append(
            {
                "trial": m.get("trial"),
                "tied": kind,
                "exported": "yes" if m.get("trial") == tied.get("exported") else "",
                "dev cases": number(m.get("dev_cases")),
                "accuracy": f"{m.get('accuracy', 0):.3f}",
                f"cost per case ({members[0].get('cost_unit', 'calls') if members else 'calls'})": number(
                    m.get("cost_per_case")
                ),
                "p vs best": "" if best else f"{m.get('p', 1):.3g}",
                "p (Holm)": "" if best or kind == "stopped" else f"{m.get('p_holm', 1):.3g}",
                "configuration": described(config, said=said) + (f" (also trial {same})" if same else ""),
            }
        )
    n_tied = sum(1 for m in members if m.get("tied"))
    chosen = "Chosen" + (" and tested" if tested else "")
    note = (
        f"<p class=shown>{n_tied} of {len(rows)} configurations are not significantly worse than the best "
        f"(trial {tied.get('best')}, {tied.get('dev_cases')} dev cases; {html.escape(str(tied.get('test')))}, "
        f"family-wise level {tied.get('level')})"
        + (f"; {len(stopped)} stopped early by the race" if stopped else "")
        + ". p vs best: raw, of being worse than the best on the cases both saw; p (Holm): corrected, the "
        f"smallest of being worse than any other. {chosen}: trial {tied.get('exported')}, the "
        f"{html.escape(str(tied.get('prefer')))} of the tied set.</p>"
    )
    if said:
        values = ", ".join(f"{k}={number(v)}" for k, v in said.items())
        note += f"<p class=shown>Every configuration: {html.escape(values)}.</p>"
    return note + table(pd.DataFrame(rows).set_index("trial"))


__all__ = ["is_study_folder", "study_sections"]
