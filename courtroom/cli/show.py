"""``courtroom show RUN_DIR [--example i]``: read a run's summary or one transcript."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app
from courtroom.errors import ConfigError


def print_example(run_dir: Path, index: int, console: Console) -> None:
    """Print example ``index`` of a run with its transcript."""
    from courtroom.eval.runs import load_run
    from courtroom.transcript import render_text

    _, results, _ = load_run(run_dir)
    if not 0 <= index < len(results):
        raise ConfigError(f"--example {index} is out of range: this run has examples 0..{len(results) - 1}")
    r = results[index]
    verdict = r["prediction"] if r["prediction"] is not None else "FAILED"
    console.print(f"[bold]example {index}[/bold] ({r['id']})  gold: {r['gold']}  prediction: {verdict}")
    console.print(f"input: {r['input']}")
    if r.get("error"):
        console.print(f"[red]error: {r['error']}[/red]")
    console.print(render_text(r["transcript"]), markup=False, highlight=False)


@app.command("show")
def show_command(
    run_dir: Annotated[Path, typer.Argument(help="A run folder printed by `courtroom run`.")],
    example: Annotated[int | None, typer.Option("--example", help="Print the transcript of example i.")] = None,
) -> None:
    """Print a run's summary and examples, or one example's transcript."""
    from courtroom.eval.runs import load_run, summary_markdown

    console = Console()
    if example is not None:
        print_example(run_dir, example, console)
        return
    meta, results, summary = load_run(run_dir)
    if summary:
        console.print(
            summary_markdown(summary, f"{meta['config']['framework']} on {meta['task']['name']}"),
            markup=False,
        )
    table = Table("i", "id", "gold", "prediction", "error")
    for i, r in enumerate(results):
        table.add_row(str(i), r["id"], r["gold"], str(r["prediction"]), (r.get("error") or "")[:60])
    console.print(table)
