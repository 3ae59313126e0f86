"""``courtroom run FRAMEWORK --task T``: evaluate a framework and write a run folder."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.errors import ConfigError
from courtroom.eval.status import TooManyFailures, check_threshold


def _given(ctx: typer.Context, framework: str | None, sets: list[str] | None, loops: int | None) -> dict[str, Any]:
    """The run-defining options given on the command line: a resume refuses any that differ."""
    given: dict[str, Any] = {
        name: ctx.params[name]
        for name in ("task", "limit", "data", "split", "seed", "train_limit")
        # Given on the command line or in --config (typer vendors click: compare by name).
        if getattr(ctx.get_parameter_source(name), "name", None) in ("COMMANDLINE", "DEFAULT_MAP")
    }
    if framework is not None:
        given["framework"] = framework
    knobs = opt.parse_sets(sets)
    if loops is not None:
        knobs["n_loops"] = loops
    if knobs:
        given["knobs"] = knobs
    return given


@app.command("run")
def run_command(
    ctx: typer.Context,
    framework: Annotated[
        str | None,
        typer.Argument(help="Framework or baseline name (see `courtroom frameworks`); not needed with --resume."),
    ] = None,
    config: opt.CONFIG = None,
    task: opt.TASK = "boolean_expressions",
    data: opt.DATA = "auto",
    split: opt.SPLIT = "test",
    seed: opt.SEED = 0,
    limit: opt.LIMIT = None,
    train_limit: opt.TRAIN_LIMIT = None,
    dataset: opt.DATASET = None,
    text_field: opt.TEXT_FIELD = None,
    label_field: opt.LABEL_FIELD = None,
    labels: opt.LABELS = None,
    dataset_config: opt.DATASET_CONFIG = None,
    hub_split: opt.HUB_SPLIT = "train",
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    timeout: opt.TIMEOUT = None,
    sets: opt.SET = None,
    preset: opt.PRESET = None,
    loops: opt.LOOPS = None,
    out: Annotated[
        str, typer.Option("--out", help="Folder that receives the run folder.", rich_help_panel=opt.OUTPUT_PANEL)
    ] = "runs",
    show: Annotated[
        int | None,
        typer.Option(
            "--show", min=0, help="Print the transcript of example i afterwards.", rich_help_panel=opt.OUTPUT_PANEL
        ),
    ] = None,
    ambiguity_k: Annotated[
        int,
        typer.Option(
            "--ambiguity-k",
            min=0,
            help="courtroom-llm: hear each case K times and print the ambiguity split (0: off).",
            rich_help_panel=opt.OUTPUT_PANEL,
        ),
    ] = 0,
    theta: Annotated[
        float,
        typer.Option(
            "--theta", min=0.0, max=1.0, help="Ambiguous if D_rate <= theta.", rich_help_panel=opt.OUTPUT_PANEL
        ),
    ] = 0.5,
    concurrency: Annotated[
        int | None,
        typer.Option(
            "--concurrency",
            min=1,
            help="Examples run at once, and the bound on LM requests in flight.",
            show_default="4; on --resume, the run's",
            rich_help_panel=opt.EXECUTION_PANEL,
        ),
    ] = None,
    repeats: Annotated[
        int,
        typer.Option(
            "--repeats", min=1, help="Run R times; report mean, sd and 95% CI.", rich_help_panel=opt.EXECUTION_PANEL
        ),
    ] = 1,
    resume_dir: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            help="Finish an interrupted run (or repeat group) in RUN_DIR; nothing is sent twice.",
            rich_help_panel=opt.EXECUTION_PANEL,
        ),
    ] = None,
    retry_failed: Annotated[
        bool,
        typer.Option(
            "--retry-failed",
            help="With --resume: run the examples that failed again too.",
            rich_help_panel=opt.EXECUTION_PANEL,
        ),
    ] = False,
    fail_on_error: opt.FAIL_ON_ERROR = None,
    dry_run: opt.DRY_RUN = False,
    max_calls: opt.MAX_CALLS = None,
    max_cost: opt.MAX_COST = None,
    prices: opt.PRICES = None,
    debias: opt.DEBIAS = None,
) -> None:
    """Evaluate FRAMEWORK on a task; print the summary and the run folder's path."""
    from courtroom.api import run
    from courtroom.models.lms import parse_role_overrides
    from courtroom.runner.repeats import RepeatOutcome

    opt.check_providers(lm, role)
    if resume_dir is None and framework is None and preset is None:
        raise ConfigError("name a framework (see `courtroom frameworks`), a --preset, or pass --resume RUN_DIR")
    if resume_dir is None:
        from courtroom.programs import get_framework
        from courtroom.programs.presets import apply_preset

        name = apply_preset(preset, framework)[0]
        cls = get_framework(name)
        opt.writable_folder(out, "--out")
        roles = parse_role_overrides(role or [], cls.roles)
        knobs = opt.parse_sets(sets, cls.knobs())
        given: dict[str, Any] = {}
    else:
        roles = dict(r.split("=", 1) for r in role or [] if "=" in r)
        knobs = opt.parse_sets(sets)
        given = _given(ctx, framework, sets, loops)
    if loops is not None:
        knobs["n_loops"] = loops
    outcome = run(
        framework,
        task=task,
        data=data,
        split=split,
        limit=limit,
        seed=seed,
        knobs=knobs,
        lm=lm,
        roles=roles,
        temperature=temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        timeout=timeout,
        concurrency=concurrency,
        out=out,
        repeats=repeats,
        dataset=opt.dataset_spec(dataset, text_field, label_field, labels, dataset_config, hub_split),
        prices=prices,
        train_limit=train_limit,
        ambiguity_k=ambiguity_k,
        theta=theta,
        resume=resume_dir,
        retry_failed=retry_failed,
        preset=preset,
        fail_on_error=check_threshold(fail_on_error),
        resume_given=given,
        dry_run=dry_run,
        max_calls=max_calls,
        max_cost=max_cost,
        debias=debias,
    )
    if dry_run:
        from courtroom.cli._cost import print_estimates

        return print_estimates(outcome)
    stdout = Console()
    if isinstance(outcome, RepeatOutcome):
        from courtroom.runner.repeats import stats_markdown

        stdout.print(stats_markdown(outcome.stats, f"{len(outcome.outcomes)} repeats"), markup=False)
        stdout.print(f"repeat group: {outcome.group_dir}", soft_wrap=True, markup=False)
        failed = [o for o in outcome.outcomes if o.summary.get("status") == "failed"]
        if failed:
            raise TooManyFailures(f"{failed[0].run_dir.name}: {failed[0].summary['status_reason']}")
        return
    title = f"{outcome.run_dir.name}"
    from courtroom.cli.show import summary_table

    stdout.print(summary_table(outcome.summary, title))
    if outcome.summary["failures"]:
        stdout.print(
            f"{outcome.summary['failures']} example(s) failed: "
            f"{', '.join(outcome.summary['failed_ids'][:10])}; see results.jsonl for errors"
        )
        if not retry_failed:
            stdout.print(
                f"to run them again: courtroom run --resume {outcome.run_dir} --retry-failed",
                soft_wrap=True,
                markup=False,
            )
    if outcome.analyses:
        from courtroom.analysis.papers import analyses_lines

        for line in analyses_lines(outcome.run_dir.name, outcome.analyses):
            stdout.print(line, markup=False, soft_wrap=True)
    if show is not None:
        from courtroom.cli.show import print_example

        print_example(outcome.run_dir, show, stdout)
    stdout.print(f"run folder: {outcome.run_dir}", soft_wrap=True, markup=False)
    if outcome.summary.get("status") == "failed":
        raise TooManyFailures(
            f"{outcome.summary['status_reason']}; the run folder is complete: "
            f"courtroom run --resume {outcome.run_dir} --retry-failed runs them again"
        )
