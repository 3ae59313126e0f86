"""``courtroom run FRAMEWORK --task T``: evaluate a framework and write a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.cli._cost import opt_budget
from courtroom.errors import ConfigError, CourtroomError


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
    if summary.get("brier") is not None:
        table.add_row("Brier score / ECE", f"{summary['brier']:.4f} / {summary['ece']:.4f}")
    for label, pr in (summary.get("per_class") or {}).items():
        table.add_row(f"  {label}: precision / recall", f"{pr['precision']:.3f} / {pr['recall']:.3f}")
    return table


@app.command("run")
def run_command(
    framework: Annotated[
        str | None,
        typer.Argument(help="Framework or baseline name (see `courtroom frameworks`); not needed with --resume."),
    ] = None,
    task: Annotated[str, typer.Option("--task", help="Task name (see `courtroom tasks`).")] = "boolean_expressions",
    limit: Annotated[int | None, typer.Option("--limit", help="Run the first N examples of the split.")] = None,
    loops: Annotated[int | None, typer.Option("--loops", help="JoT rounds (n_loops).")] = None,
    data: Annotated[
        str, typer.Option("--data", help="auto | generate | hub | PATH (json/jsonl/csv/parquet).")
    ] = "auto",
    split: Annotated[str, typer.Option("--split", help="train | dev | test")] = "test",
    seed: Annotated[int, typer.Option("--seed", help="Seed for data generation and splits.")] = 0,
    sets: opt.SET = None,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            help="Examples run at once, and the bound on LM requests in flight (default 4; on --resume, the run's).",
        ),
    ] = None,
    out: Annotated[str, typer.Option("--out", help="Folder that receives the run folder.")] = "runs",
    show: Annotated[int | None, typer.Option("--show", help="Print the transcript of example i afterwards.")] = None,
    resume_dir: Annotated[
        Path | None,
        typer.Option("--resume", help="Finish an interrupted run (or repeat group) in RUN_DIR; nothing is sent twice."),
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option("--retry-failed", help="With --resume: run the examples that failed again too.")
    ] = False,
    repeats: Annotated[int, typer.Option("--repeats", help="Run R times; report mean, sd and 95% CI.")] = 1,
    dataset: opt.DATASET = None,
    text_field: opt.TEXT_FIELD = None,
    label_field: opt.LABEL_FIELD = None,
    labels: opt.LABELS = None,
    dataset_config: opt.DATASET_CONFIG = None,
    hub_split: opt.HUB_SPLIT = "train",
    prices: opt.PRICES = None,
    train_limit: opt.TRAIN_LIMIT = None,
    ambiguity_k: Annotated[
        int,
        typer.Option(
            "--ambiguity-k",
            help="courtroom-llm: hear each case K times and print the ambiguity split (0: off).",
        ),
    ] = 0,
    theta: Annotated[float, typer.Option("--theta", help="Ambiguous if D_rate <= theta.")] = 0.5,
    dry_run: opt.DRY_RUN = False,
    max_cost: opt.MAX_COST = None,
    max_calls: opt.MAX_CALLS = None,
) -> None:
    """Evaluate FRAMEWORK on a task; print the summary and the run folder's path."""
    from courtroom.eval.metrics import load_prices
    from courtroom.eval.repeats import is_repeat_group, resume_repeats, run_repeats
    from courtroom.eval.resume import resume
    from courtroom.eval.runs import RunConfig, run
    from courtroom.lms import parse_role_overrides
    from courtroom.programs import get_framework

    price_table = load_prices(prices) if prices else None
    config = None
    if resume_dir is None:
        if framework is None:
            raise ConfigError("name a framework (see `courtroom frameworks`) or pass --resume RUN_DIR")
        cls = get_framework(framework)
        knobs = opt.parse_sets(sets)
        if loops is not None:
            knobs["n_loops"] = loops
        spec = opt.dataset_spec(dataset, text_field, label_field, labels, dataset_config, hub_split)
        config = RunConfig(
            framework=framework,
            task=task,
            data=data,
            split=split,
            limit=limit,
            seed=seed,
            knobs=knobs,
            lm=lm,
            roles=parse_role_overrides(role or [], cls.roles),
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            concurrency=concurrency or 4,
            out=out,
            dataset=spec,
            prices=price_table,
            train_limit=train_limit,
        )
    if dry_run:
        from courtroom.cli._cost import print_estimates
        from courtroom.eval.dry_run import estimate_runs

        if config is None:
            raise ConfigError("--dry-run estimates a new run: drop --resume")
        return print_estimates(estimate_runs({config.framework: config}, repeats=repeats))
    from courtroom.cli._cost import make_budget

    budget = make_budget(max_calls, max_cost, price_table, repeats)
    stdout = Console()
    # Transient: the bar disappears when done (or on an error), leaving only the summary or the error line.
    with opt.progress_bar(Console(stderr=True)) as bar:
        handle = bar.add_task(framework or "resume", total=None, status="starting")
        state = {"done": 0, "failed": 0, "correct": 0, "total": 0}

        def on_start(n: int) -> None:
            state["total"] += n
            bar.update(handle, total=state["total"], status="")

        def progress(res: Any) -> None:
            state["done"] += 1
            state["failed"] += res.prediction is None
            state["correct"] += res.correct
            bar.update(
                handle,
                advance=1,
                status=f"acc {state['correct'] / state['done']:.2f}  failed {state['failed']}",
            )

        group = None
        if config is None:
            assert resume_dir is not None
            overrides: dict[str, Any] = {
                "lm": lm,
                "api_base": api_base,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "concurrency": concurrency,
                "prices": price_table,
            }
            if role:
                overrides["roles"] = dict(r.split("=", 1) for r in role if "=" in r)
            if is_repeat_group(resume_dir):
                group = opt_budget(
                    budget,
                    resume_repeats,
                    resume_dir,
                    progress=lambda r, res: progress(res),
                    on_start=lambda r, n: on_start(n),
                    **overrides,
                )
            else:
                outcome = opt_budget(
                    budget,
                    resume,
                    resume_dir,
                    progress=progress,
                    on_start=on_start,
                    retry_failed=retry_failed,
                    **overrides,
                )
        elif repeats > 1:
            group = opt_budget(
                budget,
                run_repeats,
                config,
                repeats,
                progress=lambda r, res: progress(res),
                on_start=lambda r, n: on_start(n),
            )
        else:
            outcome = opt_budget(budget, run, config, progress=progress, on_start=on_start)
    if group is not None:
        from courtroom.eval.repeats import stats_markdown

        stdout.print(stats_markdown(group.stats, f"{len(group.outcomes)} repeats"), markup=False)
        stdout.print(f"repeat group: {group.group_dir}", soft_wrap=True, markup=False)
        return
    title = f"{outcome.run_dir.name}"
    stdout.print(summary_table(outcome.summary, title))
    if outcome.summary["failures"]:
        stdout.print(
            f"{outcome.summary['failures']} example(s) failed: "
            f"{', '.join(outcome.summary['failed_ids'][:10])}; see results.jsonl for errors"
        )
    if ambiguity_k:
        from courtroom.eval.analysis import analyses_lines
        from courtroom.eval.compare import run_ambiguity

        parts = run_ambiguity(outcome.run_dir, ambiguity_k, theta)
        for line in analyses_lines(outcome.run_dir.name, {"ambiguity": parts.to_dict("records")}):
            stdout.print(line, markup=False, soft_wrap=True)
    if show is not None:
        from courtroom.cli.show import print_example

        print_example(outcome.run_dir, show, stdout)
    stdout.print(f"run folder: {outcome.run_dir}", soft_wrap=True, markup=False)
    if outcome.results and outcome.summary["failures"] == len(outcome.results):
        first = next(r.error for r in outcome.results if r.error)
        raise CourtroomError(f"every example failed (first error: {first}); check the model name, key and network")
