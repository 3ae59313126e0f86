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
    keep = [c for c in df.columns if c not in ("worker", "heartbeat", "config", "outcomes", "race_looks", "asked")]
    return _extended(study, df[keep])


def _extended(study: Any, df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with each trial the race extended at its accuracy on all its dev cases (``examples``): the set's figure.

    Optuna's ``value`` (and F1) stay the ``--dev-limit`` scores the trial ran on.
    """
    from courtroom.optimize.study.race import EXTENDED, accuracy

    extended = study.user_attrs.get(EXTENDED) or {}
    if not extended or "number" not in df.columns or "accuracy" not in df.columns:
        return df
    df = df.copy()
    for number, record in extended.items():
        at = df["number"] == int(number)
        df.loc[at, "accuracy"] = accuracy(str(record))
        if "examples" in df.columns:
            df.loc[at, "examples"] = len(str(record))
    return df


def shown_trials(study: Any, table: pd.DataFrame) -> pd.DataFrame:
    """``table`` without the rows a reader skips: repeats (a stored value) and stopped runs a later trial continued."""
    from courtroom.optimize.study.race import CONTINUES

    continued = {int(t.user_attrs[CONTINUES]) for t in study.get_trials(deepcopy=False) if CONTINUES in t.user_attrs}
    hidden = continued | {t.number for t in study.get_trials(deepcopy=False) if "duplicate_of" in t.user_attrs}
    return table[~table["number"].isin(hidden)] if "number" in table.columns else table


def tied_table(study: Any) -> pd.DataFrame:
    """The set tied with the best (:mod:`courtroom.optimize.study.tied`), then the excluded ones; empty without a set.

    One row per configuration: ``tied`` (``best``, ``yes``, ``no``, or ``stopped`` by the race), ``exported``,
    its ``design`` (a study across designs), ``dev_cases``, ``accuracy`` on them, ``cost_per_case``, ``p``
    (raw, "worse than the best") and ``p_holm`` (corrected, "worse than any"), ``same`` (later trials of
    the same configuration), and its values.
    """
    from courtroom.optimize.study.tied import preference, tied_set

    found = tied_set(study)
    if found is None:
        return pd.DataFrame()
    exported = found.pick(preference(study)).number
    designs = any(m.design for m in found.members)
    rows = [
        {
            "number": m.number,
            "tied": "best" if m.number == found.best else ("yes" if m.tied else "no"),
            "exported": "yes" if m.number == exported else "",
            **({"design": m.design} if designs else {}),
            "dev_cases": m.cases,
            "accuracy": m.accuracy,
            "cost_per_case": m.cost,
            "p": m.p if m.number != found.best else None,
            "p_holm": m.p_holm if m.number != found.best else None,
            "same": ", ".join(str(n) for n in m.same),
            **m.config,
        }
        for m in found.members
    ]
    rows += [  # the configurations the race stopped: worse than the incumbent on the cases they saw
        {
            "number": s.number,
            "tied": "stopped",
            "exported": "",
            **({"design": s.design} if designs else {}),
            "dev_cases": s.cases,
            "accuracy": s.accuracy,
            "cost_per_case": s.cost,
            "p": s.p,
            "p_holm": None,
            "same": "",
            **s.config,
        }
        for s in found.stopped
    ]
    return pd.DataFrame(rows)


def tied_summary(study: Any) -> dict[str, Any] | None:
    """The tied set as ``study.json`` and the recipe keep it; None without one."""
    from courtroom.optimize.study.tied import preference, tied_set

    found = tied_set(study)
    return found.to_dict(preference(study)) if found is not None else None


def score_of(study: Any, trial: Any) -> float:
    """The trial's dev score as every output shows it: the tied set's accuracy where it has one, else its value."""
    from courtroom.optimize.study.tied import dev_score

    scored = dev_score(study, trial)
    return scored[0] if scored is not None else float(trial.values[0])


def _best_entry(study: Any, trial: Any) -> dict[str, Any]:
    """A chosen trial in ``study.json``: its values and parameters, and the dev accuracy and cases the set reads."""
    from courtroom.optimize.study.tied import dev_score

    entry = {"number": trial.number, "values": list(trial.values), "params": trial.params}
    scored = dev_score(study, trial)
    if scored is not None:
        entry |= {"accuracy": round(scored[0], 4), "dev_cases": scored[1]}
    if "design" in trial.user_attrs:
        entry["design"] = trial.user_attrs["design"]
    return entry


def pareto_table(study: Any) -> pd.DataFrame:
    """The Pareto front of a two-objective study (score up, cost per example down).

    A member's score is the accuracy its tied set reads (:func:`score_of`); the front is Optuna's. The
    cost column is in the study's unit: ``calls_per_example``, ``tokens_per_example`` or
    ``dollars_per_example``.
    """
    front = pareto_front(study)
    column = f"{cost_unit(front)}_per_example"
    rows = [{"number": t.number, "score": score_of(study, t), column: t.values[1], **t.params} for t in front]
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
        "best": [_best_entry(study, t) for t in best],
        "tied": tied_summary(study),
        "provenance": about.to_dict(),
    }
    (out / "study.json").write_text(json.dumps(summary, indent=2, default=str))
    written["summary"] = out / "study.json"
    return written
