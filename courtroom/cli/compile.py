"""``courtroom compile FRAMEWORK --task T --optimizer O -o program.json``: optimize and save a program."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app
from courtroom.cli._options import experiment
from courtroom.spec import Experiment


def scores_table(before: dict[str, Any], after: dict[str, Any], title: str) -> Table:
    """Dev scores before and after compiling."""
    table = Table(title=title)
    for col in ("dev", "before", "after"):
        table.add_column(col, justify="right" if col != "dev" else "left")
    for key, label in (
        ("accuracy", "accuracy"),
        ("macro_f1", "macro-F1"),
        ("failures", "failures"),
        ("n", "examples"),
    ):
        fmt = "{:.3f}" if key in ("accuracy", "macro_f1") else "{}"
        table.add_row(label, fmt.format(before[key]), fmt.format(after[key]))
    return table


def scores_frame(before: dict[str, Any], after: dict[str, Any]) -> Any:
    """The dev scores before and after compiling, one row per metric (``--format md|csv|json``)."""
    import pandas as pd

    keys = ("accuracy", "macro_f1", "failures", "n", "status")
    frame = pd.DataFrame({"before": [before.get(k) for k in keys], "after": [after.get(k) for k in keys]}, index=keys)
    return frame.rename_axis("metric")


@app.command("compile")
@experiment("compile")
def compile_command(
    framework: Annotated[str | None, typer.Argument(help="Framework name (or take it from --config).")] = None,
    config: str | None = None,
    *,
    spec: Experiment,
) -> None:
    """Compile FRAMEWORK with a DSPy optimizer, print dev scores before and after, save the program."""
    from courtroom.api import compile, estimate
    from courtroom.cli._values import check_providers, writable_file
    from courtroom.eval.status import TooManyFailures
    from courtroom.optimize.recipes import read_config
    from courtroom.reporting.tables import print_data, stdout_console, terminal_width

    recipe = read_config(config) if config else {}
    check_providers(spec.models.lm or recipe.get("lm"), [f"{r}={m}" for r, m in spec.models.roles.items()])
    out = spec.output.out or "program.json"
    writable_file(out, "-o", "program.json")
    if spec.execution.batch:  # an optimizer waits on each answer to choose its next request
        typer.echo(
            "--batch: compile's optimizers stay live (they are interactive); its requests are sent live", err=True
        )
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec, config=recipe))
    result = compile(spec=spec, config=recipe)
    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    title = f"{type(result.program).name} + {spec.design.optimizer}"
    if fmt == "table":
        console.print(scores_table(result.before, result.after, title))
    else:
        print_data(fmt, scores_frame(result.before, result.after))
    console.print(f"program: {result.path}", markup=False, soft_wrap=True)
    for when, folder in result.dev_dirs.items():
        console.print(f"dev {when}: {folder} (courtroom show {folder})", markup=False, soft_wrap=True)
    if result.after["status"] == "failed":
        raise TooManyFailures(f"dev score after compiling: {result.after['status_reason']}")
