"""``courtroom run FRAMEWORK --task T``: evaluate a framework and write a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli._app import app
from courtroom.cli._options import EXECUTION_PANEL, experiment
from courtroom.spec import Experiment


@app.command("run")
@experiment("run")
def run_command(
    framework: Annotated[
        str | None,
        typer.Argument(help="Framework or baseline name (see `courtroom frameworks`); not needed with --resume."),
    ] = None,
    resume_dir: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Finish an interrupted run (or repeat group) in RUN_DIR; nothing is sent twice.",
            rich_help_panel=EXECUTION_PANEL,
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="With --resume: run the examples that failed again too.",
            rich_help_panel=EXECUTION_PANEL,
        ),
    ] = False,
    *,
    spec: Experiment,
) -> None:
    """Evaluate FRAMEWORK on a task; print the summary and the run folder's path."""
    from courtroom.api import estimate, run
    from courtroom.cli._values import check_providers, writable_folder

    check_providers(spec.models.lm, [f"{r}={m}" for r, m in spec.models.roles.items()])
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        if resume_dir is not None:
            from courtroom.errors import ConfigError

            raise ConfigError("--dry-run estimates a new run: drop --resume")
        return print_estimates(*estimate(spec=spec))
    if spec.execution.cancel_batches:
        from courtroom.cli._batches import cancel_in_flight

        return cancel_in_flight(resume_dir, spec)
    if resume_dir is None:
        writable_folder(spec.output.out or "runs", "--out")
    outcome = run(spec=spec, resume=resume_dir, retry_failed=retry_failed)
    print_outcome(outcome, spec, retry_failed)


def print_outcome(outcome: Any, spec: Experiment, retry_failed: bool = False) -> None:
    """The summary, failures (with the command that retries them), analyses and the folder's path.

    With ``--format md|csv|json`` stdout gets the summary alone (as ``summary.md``, one CSV row,
    or ``summary.json``) and the other lines go to stderr.
    """
    from courtroom import _stop
    from courtroom.eval.status import TooManyFailures
    from courtroom.reporting.tables import print_text, say, stdout_console, terminal_width
    from courtroom.runner.repeats import RepeatOutcome

    fmt = spec.output.format
    stdout = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    if isinstance(outcome, RepeatOutcome):
        from courtroom.runner.repeats import stats_markdown

        title = f"{len(outcome.outcomes)} repeats"
        if fmt == "table":
            print_text(stdout, [stats_markdown(outcome.stats, title)])
        else:
            _print_data(fmt, outcome.stats, stats_markdown(outcome.stats, title), stats=True)
        say(stdout, f"repeat group: {outcome.group_dir}")
        failed = [o for o in outcome.outcomes if o.summary.get("status") == "failed"]
        if failed:
            raise TooManyFailures(f"{failed[0].run_dir.name}: {failed[0].summary['status_reason']}")
        return
    from courtroom.cli.show import summary_table

    if fmt == "table":
        stdout.print(summary_table(outcome.summary, outcome.run_dir.name))
    else:
        from courtroom.runner.summaries import summary_markdown

        _print_data(fmt, outcome.summary, summary_markdown(outcome.summary, outcome.run_dir.name))
    retry = _stop.with_flags(f"courtroom run --resume {outcome.run_dir} --retry-failed")
    if outcome.summary["failures"]:
        say(
            stdout,
            f"{outcome.summary['failures']} example(s) failed: "
            f"{', '.join(outcome.summary['failed_ids'][:10])}; see results.jsonl for errors",
        )
        if not retry_failed:
            say(stdout, f"to run them again: {retry}")
    if outcome.analyses:
        from courtroom.cli.compare import print_analyses

        print_analyses(stdout, outcome.run_dir.name, outcome.analyses)
    if spec.output.show is not None:
        from courtroom.cli.show import print_example

        print_example(outcome.run_dir, spec.output.show, stdout)
    say(stdout, f"run folder: {outcome.run_dir}")
    if outcome.summary.get("status") == "failed":
        raise TooManyFailures(
            f"{outcome.summary['status_reason']}; the run folder is complete: {retry} runs them again"
        )


def _print_data(fmt: str, data: dict[str, Any], md: str, stats: bool = False) -> None:
    """A summary (or repeat statistics, one row per metric) whole on stdout as md, csv or json."""
    import sys

    import pandas as pd

    from courtroom.reporting.tables import csv_text, json_text

    if fmt == "md":
        sys.stdout.write(md)
    elif fmt == "json":
        sys.stdout.write(json_text(data))
    elif stats:
        sys.stdout.write(csv_text(pd.DataFrame(data).T.rename_axis("metric")))
    else:
        flat = {k: v for k, v in data.items() if not isinstance(v, list | dict)}
        sys.stdout.write(csv_text(pd.DataFrame([flat]), index=False))
