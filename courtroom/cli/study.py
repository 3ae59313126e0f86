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
        _not_the_storage(spec)
        writable_folder(spec.output.out, "--out")
    if spec.output.export_best:
        writable_file(spec.output.export_best, "--export-best", "best.json", inputs_of(spec))
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec))
    outcome = study(spec=spec)
    from courtroom.reporting.tables import say, stdout_console, terminal_width

    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    say(console, f"study {outcome.study.study_name}: {len(outcome.study.trials)} trial(s) in storage")
    if spec.design.metric not in (None, "accuracy"):  # the tables' accuracy is the metric's mean
        say(console, f"accuracy: the mean of --metric {spec.design.metric} over the cases")
    if spec.study.trials == 0:
        return
    from courtroom.optimize.study.pipeline import is_design_study

    if fmt != "table":
        _print_data(outcome, fmt)
    elif is_design_study(outcome.config):
        _print_designs(outcome, console)
        _print_tied(outcome, console, exported=bool(spec.output.export_best))
    else:
        _print_trials(outcome, console, show_repeats=spec.study.show_repeats)
        _print_tied(outcome, console, exported=bool(spec.output.export_best))
    if outcome.report_dir is None:
        failed = [t for t in outcome.study.trials if t.state.name == "FAIL"]
        if failed:  # every trial this study holds failed or was cut short: nothing to report, an error
            from courtroom.errors import CourtroomError

            why = failed[-1].user_attrs.get("error", "see the trials table")
            raise CourtroomError(
                f"no trial completed: {len(failed)} of {len(outcome.study.trials)} failed (the last: {why}); "
                "fix that, then run the same command again (the study keeps its trials)"
            )
        say(console, "no trial completed: see the trials table")
        return
    from courtroom.optimize.study.report import best_trial

    say(console, best_line(outcome, best_trial(outcome.study)))
    if outcome.test:
        from courtroom.optimize.study.holdout import test_table

        say(console, "on the test split, beside the dev score that chose each (95% Wilson; test cases no trial saw):")
        tested = test_table(outcome.test).set_index("trial")
        dev = next(c for c in tested.columns if c.startswith("dev ") and c != "dev design")
        _print_frame(console, tested, ("design", dev, "test accuracy", "test 95% CI"))
    say(console, f"report: {outcome.report_dir} (courtroom report {outcome.report_dir} -o study.html)")
    export = spec.output.export_best
    if outcome.program_path is not None:
        path = outcome.program_path
        predict = _stop.with_flags(f"courtroom predict {path}")  # --api-base: never on disk, so in every hint
        say(console, f"best program: {path} (use: courtroom.load({str(path)!r}) or {predict})")
    elif export:
        say(console, f"best config: {export} (use: {_stop.with_flags(f'courtroom compile --config {export}')})")


TRIAL_HEADERS = {
    "number": "trial",
    "calls_per_example": "calls/ex",
    "cost_per_example": "cost/ex",
    "macro_f1": "F1",
    "accuracy": "accuracy",
    "duplicate_of": "reused from",
    "cost_unit": "unit",
    "cost_per_case": "cost/case",
    "p_holm": "p (Holm)",
}
"""Headers for the terminal (``trials.csv`` keeps the column names)."""


def _print_trials(outcome: Any, console: Console, *, show_repeats: bool = False) -> None:
    """The trials table of a study over one framework, its failures and (with cost) its Pareto front.

    The key columns (trial, state, score, calls per example) always; the searched parameters,
    usage and errors while they fit the terminal (all of them: ``trials.csv``, or ``--format``).
    Repeats and stopped runs a later trial continued are left out unless ``show_repeats``.
    """
    from courtroom.optimize.study._attrs import why_failed
    from courtroom.optimize.study.report import pareto_table, shown_trials
    from courtroom.reporting.tables import say

    study, df = outcome.study, outcome.table
    df = df if show_repeats else shown_trials(study, df)
    first = ("number", "state", "accuracy", "calls_per_example")  # then the searched knobs, then usage
    cols = [c for c in first if c in df.columns] + [p.name for p in outcome.space if p.name in df.columns]
    cols += [c for c in SHOWN if c in df.columns and c not in cols] + (["error"] if "error" in df.columns else [])
    cols += ["duplicate_of"] if "duplicate_of" in df.columns and df["duplicate_of"].notna().any() else []

    shown = df[cols].set_index("number")
    key = ("state", "accuracy", "calls_per_example")
    _print_frame(console, shown, key, title=f"{outcome.config.framework} on {outcome.config.task}")
    reused = [t for t in study.trials if "duplicate_of" in t.user_attrs]
    if reused:
        say(
            console,
            f"{len(reused)} trial(s) repeated a configuration that had run: its stored value was reused "
            "(nothing sent, not counted against --trials)" + ("" if show_repeats else "; --show-repeats lists them"),
        )
    failed = [t for t in study.trials if t.state.name == "FAIL"]
    if failed:
        say(console, f"{len(failed)} trial(s) failed of {len(study.trials)}:")
        for t in failed:
            say(console, f"  trial {t.number}: {why_failed(t)}")
    if outcome.config.cost_objective:
        unit = outcome.config.cost
        say(console, f"Pareto front (score up, {unit} per example down):")
        _print_frame(console, pareto_table(study).set_index("number"), ("score", f"{unit}_per_example"))


def _print_data(outcome: Any, fmt: str) -> None:
    """The whole trials table (a design study: one row per design) on stdout as md, csv or json."""
    from courtroom.optimize.study.pipeline import is_design_study
    from courtroom.reporting.tables import print_data

    if is_design_study(outcome.config):
        from courtroom.optimize.study._design_report import design_table

        table = design_table(outcome.study)
        print_data(fmt, table.set_index("design") if "design" in table.columns else table)
    elif outcome.table is not None:
        print_data(fmt, outcome.table.set_index("number") if "number" in outcome.table.columns else outcome.table)


def _print_designs(outcome: Any, console: Console) -> None:
    """Per design (calls, cached) and, with cost, the Pareto front across designs."""
    from courtroom.optimize.study._design_report import design_pareto, design_table
    from courtroom.reporting.tables import say

    say(console, "per design (calls: made by the programs; cached: served from the shared cache):")
    table = design_table(outcome.study)
    if table.empty:
        return
    _print_frame(console, table.set_index("design"), ("trials", "complete", "best_score", "calls"))
    if outcome.config.cost_objective:
        say(console, f"Pareto front across designs (score up, {outcome.config.cost} per example down):")
        front = design_pareto(outcome.study).set_index("number")
        _print_frame(console, front, ("design", "score", "cost_per_example"))


def _print_tied(outcome: Any, console: Console, *, exported: bool = False) -> None:
    """The configurations the dev data cannot separate from the best, then the excluded ones, each with its p.

    Each row names its configuration (design and searched values), wrapped within its column; the
    values every row holds alike are said once above the table. ``exported``: ``--export-best`` was given.
    """
    from courtroom.optimize.study.report import tied_table
    from courtroom.optimize.study.tied import LEVEL, alike, described, preference, tied_set
    from courtroom.reporting.formatting import number
    from courtroom.reporting.tables import say

    found = tied_set(outcome.study)
    if found is None:
        return
    table = tied_table(outcome.study)  # the members, then the stopped: one row each, in this order
    rows: list[Any] = [*found.members, *found.stopped]
    configs = [({"design": m.design} if m.design else {}) | m.config for m in rows]
    said = alike(configs)
    table["configuration"] = [
        described(c, said=said) + (f" (also trial {s})" if s else "")
        for c, s in zip(configs, table["same"], strict=True)
    ]
    n_tied = int(table["tied"].isin(("best", "yes")).sum())
    worse, stopped = int((table["tied"] == "no").sum()), int((table["tied"] == "stopped").sum())
    excluded = [f"{worse} found worse"] if worse else []
    excluded += [f"{stopped} stopped early by the race"] if stopped else []
    say(
        console,
        f"tied with the best: {n_tied} of {len(table)} configuration(s), on up to {found.cases} dev cases "
        f"(each pair on the cases both saw: exact McNemar, every pair, Holm, {LEVEL:g})"
        + (f"; excluded: {' and '.join(excluded)}" if excluded else "")
        + ":",
    )
    if said:
        say(console, "every configuration: " + ", ".join(f"{k}={number(v)}" for k, v in said.items()))
    say(
        console,
        f"cases: its dev cases; cost: {found.members[0].unit} per case; p vs best: raw, of being worse than the "
        "best; p (Holm): corrected, the smallest of being worse than any other",
    )
    columns = ["tied", "dev_cases", "accuracy", "cost_per_case", "p", "p_holm", "configuration"]
    shown = table.set_index("number")[columns]
    shown = shown.rename(columns={"dev_cases": "cases", "cost_per_case": "cost", "p": "p vs best"})
    # A configuration too long for its column goes under the table, a line each, rather than folded mid-name.
    beside = sum(max(len(str(c)), *(len(f"{v:.3f}" if isinstance(v, float) else str(v)) for v in shown[c])) + 2
                 for c in shown.columns) + len(str(shown.index.max())) + 2 <= console.width  # fmt: skip
    _print_frame(console, shown if beside else shown.drop(columns="configuration"), tuple(shown.columns))
    if not beside:
        say(console, "configurations:")
        for number_, text in shown["configuration"].items():
            say(console, f"  trial {number_}: {text}")
    rule = preference(outcome.study)
    pick = found.pick(rule)
    other = "--prefer best picks the best" if rule == "cheapest" else "--prefer cheapest picks the cheapest"
    if found.cheapest().number == found.best:
        other = "the best is also the cheapest"
    from courtroom.optimize.study.holdout import stored

    done = ["chosen"] + (["exported"] if exported else [])
    done += ["tested"] if pick.number in (outcome.test or stored(outcome.study)) else []
    verbs = done[0] if len(done) == 1 else ", ".join(done[:-1]) + " and " + done[-1]
    say(console, f"{verbs}: trial {pick.number}, the {rule} of the tied set ({other})")


def _not_the_storage(spec: Experiment) -> None:
    """Refuse an ``--out`` (the report folder) that is the study's own SQLite or journal file."""
    from pathlib import Path

    from courtroom.errors import ConfigError
    from courtroom.optimize.study._storage import redact, storage_file

    held = storage_file(spec.study.storage)
    out = Path(str(spec.output.out)).expanduser()
    if held is not None and out.resolve() == held.expanduser().resolve():
        raise ConfigError(
            f"--out {out} is the study's storage ({redact(spec.study.storage or str(held))}): "
            "pass a folder for the report, e.g. --out studies/NAME"
        )


def best_line(outcome: Any, best: Any) -> str:
    """The best trial in words: its score (and cost per example) and its configuration, numbers as people write them."""
    from courtroom.optimize.study._config import OBJECTIVES
    from courtroom.optimize.study.pipeline import is_design_study
    from courtroom.reporting.formatting import header, number

    config = outcome.config
    design = is_design_study(config)
    objective = header(OBJECTIVES.get(config.objective, config.objective)).replace(" (95% CI)", "")
    from courtroom.optimize.study.tied import dev_score, tied_set

    found = tied_set(outcome.study)
    which = "best" if found is None or found.best == best.number else "chosen (the cheapest tied with the best)"
    said = f"{which} trial {best.number}: " + (f"{best.user_attrs.get('design')}, " if design else "")
    scored = dev_score(outcome.study, best)  # the accuracy its tied set reads: all its dev cases
    if scored is not None:
        said += f"{objective} {scored[0]:.3f} on {scored[1]} dev cases"
    else:
        said += f"{objective} {best.values[0]:.3f}"
    if len(best.values) > 1:
        unit = config.cost
        said += f", {number(best.values[1])} {unit} per example"
    params = best.user_attrs.get("config", best.params)
    return said + ("; " + ", ".join(f"{k}={number(v)}" for k, v in params.items()) if params else "")


SCORES = ("accuracy", "macro_f1", "score", "best_score", "value")
"""Columns of scores in [0, 1]: three decimals, so a close race stays visible."""
WRAPPED = ("configuration",)
"""Columns shown whole, wrapped within the column (a configuration is never cut)."""


def _print_frame(console: Console, df: Any, key: tuple[str, ...], title: str | None = None) -> None:
    """``df`` as a table at the console's width: its ``key`` columns, the others while they fit."""
    from courtroom.reporting.formatting import number
    from courtroom.reporting.tables import fitted

    def cell(column: str, v: Any) -> str:
        if isinstance(v, float) and not isinstance(v, bool) and column.split(" ")[-1] in SCORES and v == v:
            return f"{v:.3f}"
        text = number(v)
        if text in ("nan", "None", "<NA>"):
            return ""
        return text if column in WRAPPED else text[:60]

    counts = [c for c in ("duplicate_of", "sent", "cached", "calls", "failures") if c in df.columns]
    # Counts stay whole where a repeated trial leaves them blank (a column with a NaN turns float).
    df = df.assign(**{c: df[c].round().astype("Int64") for c in counts})
    shown = df.astype(object).apply(lambda col: [cell(str(col.name), v) for v in col])
    right = [c for c in shown.columns if c not in ("state", "design", "error", "cost_unit", "params", "tied", *WRAPPED)]
    table = fitted(shown, key, console.width, title=title, headers=TRIAL_HEADERS, right=right)
    table.title_justify = "left"
    console.print(table)
