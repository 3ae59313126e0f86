"""``courtroom study FRAMEWORK --task T --trials N``: an Optuna study over the framework's knobs."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom import _stop
from courtroom.cli._app import app
from courtroom.cli._options import experiment
from courtroom.spec import Experiment

SHOWN = ("number", "state", "accuracy", "macro_f1", "calls_per_example", "sent", "cached")


@app.command("study")
@experiment("study")
def study_command(
    framework: Annotated[
        str | None,
        typer.Argument(help="Framework name (jot, courtroom-llm, debate-feedback, ...); or use --frameworks."),
    ] = None,
    *,
    spec: Experiment,
) -> None:
    """Search FRAMEWORK's knobs (or several designs) with Optuna; print the trials, write the report and export."""
    from courtroom.api import estimate, study
    from courtroom.cli._values import check_providers, inputs_of, writable_file, writable_folder

    check_providers(spec.models.lm, [f"{r}={m}" for r, m in spec.models.roles.items()])
    if spec.output.out:
        writable_folder(spec.output.out, "--out")
    if spec.output.export_best:
        writable_file(spec.output.export_best, "--export-best", "best.json", inputs_of(spec))
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec))
    outcome = study(spec=spec)
    from courtroom.reporting.tables import stdout_console, terminal_width

    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    console.print(f"study {outcome.study.study_name}: {len(outcome.study.trials)} trial(s) in storage")
    if spec.study.trials == 0:
        return
    from courtroom.optimize.studies import is_design_study

    if fmt != "table":
        _print_data(outcome, fmt)
    elif is_design_study(outcome.config):
        _print_designs(outcome, console)
    else:
        _print_trials(outcome, console)
    if outcome.report_dir is None:
        failed = [t for t in outcome.study.trials if t.state.name == "FAIL"]
        if failed:  # every trial this study holds failed or was cut short: nothing to report, an error
            from courtroom.errors import CourtroomError

            why = failed[-1].user_attrs.get("error", "see the trials table")
            raise CourtroomError(
                f"no trial completed: {len(failed)} of {len(outcome.study.trials)} failed (the last: {why}); "
                "fix that, then run the same command again (the study keeps its trials)"
            )
        console.print("no trial completed: see the trials table")
        return
    from courtroom.optimize.study_report import best_trial

    best = best_trial(outcome.study)
    what = f"{best.user_attrs.get('design')} " if is_design_study(outcome.config) else ""
    params = best.user_attrs.get("config", best.params)
    console.print(f"best trial {best.number}: {what}values {list(best.values)} params {params}")
    if outcome.test:
        from courtroom.optimize.holdout import test_table

        console.print("on the test split, beside the dev score that chose each (95% Wilson; test cases no trial saw):")
        console.print(test_table(outcome.test).to_string(index=False), markup=False)
    console.print(f"report: {outcome.report_dir}")
    export = spec.output.export_best
    if outcome.program_path is not None:
        path = outcome.program_path
        predict = _stop.with_flags(f"courtroom predict {path}")  # --api-base: never on disk, so in every hint
        console.print(f"best program: {path} (use: courtroom.load({str(path)!r}) or {predict})")
    elif export:
        console.print(f"best config: {export} (use: {_stop.with_flags(f'courtroom compile --config {export}')})")


TRIAL_HEADERS = {
    "number": "trial",
    "calls_per_example": "calls/ex",
    "macro_f1": "F1",
    "accuracy": "accuracy",
    "duplicate_of": "reused from",
}
"""Headers for the terminal (``trials.csv`` keeps the column names)."""


def _print_trials(outcome: Any, console: Console) -> None:
    """The trials table of a study over one framework, its failures and (with cost) its Pareto front.

    The key columns (trial, state, score, calls per example) always; the searched parameters,
    usage and errors while they fit the terminal (all of them: ``trials.csv``, or ``--format``).
    """
    from courtroom.optimize.study_report import pareto_table
    from courtroom.reporting.tables import fitted

    study, df = outcome.study, outcome.table
    first = ("number", "state", "accuracy", "calls_per_example")  # then the searched knobs, then usage
    cols = [c for c in first if c in df.columns] + [p.name for p in outcome.space if p.name in df.columns]
    cols += [c for c in SHOWN if c in df.columns and c not in cols] + (["error"] if "error" in df.columns else [])
    cols += ["duplicate_of"] if "duplicate_of" in df.columns else []

    def cell(v: Any) -> str:
        return "" if str(v) in ("nan", "None", "<NA>") else (f"{v:.3f}" if isinstance(v, float) else str(v)[:60])

    counts = [c for c in ("duplicate_of", "sent", "cached", "calls", "failures") if c in df.columns]
    # Counts stay whole where a repeated trial leaves them blank (a column with a NaN turns float).
    df = df.assign(**{c: df[c].round().astype("Int64") for c in counts})
    shown = df[cols].set_index("number").map(cell)
    key = ("state", "accuracy", "calls_per_example")
    console.print(fitted(shown, key, console.width, title=f"{outcome.config.framework} on {outcome.config.task}",
                         headers=TRIAL_HEADERS))  # fmt: skip
    reused = [t for t in study.trials if "duplicate_of" in t.user_attrs]
    if reused:
        console.print(
            f"{len(reused)} trial(s) repeated a configuration that had run: its stored value was reused "
            "(nothing sent, not counted against --trials)"
        )
    failed = [t for t in study.trials if t.state.name == "FAIL"]
    if failed:
        console.print(f"{len(failed)} trial(s) failed of {len(study.trials)}:", markup=False)
        for t in failed:
            error = t.user_attrs.get("error", "no error recorded (its worker died)")
            console.print(f"  trial {t.number}: {error}", markup=False, soft_wrap=True)
    if outcome.config.cost_objective:
        console.print("Pareto front (score up, calls per example down):")
        console.print(pareto_table(study).to_string(index=False), markup=False)


def _print_data(outcome: Any, fmt: str) -> None:
    """The whole trials table (a design study: one row per design) on stdout as md, csv or json."""
    from courtroom.optimize.studies import is_design_study
    from courtroom.reporting.tables import print_data

    if is_design_study(outcome.config):
        from courtroom.optimize._design_report import design_table

        table = design_table(outcome.study)
        print_data(fmt, table.set_index("design") if "design" in table.columns else table)
    elif outcome.table is not None:
        print_data(fmt, outcome.table.set_index("number") if "number" in outcome.table.columns else outcome.table)


def _print_designs(outcome: Any, console: Console) -> None:
    """Per design (calls, cached) and, with cost, the Pareto front across designs."""
    from courtroom.optimize._design_report import design_pareto, design_table
    from courtroom.reporting.tables import fitted

    console.print("per design (calls: made by the programs; cached: served from the shared cache):")
    table = design_table(outcome.study)
    if table.empty:
        return
    shown = table.set_index("design").map(lambda v: f"{v:.3f}" if isinstance(v, float) else str(v))
    console.print(fitted(shown, ("trials", "complete", "best_score", "calls"), console.width,
                         right=list(shown.columns)))  # fmt: skip
    if outcome.config.cost_objective:
        console.print(f"Pareto front across designs (score up, {outcome.config.cost} per example down):")
        console.print(design_pareto(outcome.study).to_string(index=False), markup=False)
