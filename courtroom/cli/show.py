"""``courtroom show RUN_DIR [--example i]``: read a run's summary or one transcript."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app
from courtroom.cli._options import CONFIG, FORMAT
from courtroom.errors import ConfigError


def summary_table(summary: dict, title: str) -> Table:
    """The run summary as a rich table."""
    from courtroom.runner.summaries import summary_rows

    table = Table(title=title, show_header=True)
    table.add_column("metric", no_wrap=True)
    table.add_column("value", justify="right")
    for name, value in summary_rows(summary):
        table.add_row(name, value)
    if summary.get("brier") is not None:
        table.add_row("Brier score / ECE", f"{summary['brier']:.4f} / {summary['ece']:.4f}")
    for label, pr in (summary.get("per_class") or {}).items():
        table.add_row(f"  {label}: precision / recall", f"{pr['precision']:.3f} / {pr['recall']:.3f}")
    from courtroom.analysis.bias import bias_rows
    from courtroom.runner.summaries import learned_rows

    for metric, value in bias_rows(summary) + learned_rows(summary):
        table.add_row(metric, value)
    return table


def find_example(run_dir: Path, example: int | str) -> tuple[int, dict]:
    """(position in input order, record in ``results.jsonl``) of one finished example of a run.

    ``example`` is a position in input order (``meta.json``'s example ids, as ``show`` lists
    them; ``results.jsonl`` is in finishing order) or an example id.
    """
    from courtroom.runner.runs import load_run, positions

    meta, results, _ = load_run(run_dir)
    finished = {r["id"]: r for r in results}
    ids = list(meta.get("example_ids") or finished)
    text = str(example)
    if text in finished or text in ids:
        wanted = text
    elif text.isdigit() and int(text) < len(ids):
        wanted = ids[int(text)]
    else:
        raise ConfigError(
            f"--example {text}: not an example id of this run, nor a position 0..{len(ids) - 1} "
            "(positions are in input order, as `courtroom show RUN_DIR` lists them)"
        )
    if wanted not in finished:
        raise ConfigError(
            f"--example {text}: example {ids.index(wanted)} (id {wanted}) has not finished; "
            f"finish the run with: courtroom run --resume {run_dir}"
        )
    return dict(zip(finished, positions(meta, results), strict=True))[wanted], finished[wanted]


def print_example(run_dir: Path, example: int | str, console: Console, fmt: str = "table") -> None:
    """Print one example of a run (see :func:`find_example`) with its transcript.

    ``table`` and ``md``: the transcript as text; ``json``: the example's record (its fields and
    turns) with its position ``i``; ``csv``: one row per turn, the example's fields on each.
    """
    from courtroom.transcript import render_text

    index, r = find_example(run_dir, example)
    if fmt in ("json", "csv"):
        return _print_example_data(fmt, index, r)
    verdict = r["prediction"] if r["prediction"] is not None else "FAILED"
    where = f"position in input order; id {r['id']}"
    console.print(f"[bold]example {index}[/bold] ({where})  gold: {r['gold']}  prediction: {verdict}")
    console.print(f"input: {r['input']}")
    if r.get("error"):
        console.print(f"[red]error: {r['error']}[/red]")
    console.print(render_text(r["transcript"]), markup=False, highlight=False)


@app.command("show")
def show_command(
    run_dir: Annotated[
        Path, typer.Argument(help="A run folder printed by `courtroom run` (or a comparison or score folder).")
    ],
    config: CONFIG = None,
    example: Annotated[
        str | None,
        typer.Option("--example", help="Print one transcript: a position (input order, as listed) or an example id."),
    ] = None,
    format: FORMAT = "table",  # noqa: A002 - the flag's name
) -> None:
    """Print a run's summary and examples, or one example's transcript."""
    from courtroom.reporting.tables import stdout_console
    from courtroom.runner.runs import load_run, positions
    from courtroom.spec._sections import check_format

    check_format(format)
    console = stdout_console()
    if not (run_dir / "meta.json").is_file() and (run_dir / "comparison.json").is_file():
        return _show_comparison(run_dir, format, console, example)
    if example is not None:
        return print_example(run_dir, example, console, format)
    meta, results, summary = load_run(run_dir)
    if format != "table":
        return _print_data(format, meta, results, summary)
    if summary:
        console.print(summary_table(summary, f"{meta['config']['framework']} on {meta['task']['name']}"))
    title = "examples in input order (i: --example i)"
    total = len(meta.get("example_ids") or results)
    if len(results) < total:
        title += f"; {len(results)} of {total} finished"
    table = Table("i", "id", "gold", "prediction", "error", title=title)
    for column in table.columns:
        column.overflow = "fold"
    for i, r in zip(positions(meta, results), results, strict=True):
        table.add_row(str(i), r["id"], r["gold"], str(r["prediction"]), (r.get("error") or "")[:60])
    console.print(table)


def _print_example_data(fmt: str, index: int, record: dict) -> None:
    """One example whole for a program: ``json`` its record, ``csv`` a row per turn of its transcript."""
    import sys

    import pandas as pd

    from courtroom.reporting.tables import csv_text, json_text

    if fmt == "json":
        sys.stdout.write(json_text({"i": index, **record}))
        return
    head = {"i": index, "id": record["id"], "gold": record["gold"], "prediction": record["prediction"],
            "correct": record["prediction"] == record["gold"], "error": record.get("error") or ""}  # fmt: skip
    fields = ("role", "round", "decision", "text")
    turns = [
        head | {k: t.get(k) for k in fields} | {"extra": json.dumps(t.get("extra") or {})}
        for t in record.get("transcript") or [{}]
    ]
    sys.stdout.write(csv_text(pd.DataFrame(turns), index=False))


def _print_data(fmt: str, meta: dict, results: list[dict], summary: dict | None) -> None:
    """The examples (i, id, gold, prediction, correct, error) whole as md or csv; json adds the summary."""
    import sys

    import pandas as pd

    from courtroom.reporting.tables import csv_text, json_text, markdown
    from courtroom.runner.runs import positions

    rows = pd.DataFrame(
        [
            {"i": i, "id": r["id"], "gold": r["gold"], "prediction": r["prediction"],
             "correct": r["prediction"] == r["gold"], "error": r.get("error") or ""}
            for i, r in zip(positions(meta, results), results, strict=True)
        ],
        columns=["i", "id", "gold", "prediction", "correct", "error"],
    ).set_index("i")  # fmt: skip
    if fmt == "json":
        sys.stdout.write(json_text({"summary": summary, "examples": json.loads(json_text(rows))}))
    elif fmt == "csv":
        sys.stdout.write(csv_text(rows))
    else:
        from courtroom.runner.summaries import summary_markdown

        title = f"{meta['config']['framework']} on {meta['task']['name']}"
        sys.stdout.write((summary_markdown(summary, title) + "\n" if summary else "") + markdown(rows))


def _show_comparison(folder: Path, fmt: str, console: Console, example: str | None) -> None:
    """A comparison or score folder: its table, then each row's run folder (what ``show`` reads)."""
    import pandas as pd

    from courtroom.cli.compare import KEY_COLUMNS, RIGHT, SHORT
    from courtroom.reporting.formatting import readable_table
    from courtroom.reporting.tables import fitted, print_data

    info = json.loads((folder / "comparison.json").read_text())
    if example is not None:
        raise ConfigError(f"{folder} is a comparison: show one row's example with `courtroom show {folder}/ROW`")
    table = pd.read_csv(folder / "table.csv", index_col=0)
    if fmt != "table":
        return print_data(fmt, table, readable=readable_table(table))
    console.print(fitted(readable_table(table), KEY_COLUMNS, console.width, title=info.get("task"), headers=SHORT,
                         right=RIGHT))  # fmt: skip
    from courtroom.reporting.tables import say

    runs = info.get("runs") or {}
    if runs:
        say(console, f"each row's run: courtroom show {folder}/ROW, ROW one of: {', '.join(runs.values())}")
