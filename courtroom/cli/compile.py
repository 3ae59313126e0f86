"""``courtroom compile FRAMEWORK --task T --optimizer O -o program.json``: optimize and save a program."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app
from courtroom.cli._options import experiment
from courtroom.spec import Experiment


def _rows(result: Any) -> list[tuple[str, Any, Any]]:
    """(row name, score, comparison on its after row) for dev and test, before and after.

    With ``--keep-better`` keeping the start, the test split scored the start alone: one row, no comparison.
    """
    rows = []
    for split, gain in result.gains.items():
        if split == "test" and result.kept == "start":
            rows.append(("test (kept start)", gain.before, None))
            continue
        rows += [(f"{split} before", gain.before, None), (f"{split} after", gain.after, gain)]
    return rows


SCORE_COLUMNS = ("accuracy", "95% CI", "macro-F1", "failures", "n", "after - before", "McNemar p")
KEY_SCORES = ("accuracy", "95% CI", "n", "after - before", "McNemar p")
"""Always shown; macro-F1 and failures only while the table fits the terminal (an interval is never cut)."""


def scores_table(result: Any, title: str, width: int = 100) -> Table:
    """Accuracy with 95% intervals before and after compiling, on dev and on the held-out test split."""
    import pandas as pd

    from courtroom.reporting.tables import fitted

    rows = {}
    for name, score, gain in _rows(result):
        diff = "" if gain is None else gain.figures()
        interval = f"[{score.ci_low:.2f}, {score.ci_high:.2f}]"
        rows[name] = [f"{score.accuracy:.3f}", interval, f"{score.macro_f1:.3f}", str(score.failures), str(score.n),
                      diff, "" if gain is None else f"{gain.p_value:.3g}"]  # fmt: skip
    frame = pd.DataFrame.from_dict(rows, orient="index", columns=list(SCORE_COLUMNS))
    table = fitted(frame, KEY_SCORES, width, title=title, right=SCORE_COLUMNS)
    if result.test:
        table.caption = "test: held out, nothing chose with it; intervals 95% over the cases"
    return table


def scores_frame(result: Any) -> Any:
    """The same figures, one row per split and program (``--format md|csv|json``)."""
    import pandas as pd

    records = []
    for name, score, gain in _rows(result):
        row: dict[str, Any] = {"scores": name} | score.to_dict()
        if gain is not None:
            row |= {"difference": gain.difference, "difference_ci_low": gain.ci_low,
                    "difference_ci_high": gain.ci_high, "mcnemar_p": gain.p_value, "verdict": gain.verdict}  # fmt: skip
        records.append(row)
    return pd.DataFrame.from_records(records).set_index("scores")


@app.command("compile")
@experiment("compile")
def compile_command(
    framework: Annotated[str | None, typer.Argument(help="Framework name (or take it from --config).")] = None,
    config: str | None = None,
    *,
    spec: Experiment,
) -> None:
    """Compile FRAMEWORK with a DSPy optimizer, prove the gain on held-out test cases, save the program."""
    from courtroom.api import compile, estimate
    from courtroom.cli._values import check_providers, inputs_of, writable_file
    from courtroom.eval.status import TooManyFailures
    from courtroom.optimize.recipes import read_config
    from courtroom.reporting.tables import print_data, say, stdout_console, terminal_width

    recipe = read_config(config) if config else {}
    check_providers(spec.models.lm or recipe.get("lm"), [f"{r}={m}" for r, m in spec.models.roles.items()])
    out = spec.output.out or "program.json"
    writable_file(out, "-o", "program.json", inputs_of(spec, config))
    if spec.execution.batch:  # an optimizer waits on each answer to choose its next request
        from courtroom.reporting.tables import to_stderr

        to_stderr("--batch: compile's optimizers stay live (they are interactive); its requests are sent live")
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec, config=recipe))
    result = compile(spec=spec, config=recipe)
    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    title = f"{type(result.program).name} + {spec.design.optimizer}"
    if result.metadata.get("metric", "accuracy") != "accuracy":  # the table's accuracy is the metric's mean
        title += f"; accuracy: mean {result.metadata['metric']}"
    if fmt == "table":
        console.print(scores_table(result, title, console.width))
    else:
        print_data(fmt, scores_frame(result))
    say(console, *proof_lines(result), f"program: {result.path}")
    for name, folder in result.run_dirs.items():
        say(console, f"{name}: {folder} (courtroom show {folder})")
    if result.after["status"] == "failed":
        raise TooManyFailures(f"dev score after compiling: {result.after['status_reason']}")


def majority_lines(result: Any) -> list[str]:
    """The training split's majority class: how often always answering it is right where the program was scored."""
    from courtroom.cli._majority import majority_line

    found = result.metadata.get("majority")
    split = "test" if result.test is not None and "test" in (found or {}) else "dev"
    if not found or split not in found:
        return []
    gain = result.gains[split]
    program = gain.before if result.kept == "start" else gain.after
    custom = result.metadata.get("metric", "accuracy") != "accuracy"  # another scale than a label match
    scored = "held-out cases" if split == "test" else "dev cases"
    who = "the kept program" if result.kept == "start" else "the compiled program"
    return [majority_line(found["label"], found[split], "training split", scored,
                          None if custom else program.accuracy, who)]  # fmt: skip


def proof_lines(result: Any) -> list[str]:
    """What the comparisons say, in words: the held-out one first, then dev (and what chose with it)."""
    from courtroom.optimize.optimizers import get_optimizer

    lines = []
    if result.test is not None and result.kept == "start":
        lines.append("held-out test: the starting program was kept (--keep-better), so only it was scored there")
    elif result.test is not None:
        lines.append(result.test.sentence())
    else:
        note = result.metadata.get("proof", {}).get("test_note") or "no test split scored"
        lines.append(f"no held-out proof: {note}")
    lines += majority_lines(result)
    optimizer = get_optimizer(result.metadata["optimizer"]["name"])
    selected = " (it selected on dev: only the held-out figure is a proof)" if optimizer.selects else ""
    lines.append(f"{result.dev.sentence()}{selected}")
    if result.kept == "start":
        lines.append("kept the starting program: the optimized one scored lower on dev (--keep-better)")
    return lines
