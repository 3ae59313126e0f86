"""Study outputs: the trials table (pandas, CSV), plots, the Pareto front and the best config.

The best trial's recipe for ``compile`` is written by :mod:`courtroom.optimize.recipes`.

Writing files is kept apart from running trials (STYLE: scoring stays pure).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.optimize.study._dedupe import chosen, pareto_front

log = logging.getLogger(__name__)
USAGE_COLUMNS = (
    "accuracy",
    "macro_f1",
    "failures",
    "calls",
    "sent",
    "cached",
    "calls_per_example",
    "seconds",
)


def trials_table(study: Any) -> pd.DataFrame:
    """One row per trial: number, state, values, parameters and usage."""
    df = study.trials_dataframe(
        attrs=(
            "number",
            "state",
            "value" if len(study.directions) == 1 else "values",
            "params",
            "user_attrs",
            "duration",
        )
    )
    df.columns = [c.replace("user_attrs_", "").replace("params_", "") for c in df.columns]
    keep = [c for c in df.columns if c not in ("worker", "heartbeat", "config", "outcomes", "race_looks")]
    return df[keep]


def shown_trials(study: Any, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` without the rows a reader skips: repeats (a stored value) and stopped runs a later trial continued."""
    from courtroom.optimize.study.race import CONTINUES

    continued = {int(t.user_attrs[CONTINUES]) for t in study.get_trials(deepcopy=False) if CONTINUES in t.user_attrs}
    hidden = continued | {t.number for t in study.get_trials(deepcopy=False) if "duplicate_of" in t.user_attrs}
    return table[~table["number"].isin(hidden)] if "number" in table.columns else table


def tied_table(study: Any) -> pd.DataFrame:
    """The configurations beside the best (:mod:`courtroom.optimize.study.tied`), tied ones first; empty without."""
    from courtroom.optimize.study.tied import preference, tied_set

    found = tied_set(study)
    if found is None:
        return pd.DataFrame()
    exported = found.pick(preference(study)).number
    rows = [
        {
            "number": m.number,
            "tied": "best" if m.number == found.best else ("yes" if m.tied else "no"),
            "exported": "yes" if m.number == exported else "",
            "accuracy": m.accuracy,
            "cost_per_case": m.cost,
            "p_holm": m.p_holm if m.number != found.best else None,
            **m.config,
        }
        for m in found.members
    ]
    rows += [  # the configurations the race stopped: worse than the incumbent on the cases they saw
        {
            "number": t.number,
            "tied": "stopped",
            "exported": "",
            "accuracy": t.user_attrs.get("accuracy"),
            "cost_per_case": t.user_attrs.get("cost_per_example", t.user_attrs.get("calls_per_example")),
            "p_holm": None,
            **dict(t.user_attrs.get("config", t.params)),
        }
        for t in _stopped(study)
    ]
    return pd.DataFrame(rows)


def _stopped(study: Any) -> list[Any]:
    """Trials the race stopped whose configuration no later trial continued."""
    from optuna.trial import TrialState

    from courtroom.optimize.study.race import CONTINUES

    trials = study.get_trials(deepcopy=False)
    continued = {int(t.user_attrs[CONTINUES]) for t in trials if CONTINUES in t.user_attrs}
    return [
        t
        for t in trials
        if t.state == TrialState.PRUNED and (t.user_attrs.get("race") or {}).get("stop") and t.number not in continued
    ]


def tied_summary(study: Any) -> dict[str, Any] | None:
    """The tied set as ``study.json`` and the recipe keep it; None without one."""
    from courtroom.optimize.study.tied import preference, tied_set

    found = tied_set(study)
    return found.to_dict(preference(study)) if found is not None else None


def pareto_table(study: Any) -> pd.DataFrame:
    """The Pareto front of a two-objective study (score up, cost per example down).

    The cost column is in the study's unit: ``calls_per_example``, ``tokens_per_example`` or
    ``dollars_per_example``.
    """
    front = pareto_front(study)
    column = f"{cost_unit(front)}_per_example"
    rows = [{"number": t.number, "score": t.values[0], column: t.values[1], **t.params} for t in front]
    return pd.DataFrame(rows).sort_values(column) if rows else pd.DataFrame()


def cost_unit(trials: Any) -> str:
    """The unit the trials' cost is in (``cost_unit``, recorded by a priced study; else calls)."""
    return next((str(t.user_attrs["cost_unit"]) for t in trials if "cost_unit" in t.user_attrs), "calls")


def best_trial(study: Any) -> Any:
    """The best trial; for a Pareto front, its highest-scoring member (then the cheapest)."""
    best = chosen(study)
    if not best:
        raise ValueError("no trial of the study completed")
    return sorted(best, key=lambda t: (-t.values[0], t.values[1]))[0] if len(study.directions) > 1 else best[0]


TITLES = {
    "history": "score by trial",
    "importances": "parameter importances (fANOVA)",
    "pareto": "Pareto front: score vs calls per example",
}
"""Plot name -> what its title says (after the study's name), so no two plots share a title."""


def _plot(name: str, draw: Any, out: Path, *, title: str = "", note: str | None = None) -> Path | None:
    """Draw one Optuna plot, give it ``title`` and the provenance ``note``, save it as ``{name}.png``."""
    from matplotlib.ticker import MaxNLocator

    from courtroom.reporting.plots import plt, stamp

    try:
        ax = draw()
    except (ValueError, RuntimeError, ZeroDivisionError) as exc:  # too few trials, no variation
        log.info("skipped the %s plot: %s", name, exc)  # not a fault: the report has the trials without it
        plt.close("all")
        return None
    first = ax.flat[0] if hasattr(ax, "flat") else ax
    fig = first.get_figure()
    if title:  # ours replaces Optuna's, wherever Optuna put it (importances: on the left, drawn over ours)
        for loc in ("left", "right"):
            first.set_title("", loc=loc)
        first.set_title(title)
    if name == "history":  # trials are counted: no 2.5th trial
        first.xaxis.set_major_locator(MaxNLocator(integer=True))
    fig.set_size_inches(8, 5)
    fig.tight_layout()
    stamp(fig, note)
    path = out / f"{name}.png"
    fig.savefig(path, dpi=100, bbox_inches="tight", pad_inches=0.08)
    plt.close("all")
    return path


def write_report(
    study: Any,
    out: str | Path,
    config: dict[str, Any] | None = None,
    models: Mapping[str, Any] | None = None,
) -> dict[str, Path]:
    """Write ``trials.csv``, ``pareto.csv`` (two objectives), plots and ``study.json`` under ``out``.

    Each plot names what ran under it (:func:`courtroom.runner.provenance.study_provenance`:
    ``config``, the role ``models`` the trials ran on, the trials), as does ``study.json``.
    """
    import warnings

    from optuna.exceptions import ExperimentalWarning
    from optuna.importance import FanovaImportanceEvaluator
    from optuna.visualization import matplotlib as vis

    from courtroom.runner.provenance import study_provenance, subtitle

    about = study_provenance(study, config, models)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    table = trials_table(study)
    table.to_csv(out / "trials.csv", index=False)
    written["trials"] = out / "trials.csv"
    multi = len(study.directions) > 1
    target = (lambda t: t.values[0]) if multi else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ExperimentalWarning)
        plots = {
            "history": lambda: vis.plot_optimization_history(study, target=target, target_name="score"),
            "importances": lambda: vis.plot_param_importances(
                study, target=target, target_name="score", evaluator=FanovaImportanceEvaluator(seed=0)
            ),
        }
        if multi:
            pareto_table(study).to_csv(out / "pareto.csv", index=False)
            written["pareto_table"] = out / "pareto.csv"
            plots["pareto"] = lambda: vis.plot_pareto_front(study, target_names=["score", "calls per example"])
        for name, draw in plots.items():
            path = _plot(name, draw, out, title=f"{study.study_name}: {TITLES[name]}", note=subtitle(about))
            if path:
                written[name] = path
    best = chosen(study)
    summary = {
        "study": study.study_name,
        "config": config or {},
        "trials": len(table),
        "best": [{"number": t.number, "values": list(t.values), "params": t.params} for t in best],
        "tied": tied_summary(study),
        "provenance": about.to_dict(),
    }
    (out / "study.json").write_text(json.dumps(summary, indent=2, default=str))
    written["summary"] = out / "study.json"
    return written
