"""``courtroom compare --task T --frameworks a,b,c``: a paper-style table, Markdown/CSV and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli._app import app
from courtroom.cli._options import EXECUTION_PANEL, experiment
from courtroom.spec import Experiment


def suite_lines(table: Any) -> str:
    """The paper-vs-measured table of a suite as Markdown."""
    from courtroom.analysis.papers import markdown_table

    shown = table.assign(
        ci95=[f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)]
    ).set_index("task")
    extra = [c for c in shown.columns if c.startswith(("paper_", "measured_"))]  # F1, corrections
    return markdown_table(shown[["row", "paper", "measured", "ci95", "n", *extra]])


@app.command("compare")
@experiment("compare")
def compare_command(
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

    console = Console()
    if resume_dir is not None:
        if spec.budget.dry_run:
            raise ConfigError("--dry-run estimates a new comparison: drop --resume")
        return _print_results({"": compare(spec=spec, resume=resume_dir)}, console)
    if bool(spec.design.frameworks) == bool(spec.design.suite):
        raise ConfigError("pass --frameworks a,b,c or --suite NAME (see `courtroom frameworks`)")
    check_providers(spec.models.lm, [f"{r}={m}" for r, m in spec.models.roles.items()])
    writable_folder(spec.output.out or "comparisons", "--out")
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec))
    if not spec.design.suite:
        return _print_results({spec.data.task_name: compare(spec=spec)}, console)
    from courtroom.comparison.suites import get_suite

    table, results = compare_suite(spec)
    about = get_suite(spec.design.suite)
    note = f"; {about.note}" if about.note else ""
    suite_text = f"{about.paper}, {about.table}: the paper's accuracy beside yours (95% CI){note}"
    _print_results(results, console, suite_text + "\n" + suite_lines(table))


def _print_results(results: dict[str, Any], console: Console, suite_text: str | None = None) -> None:
    """Print each comparison (table, analyses, plots, folder) and a suite's table; fail on failed rows."""
    from courtroom.analysis.papers import analyses_lines, markdown_table
    from courtroom.eval.status import TooManyFailures
    from courtroom.reporting.formatting import readable_table

    for result in results.values():
        console.print(markdown_table(readable_table(result.table)), markup=False, soft_wrap=True)
        for name, found in result.analyses.items():
            for line in analyses_lines(name, found):
                console.print(line, markup=False, soft_wrap=True)
        for name, path in result.plots.items():
            console.print(f"plot {name}: {Path(path)}", markup=False, soft_wrap=True)
        console.print(f"comparison folder: {result.out_dir}", markup=False, soft_wrap=True)
    if suite_text:
        console.print(suite_text, markup=False, soft_wrap=True)
    failed = {
        f"{t}: {name}" if len(results) > 1 else name: reason
        for t, r in results.items()
        for name, reason in r.failed.items()
    }
    if failed:
        name, reason = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more framework(s))" if len(failed) > 1 else ""
        raise TooManyFailures(f"{name}: {reason}{more}")
