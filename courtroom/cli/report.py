"""``courtroom report RUN_COMPARISON_OR_STUDY_DIR -o report.html``: one self-contained HTML file."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from courtroom.cli._app import app
from courtroom.cli._options import CONFIG, REPORT_OUT


@app.command("report")
def report_command(
    source: Annotated[Path, typer.Argument(help="A run folder, repeat group, comparison folder or study folder.")],
    config: CONFIG = None,
    out: REPORT_OUT = Path("report.html"),
) -> None:
    """Write an HTML report: summary tables, plots, analyses and every transcript, with filters."""
    from courtroom.api import report
    from courtroom.cli._values import inputs_of, writable_file

    writable_file(out, "-o", "report.html", inputs_of(None, source))
    path = report(source, out)
    from courtroom.reporting.tables import say, stdout_console

    say(stdout_console(), f"report: {path}")
