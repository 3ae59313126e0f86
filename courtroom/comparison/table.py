"""A comparison's table and the files written beside it.

Rows: frameworks; columns: accuracy, macro-F1, failures, calls, tokens, cost, time (a repeat
group's means, with the accuracy's spread), and each matched vote with its McNemar test when
baselines are matched. :func:`write_tables` writes ``table.csv``, ``table.md``,
``analyses.json`` and ``comparison.json`` and returns the :class:`Comparison`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom._files import read_json, write_atomic, write_json
from courtroom.analysis import papers as analysis
from courtroom.analysis.calibration import scores
from courtroom.analysis.flips import flip_matrix
from courtroom.eval.harness import ExampleResult
from courtroom.models.cache import without_base_url
from courtroom.reporting.formatting import readable_table
from courtroom.runner.config import RunConfig
from courtroom.runner.repeats import RepeatOutcome
from courtroom.runner.runs import RunOutcome
from courtroom.runner.sessions import evaluation_spend

COLUMNS = (
    "accuracy",
    "macro_f1",
    "n",
    "failures",
    "calls",
    "sent",
    "cached",
    "tokens",
    "cached_tokens",
    "cost",
    "wall_seconds",
    "brier",
    "ece",
)


@dataclass
class Comparison:
    """A finished comparison (``courtroom.compare``, ``courtroom compare``)."""

    out_dir: Path
    """The comparison folder: ``table.csv``, ``comparison.json``, the plots and one run folder per row."""
    table: pd.DataFrame
    """One row per framework (and matched baseline): accuracy, macro-F1, calls, tokens, cost, ... as ``table.csv``."""
    runs: dict[str, str]
    """Framework -> its run folder or repeat group (relative to ``out_dir``)."""
    analyses: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Analysis name -> its result (McNemar tests between rows, flips, position bias, ...)."""
    plots: dict[str, Path] = field(default_factory=dict)
    """Plot name -> its PNG file."""
    failed: dict[str, str] = field(default_factory=dict)
    """Framework -> why its run failed (more failed examples than ``fail_on_error`` allows)."""


def _metric(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Under ``--metric``: its name, and the label-match accuracy beside its mean (``accuracy``)."""
    if not summary.get("metric"):
        return {}
    return {"metric": summary["metric"], "label_accuracy": summary.get("label_accuracy")}


def table_row(outcome: RunOutcome | RepeatOutcome) -> dict[str, Any]:
    """A row of the comparison table: a run's figures, or a repeat group's means (with the spread)."""
    # The evaluation's spend: a run's one-off training calls (prepare) stay out of per-example figures.
    # ``training_sent`` says how many more the run folder's own ``sent`` counts (its summary.json).
    if isinstance(outcome, RunOutcome):
        return (
            {c: outcome.summary.get(c) for c in COLUMNS}
            | evaluation_spend(outcome.summary)
            | {"training_sent": outcome.summary.get("training_sent") or 0}
            | _metric(outcome.summary)
        )
    row = {c: outcome.stats[c]["mean"] if c in outcome.stats else None for c in COLUMNS}
    for c in ("cached", "cached_tokens"):
        row[c] = sum(o.summary.get(c, 0) for o in outcome.outcomes) / len(outcome.outcomes)
    spends = [evaluation_spend(o.summary) for o in outcome.outcomes]
    for c in ("sent", "tokens"):
        row[c] = sum(s[c] for s in spends) / len(spends)
    row["training_sent"] = sum(o.summary.get("training_sent") or 0 for o in outcome.outcomes) / len(outcome.outcomes)
    costs = [s["cost"] for s in spends]
    row["cost"] = None if any(c is None for c in costs) else sum(costs) / len(costs)
    row["n"] = outcome.outcomes[0].summary.get("n")
    for c in ("brier", "ece"):
        values = [o.summary[c] for o in outcome.outcomes if o.summary.get(c) is not None]
        row[c] = sum(values) / len(values) if values else None
    acc = outcome.stats["accuracy"]
    row.update(
        accuracy_sd=acc["sd"],
        accuracy_ci_low=acc["ci_low"],
        accuracy_ci_high=acc["ci_high"],
        macro_f1_sd=outcome.stats["macro_f1"]["sd"],
        repeats=len(outcome.outcomes),
    )
    return row


def first_results(outcome: RunOutcome | RepeatOutcome) -> tuple[Path, list[ExampleResult]]:
    """The run folder and example results of a run, or of a repeat group's first repeat (read from its folder)."""
    first = outcome if isinstance(outcome, RunOutcome) else outcome.outcomes[0]
    return first.run_dir, list(first.results)


def write_tables(
    out_dir: Path,
    task: str,
    frameworks: Sequence[str],
    outcomes: Mapping[str, Any],
    configs: Mapping[str, RunConfig],
    matches: Mapping[str, Sequence[str]] | None = None,
) -> Comparison:
    """Write ``table.csv``, ``table.md``, ``analyses.json`` and ``comparison.json``; the comparison, plots not drawn."""
    from courtroom.comparison.matched import cost_columns

    table = pd.DataFrame([table_row(outcomes[f]) for f in frameworks], index=pd.Index(frameworks, name="framework"))
    table = cost_columns(table)
    if matches:
        from courtroom.comparison.significance import add_mcnemar

        table["matches"] = [", ".join(matches.get(f, ())) for f in frameworks]
        table = add_mcnemar(table, {f: first_results(outcomes[f])[1] for f in frameworks}, matches)
    table.to_csv(out_dir / "table.csv")
    write_atomic(out_dir / "table.md", f"# {task}\n\n" + analysis.markdown_table(readable_table(table)))
    runs, analyses = {}, {}
    for f in frameworks:
        o = outcomes[f]
        runs[f] = str((o.run_dir if isinstance(o, RunOutcome) else o.group_dir).relative_to(out_dir))
        run_dir, results = first_results(o)
        meta = read_json(run_dir / "meta.json", "start a new comparison")
        analyses[f] = _jsonable(analysis.analyze(results, meta.get("framework_config")))
        flipped = flip_matrix(results, configs[f].framework, meta["task"]["labels"], meta["task"].get("positions"))
        if flipped is not None:
            analyses[f]["flips"] = flipped
        calibration = scores([r.to_dict() for r in results])
        if calibration:
            analyses[f]["calibration"] = calibration
        if isinstance(o, RepeatOutcome):
            analyses[f]["repeat_accuracies"] = [x.summary["accuracy"] for x in o.outcomes]
    write_json(out_dir / "analyses.json", analyses)
    first = configs[frameworks[0]]
    (out_dir / "comparison.json").write_text(
        json.dumps(
            {
                "task": task,
                "frameworks": list(frameworks),
                "runs": runs,
                "matched_baselines": {k: list(v) for k, v in (matches or {}).items()},
                "config": without_base_url(
                    {k: v for k, v in vars(first).items() if k not in ("framework", "knobs", "spec")}
                )
                | {"knobs": {f: c.knobs for f, c in configs.items()}},
                "spec": first.spec,
            },
            indent=2,
        )
    )
    return Comparison(out_dir, table, runs, analyses)


def _jsonable(value: Any) -> Any:
    if isinstance(value, pd.DataFrame):
        return value.to_dict("records")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value
