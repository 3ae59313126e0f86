"""``courtroom run FRAMEWORK --task T``: evaluate a framework and write a run folder."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from courtroom.cli import _options as opt
from courtroom.cli import app
from courtroom.errors import CourtroomError


def summary_table(summary: dict, title: str) -> Table:
    """The run summary as a rich table."""
    table = Table(title=title, show_header=True)
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("accuracy", f"{summary['accuracy']:.3f}")
    table.add_row("macro-F1", f"{summary['macro_f1']:.3f}")
    table.add_row("examples", str(summary["n"]))
    table.add_row("failures", str(summary["failures"]))
    table.add_row("LM calls", f"{summary['calls']} ({summary['sent']} sent, {summary['cached']} cached)")
    table.add_row("tokens", str(summary["tokens"]))
    table.add_row("cost", "n/a" if summary["cost"] is None else f"${summary['cost']:.4f}")
    table.add_row("wall time", f"{summary['wall_seconds']:.1f} s")
    return table


@app.command("run")
def run_command(
    framework: Annotated[str, typer.Argument(help="Framework or baseline name (see `courtroom frameworks`).")],
    task: Annotated[str, typer.Option("--task", help="Task name (see `courtroom tasks`).")] = "boolean_expressions",
    limit: Annotated[int | None, typer.Option("--limit", help="Run the first N examples of the split.")] = None,
    loops: Annotated[int | None, typer.Option("--loops", help="JoT rounds (n_loops).")] = None,
    data: Annotated[str, typer.Option("--data", help="auto | generate | hub | PATH (json/jsonl/csv/parquet).")] = "auto",
    split: Annotated[str, typer.Option("--split", help="train | dev | test")] = "test",
    seed: Annotated[int, typer.Option("--seed", help="Seed for data generation and splits.")] = 0,
    sets: opt.SET = None,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Examples in flight at once.")] = 4,
    out: Annotated[str, typer.Option("--out", help="Folder that receives the run folder.")] = "runs",
    show: Annotated[int | None, typer.Option("--show", help="Print the transcript of example i afterwards.")] = None,
) -> None:
    """Evaluate FRAMEWORK on a task; print the summary and the run folder's path."""
    from courtroom.eval.runs import RunConfig, get_framework, run
    from courtroom.lms import parse_role_overrides

    cls = get_framework(framework)
    knobs = opt.parse_sets(sets)
    if loops is not None:
        knobs["n_loops"] = loops
    config = RunConfig(
        framework=framework, task=task, data=data, split=split, limit=limit, seed=seed, knobs=knobs, lm=lm,
        roles=parse_role_overrides(role or [], cls.roles), temperature=temperature, max_tokens=max_tokens,
        api_base=api_base, concurrency=concurrency, out=out,
    )
    console = Console(stderr=True)
    # The bar appears once the task and models are validated, so bad input stays a one-line error.
    bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[status]}"), TimeElapsedColumn(), console=console)
    state = {"done": 0, "failed": 0, "correct": 0, "handle": None}

    def on_start(n: int) -> None:
        bar.start()
        state["handle"] = bar.add_task(f"{framework} on {task}", total=n, status="")

    def progress(res) -> None:
        state["done"] += 1
        state["failed"] += res.prediction is None
        state["correct"] += res.correct
        bar.update(state["handle"], advance=1,
                   status=f"acc {state['correct'] / state['done']:.2f}  failed {state['failed']}")

    try:
        outcome = run(config, progress=progress, on_start=on_start)
    finally:
        bar.stop()
    stdout = Console()
    stdout.print(summary_table(outcome.summary, f"{framework} on {task}"))
    if outcome.summary["failures"]:
        stdout.print(f"{outcome.summary['failures']} example(s) failed: "
                     f"{', '.join(outcome.summary['failed_ids'][:10])}; see results.jsonl for errors")
    if show is not None:
        from courtroom.cli.show import print_example

        print_example(outcome.run_dir, show, stdout)
    stdout.print(f"run folder: {outcome.run_dir}")
    if outcome.results and outcome.summary["failures"] == len(outcome.results):
        first = next(r.error for r in outcome.results if r.error)
        raise CourtroomError(f"every example failed (first error: {first}); check the model name, key and network")
