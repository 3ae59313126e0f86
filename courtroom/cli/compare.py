"""``courtroom compare --task T --frameworks a,b,c``: a paper-style table, Markdown/CSV and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli._app import app
from courtroom.cli._options import EXECUTION_PANEL, experiment
from courtroom.spec import Experiment

SUITE_KEY = ("row", "paper", "measured", "ci95", "n")
"""The suite table's columns (then each paper_/measured_ pair: F1, corrections)."""

KEY_COLUMNS = ("accuracy (95% CI)", "calls per example", "cost ($)", "vote at the same cost")
"""What an 80-column terminal shows of a comparison: the rest is in ``table.md`` / ``table.csv``."""

SHORT = {
    "calls per example": "calls/ex",
    "cost ($)": "cost",
    "vote at the same cost": "matched vote",
    "McNemar p (exact)": "p",
    "macro-F1": "F1",
    "examples": "n",
    "failures": "failed",
    "tokens per example": "tokens/ex",
}
"""Headers for the terminal (the files keep the words of :mod:`courtroom.reporting.formatting`)."""

RIGHT = ("calls per example", "cost ($)", "McNemar p (exact)", "macro-F1", "examples", "failures",
         "tokens per example", "time (s)")  # fmt: skip
"""Columns of numbers, right-aligned."""

HINT = "all columns: --format md|csv|json, or table.md / table.csv in the folder"


def suite_frame(table: Any) -> Any:
    """The paper-vs-measured table of a suite (one row per task and row), cells for reading."""
    shown = table.assign(
        ci95=[f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)]
    ).set_index("task")
    extra = [c for c in shown.columns if c.startswith(("paper_", "measured_"))]  # F1, corrections
    return shown[[*SUITE_KEY, *extra]]


def suite_lines(table: Any) -> str:
    """The paper-vs-measured table of a suite as Markdown."""
    from courtroom.analysis.papers import markdown_table

    return markdown_table(suite_frame(table))


@app.command("compare")
@experiment("compare")
def compare_command(
    listed_frameworks: Annotated[
        str | None,
        typer.Argument(
            metavar="FRAMEWORKS",
            help="Frameworks to compare, comma-separated: the same as --frameworks.",
            show_default=False,
        ),
    ] = None,
    resume_dir: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="COMPARISON_DIR",
            help="Finish an interrupted comparison in its folder; nothing is sent twice.",
            rich_help_panel=EXECUTION_PANEL,
        ),
    ] = None,
    *,
    spec: Experiment,
) -> None:
    """Compare frameworks on one task, or a paper's table with --suite; write tables and plots."""
    from courtroom.api import compare, compare_suite, estimate
    from courtroom.cli._values import check_providers, writable_folder
    from courtroom.errors import ConfigError

    if spec.execution.cancel_batches:
        from courtroom.cli._batches import cancel_in_flight

        return cancel_in_flight(resume_dir, spec)
    if resume_dir is not None:
        if spec.budget.dry_run:
            raise ConfigError("--dry-run estimates a new comparison: drop --resume")
        return print_results({"comparison": compare(spec=spec, resume=resume_dir)}, spec)
    if bool(spec.design.frameworks) == bool(spec.design.suite):
        raise ConfigError(
            "pass frameworks (courtroom compare a,b,c or --frameworks a,b,c) or --suite NAME "
            "(see `courtroom frameworks`)"
        )
    check_providers(spec.models.lm, [f"{r}={m}" for r, m in spec.models.roles.items()])
    writable_folder(spec.output.out or "comparisons", "--out")
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec))
    if not spec.design.suite:
        return print_results({spec.data.task_name: compare(spec=spec)}, spec)
    from courtroom.comparison.suites import get_suite

    table, results = compare_suite(spec)
    about = get_suite(spec.design.suite)
    note = f"; {about.note}" if about.note else ""
    suite_text = f"{about.paper}, {about.table}: the paper's accuracy beside yours (95% CI){note}"
    print_results(results, spec, (suite_text, table))


def print_results(
    results: dict[str, Any], spec: Experiment, suite: tuple[str, Any] | None = None, folder: str = "comparison folder"
) -> None:
    """Print each comparison (table, analyses, plots, ``folder``) and a suite's table; fail on failed rows.

    ``--format table`` draws the key columns at the terminal's width; ``md``, ``csv`` and ``json``
    print the whole table on stdout and the other lines on stderr.
    """
    from courtroom.eval.status import TooManyFailures
    from courtroom.reporting.tables import fitted, say, stdout_console, terminal_width

    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    if fmt != "table":
        _print_data(results, fmt, suite)
    for task, result in results.items():
        if fmt == "table":
            from courtroom.reporting.formatting import readable_table

            metric = spec.design.metric if spec.design.metric not in (None, "accuracy") else None
            title = task + (f" (accuracy: mean {metric})" if metric else "")  # the column's meaning
            table = fitted(readable_table(result.table), KEY_COLUMNS, console.width, title=title, headers=SHORT,
                           right=RIGHT)  # fmt: skip
            table.title_justify = "left"
            console.print(table)
            say(console, HINT)
        for name, found in result.analyses.items():
            print_analyses(console, name, found)
        say(console, f"{folder}: {result.out_dir}")
        if result.plots:
            say(
                console,
                "its plots: " + ", ".join(_inside(Path(p), result.out_dir) for p in result.plots.values()),
            )
    if suite is not None:
        text, table = suite
        say(console, text)
        if fmt == "table":
            frame = suite_frame(table).astype(str)
            console.print(fitted(frame, SUITE_KEY, console.width))
    failed = {
        f"{t}: {name}" if len(results) > 1 else name: reason
        for t, r in results.items()
        for name, reason in r.failed.items()
    }
    if failed:
        name, reason = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more framework(s))" if len(failed) > 1 else ""
        raise TooManyFailures(f"{name}: {reason}{more}")


def _inside(path: Path, folder: Path) -> str:
    """``path`` relative to ``folder`` when it is in it (a plot in the comparison folder), else whole."""
    try:
        return str(path.relative_to(folder))
    except ValueError:
        return str(path)


def print_analyses(console: Console, name: str, found: dict[str, Any]) -> None:
    """The papers' analyses of one framework, in sentences at the console's width (the ambiguity split a table)."""
    from courtroom.analysis.papers import analyses_lines
    from courtroom.reporting.tables import print_text

    print_text(console, analyses_lines(name, found))


def _print_data(results: dict[str, Any], fmt: str, suite: tuple[str, Any] | None) -> None:
    """The whole comparison table(s) as md, csv or json on stdout (a suite: every task's, with a task column)."""
    import sys

    import pandas as pd

    from courtroom.reporting.formatting import readable_table
    from courtroom.reporting.tables import csv_text, json_text, markdown

    if fmt == "md":
        for task, result in results.items():
            heading = f"# {task}\n\n" if len(results) > 1 or suite is not None else ""
            sys.stdout.write(heading + markdown(readable_table(result.table)))
        if suite is not None:
            sys.stdout.write("\n# suite\n\n" + suite_lines(suite[1]))
        return
    if len(results) == 1 and suite is None:
        table = next(iter(results.values())).table
    else:
        table = pd.concat([r.table.assign(task=t) for t, r in results.items()])
    sys.stdout.write(csv_text(table) if fmt == "csv" else json_text(table))
