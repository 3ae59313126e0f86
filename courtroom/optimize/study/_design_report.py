"""Outputs of a study over designs: per-design table, Pareto front by design, exported best trial.

The best trial is exported as a config, or (with ``--compile``) as its compiled program file.

Writing files is kept apart from running trials (STYLE: scoring stays pure).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.optimize.study._dedupe import pareto_front
from courtroom.optimize.study.report import best_trial, score_of, write_report


def _complete(study: Any) -> list[Any]:
    from optuna.trial import TrialState

    return study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))


def design_table(study: Any) -> pd.DataFrame:
    """Per design: trials run, completed, best score, LM calls, and the calls the cache served.

    A trial's score is the accuracy its tied set reads (on all its dev cases, where the race extended
    it: :func:`~courtroom.optimize.study.tied.dev_score`), else its objective's value.
    """
    rows: dict[str, dict[str, Any]] = {}
    for t in study.get_trials(deepcopy=False):
        design = t.user_attrs.get("design") or t.params.get("design")
        if design is None:
            continue
        row = rows.setdefault(
            design,
            {"design": design, "trials": 0, "complete": 0, "best_score": None, "calls": 0, "sent": 0, "cached": 0},
        )
        row["trials"] += 1
        for k in ("calls", "sent", "cached"):
            row[k] += int(t.user_attrs.get(k) or 0)
        if t.state.name == "COMPLETE":
            row["complete"] += 1
            best, mine = row["best_score"], score_of(study, t)
            row["best_score"] = mine if best is None else max(best, mine)
    return pd.DataFrame(list(rows.values()))


def design_pareto(study: Any) -> pd.DataFrame:
    """The Pareto front across designs (score up, cost per example down), labelled by design."""
    rows = [
        {
            "number": t.number,
            "design": t.user_attrs.get("design"),
            "score": score_of(study, t),  # the accuracy its tied set reads
            "cost_per_example": t.values[1],
            "cost_unit": t.user_attrs.get("cost_unit"),
            "params": json.dumps(t.user_attrs.get("config") or {}, sort_keys=True),
        }
        for t in pareto_front(study)
    ]
    return pd.DataFrame(rows).sort_values(["cost_per_example", "score"]) if rows else pd.DataFrame()


def plot_design_pareto(study: Any, path: Path, note: str | None = None) -> Path | None:
    """Every completed trial as a point coloured by design; the front as a step line; ``note`` under it."""
    from courtroom.reporting.plots import plt, stamp

    done = [t for t in _complete(study) if len(t.values) > 1]
    if not done:
        return None
    fig, ax = plt.subplots(figsize=(8, 5))
    for design in sorted({t.user_attrs.get("design") for t in done}):
        pts = [t for t in done if t.user_attrs.get("design") == design]
        ax.scatter([t.values[1] for t in pts], [t.values[0] for t in pts], label=design, alpha=0.7)
    front = design_pareto(study)
    ax.step(front["cost_per_example"], front["score"], where="post", color="black", lw=1, label="Pareto front")
    for _, r in front.iterrows():
        ax.annotate(str(r["design"]), (r["cost_per_example"], r["score"]), fontsize=7)
    unit = done[0].user_attrs.get("cost_unit", "cost")
    ax.set_xlabel(f"{unit} per example")
    ax.set_ylabel("score")
    ax.set_title(f"{study.study_name}: Pareto front by design (score vs {unit} per example)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    stamp(fig, note)
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.08)
    plt.close(fig)
    return path


def write_design_report(
    study: Any, out: str | Path, config: dict[str, Any] | None = None, models: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """The study report (:func:`write_report`) plus ``designs.csv`` and a design-labelled Pareto front."""
    from courtroom.runner.provenance import study_provenance, subtitle

    out = Path(out)
    written = write_report(study, out, config, models)
    design_table(study).to_csv(out / "designs.csv", index=False)
    written["designs"] = out / "designs.csv"
    if len(study.directions) > 1:
        design_pareto(study).to_csv(out / "pareto.csv", index=False)
        written["pareto_table"] = out / "pareto.csv"
        plotted = plot_design_pareto(study, out / "pareto.png", subtitle(study_provenance(study, config, models)))
        if plotted:
            written["pareto"] = plotted
    return written


def export_design_program(
    study: Any,
    config: Any,
    path: str | Path,
    *,
    base: Any,
    train: Sequence[Any],
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any] | None = None,
    test: Mapping[int, Mapping[str, Any]] | None = None,
) -> Path:
    """Rebuild and recompile the best trial (its calls come from the cache) and save its program file.

    The file is ready for ``courtroom.load``; its metadata names the study and the trial.
    """
    from courtroom.optimize.study.designs import DESIGN, build_trial_program
    from courtroom.saving import save_program

    trial = best_trial(study)
    design = trial.user_attrs["design"]
    params = {DESIGN: design} | {f"{design}.{k}": v for k, v in (trial.user_attrs.get("config") or {}).items()}
    program = build_trial_program(config, params, base, train, labels, positions, dict(model_objects or {}))
    meta = {
        "task": {"name": config.task},
        "optimizer": {"name": config.compile, "settings": dict(config.compile_settings)},
        "study": {"name": study.study_name, "trial": trial.number, "values": list(trial.values)}
        | ({"test": dict(test[trial.number])} if test and trial.number in test else {}),
    }
    return save_program(program, path, meta)
