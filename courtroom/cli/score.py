"""``courtroom score PROGRAM [--dataset FILE ...]``: a saved program scored on labelled data.

``score`` is to a program file what ``run`` is to a framework: the same data options, the same
harness and run folder, plus the majority vote at the program's calls per case beside it.
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from courtroom.cli._app import app
from courtroom.cli._options import experiment
from courtroom.spec import Experiment


@app.command("score")
@experiment("score")
def score_command(
    program_file: Annotated[str, typer.Argument(help="Program file written by `courtroom compile`.")],
    *,
    spec: Experiment,
) -> None:
    """Score a saved program on labelled data, beside a majority vote at its calls; write the score folder.

    With no data option, the program's own test split (held out when it was compiled); a --dataset
    of its own is scored whole. Cases the program saw while compiling (its train and dev texts) are
    counted with a warning, or left out with --exclude-seen. The program's saved models are used
    unless --lm/--role replace them.
    """
    from courtroom.api import estimate, score
    from courtroom.cli._values import check_providers, writable_folder
    from courtroom.cli.compare import print_results

    check_providers(spec.models.lm, [f"{r}={m}" for r, m in spec.models.roles.items()])
    writable_folder(spec.output.out or "runs", "--out")
    if spec.budget.dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(*estimate(spec=spec, program=program_file))
    outcome = score(program_file, spec=spec)
    try:
        print_results({outcome.comparison.out_dir.name: outcome.comparison}, spec, folder="score folder")
    finally:
        _print_verdict(outcome, spec)


def _print_verdict(outcome: Any, spec: Experiment) -> None:
    """The program's accuracy with its interval beside the matched vote's, in words, and the run folder."""
    import math

    from rich.console import Console

    from courtroom.cli._majority import majority_line, per_class_majority
    from courtroom.reporting.tables import say, stdout_console, terminal_width

    fmt = spec.output.format
    console = stdout_console() if fmt == "table" else Console(stderr=True, width=terminal_width(), highlight=False)
    table, row = outcome.table, outcome.row
    low, high = outcome.interval
    calls = float(table.at[row, "calls_per_example"])
    metric = outcome.summary.get("metric")
    what = f"accuracy (mean {metric})" if metric else "accuracy"
    line = (
        f"{row}: {what} {outcome.accuracy:.3f} [{low:.3f}, {high:.3f}] (95% Wilson interval, "
        f"{outcome.summary['n']} cases)" + ("" if math.isnan(calls) else f", {calls:.1f} calls per case")
    )
    vote = outcome.matched_vote
    if vote is not None and vote in table.index:
        from courtroom.comparison.significance import VOTE_FAILED
        from courtroom.eval.metrics import wilson

        acc, n = float(table.at[vote, "accuracy"]), int(table.at[vote, "n"])
        vlow, vhigh = wilson(acc, n)
        if table.at[row, "discordant"] == VOTE_FAILED:
            line += f"; {vote} at the same calls failed on every case ({n}): no paired test against it"
        else:
            p = float(table.at[row, "mcnemar_p"])
            line += (
                f"; {vote} at the same calls: {acc:.3f} [{vlow:.3f}, {vhigh:.3f}]; "
                f"paired exact McNemar p={p:.3g} ({table.at[row, 'discordant']} discordant)"
            )
    elif spec.design.matched_baselines:
        line += "; no matched vote (no calls were counted)"
    seen = outcome.seen or {}
    if seen.get("train") or seen.get("dev"):
        line += (
            f"; {seen['train'] + seen['dev']} of the cases were seen while compiling (train {seen['train']}, "
            f"dev {seen['dev']}): not a held-out score (--exclude-seen leaves them out)"
        )
    elif seen.get("left_out"):
        line += f"; {seen['left_out']} case(s) seen while compiling left out"
    lines = [line]
    found = per_class_majority(outcome.summary.get("per_class") or {})
    if found is not None:  # under --metric the accuracy is on another scale: the rate alone
        lines.append(majority_line(found[0], found[1], "scored cases", "scored cases",
                                   None if metric else outcome.accuracy, "the program"))  # fmt: skip
    say(console, *lines, f"run folder: {outcome.run_dir} (courtroom show {outcome.run_dir})")
