"""``courtroom runs [DIR ...]``: past runs, repeat groups and comparisons, newest first."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app
from courtroom.cli._options import CONFIG, FORMAT


@app.command("runs")
def runs_command(
    folders: Annotated[
        list[Path] | None, typer.Argument(help="Folders to list (default: runs and comparisons).")
    ] = None,
    config: CONFIG = None,
    format: FORMAT = "table",  # noqa: A002 - the flag's name
) -> None:
    """List past runs and comparisons: date, framework, task, models, n, accuracy, cost, folder."""
    from courtroom.api import runs
    from courtroom.errors import ConfigError
    from courtroom.reporting.tables import print_data
    from courtroom.spec._sections import check_format

    check_format(format)
    missing = [str(f) for f in folders or () if not f.is_dir()]
    if missing:
        raise ConfigError(
            f"no such folder: {', '.join(missing)}: pass a folder that holds runs (e.g. runs, or the --out of a run)"
        )
    table = runs(folders or ("runs", "comparisons"))
    if format != "table":
        return print_data(format, table.set_index("created"))
    console = Console()
    if not console.is_terminal:  # a pipe or a log: one line per run, not a table folded to 80 columns
        console = Console(width=max(console.width, 240))
    if table.empty:
        console.print(f"no runs in {', '.join(str(f) for f in folders or ('runs', 'comparisons'))}")
        return
    out = Table(title=f"{len(table)} run(s), newest first")
    for col in ("created", "kind", "framework", "task", "models", "n", "accuracy", "cost", "folder"):
        out.add_column(col, justify="right" if col in ("n", "accuracy", "cost") else "left", overflow="fold")
    for row in table.itertuples():
        out.add_row(
            row.created,
            row.kind,
            row.framework or "",
            row.task or "",
            row.models,
            "" if row.n is None or row.n != row.n else str(int(row.n)),
            "" if row.accuracy is None or row.accuracy != row.accuracy else f"{row.accuracy:.3f}",
            "n/a" if row.cost is None or row.cost != row.cost else f"${row.cost:.4f}",
            row.path,
        )
    console.print(out)
