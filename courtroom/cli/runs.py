"""``courtroom runs [DIR ...]``: past runs, repeat groups and comparisons, newest first.

The table fits the terminal: each folder, its size, accuracy and cost, then models, frameworks,
kind, task and date while they fit (``--format md|csv|json`` prints every column).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

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
    import pandas as pd

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
    from courtroom.reporting.formatting import number
    from courtroom.reporting.tables import fitted, measured_width, say, stdout_console

    console = stdout_console()
    if table.empty:
        say(console, f"no runs in {', '.join(str(f) for f in folders or ('runs', 'comparisons'))}")
        return
    shown = pd.DataFrame(
        {
            "n": [number(v) for v in table["n"]],
            "accuracy": ["" if v is None or v != v else f"{v:.3f}" for v in table["accuracy"]],
            "cost": ["n/a" if v is None or v != v else f"${v:.4f}" for v in table["cost"]],
            "models": table["models"],
            "framework": table["framework"].fillna(""),
            "kind": table["kind"],
            "task": table["task"].fillna(""),
            "created": table["created"],
        },
    ).set_axis(pd.Index(table["path"], name="folder"))
    # The folder first and whole where it can be: it names the run (date, framework, task) and is what
    # `courtroom show` and `report` take; the other columns join while they fit.
    key = ("n", "accuracy", "cost") if table["cost"].notna().any() else ("n", "accuracy")  # no price: n/a alone
    right = ("n", "accuracy", "cost")
    title = f"{len(table)} run(s), newest first"
    if measured_width(fitted(shown[list(key)], key, console.width, right=right)) <= console.width:
        groups = [(title, shown)]
    else:  # whole paths would be cut: each folder's name, under the folder that holds it (never cut)
        parents = [str(Path(p).parent) for p in shown.index]
        named = shown.set_axis(pd.Index([Path(p).name for p in shown.index], name="folder"))
        groups = [(f"{title}, in {parent}:" if i == 0 else f"in {parent}:", named[[q == parent for q in parents]])
                  for i, parent in enumerate(dict.fromkeys(parents))]  # fmt: skip
    cut = False
    for heading, rows in groups:
        say(console, heading)  # a folder in a heading is never cut (a table's title would fold it)
        out = fitted(rows, key, console.width, right=right)
        console.print(out)
        cut = cut or len(out.columns) < len(shown.columns) + 1
    if cut:
        say(console, "all columns: --format md|csv|json")
