"""``courtroom compile FRAMEWORK --task T --optimizer O -o program.json``: optimize and save a program."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli import _config_file
from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.errors import ConfigError


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


@app.command("compile")
def compile_command(
    ctx: typer.Context,
    framework: Annotated[str | None, typer.Argument(help="Framework name (or take it from --config).")] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            metavar="FILE",
            is_eager=True,
            callback=_config_file.recipe_or_load,
            help="best.json from `courtroom study --export-best`, or options from a YAML, TOML or JSON file "
            "(keys: the flags' names); flags win.",
        ),
    ] = None,
    task: Annotated[
        str | None,
        typer.Option(
            "--task",
            help="Task name (see `courtroom tasks`).",
            show_default="the recipe's, else boolean_expressions",
            rich_help_panel=opt.DATA_PANEL,
        ),
    ] = None,
    data: opt.DATA = "auto",
    seed: opt.SEED = 0,
    train_limit: opt.TRAIN_LIMIT_20 = 20,
    dev_limit: opt.DEV_LIMIT = 20,
    train: opt.OLD_TRAIN = None,
    dev: opt.OLD_DEV = None,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    timeout: opt.TIMEOUT = None,
    prompt_lm: Annotated[
        str | None,
        typer.Option(
            "--prompt-lm",
            help="Model for the optimizer's own proposals.",
            show_default="the judge's model",
            rich_help_panel=opt.MODELS_PANEL,
        ),
    ] = None,
    sets: opt.SET = None,
    preset: opt.PRESET = None,
    loops: opt.LOOPS = None,
    optimizer: Annotated[
        str,
        typer.Option(
            "--optimizer",
            help="labeled | bootstrap | bootstrap-rs | knn | mipro | copro | gepa",
            rich_help_panel=opt.FRAMEWORK_PANEL,
        ),
    ] = "bootstrap",
    opt_settings: Annotated[
        list[str] | None,
        typer.Option(
            "--opt",
            help="Optimizer setting KEY=VALUE (e.g. max_bootstrapped_demos=2); repeatable.",
            rich_help_panel=opt.FRAMEWORK_PANEL,
        ),
    ] = None,
    out: Annotated[
        str, typer.Option("-o", "--out", help="Program file to write.", rich_help_panel=opt.OUTPUT_PANEL)
    ] = "program.json",
    concurrency: Annotated[
        int,
        typer.Option(
            "--concurrency", min=1, help="LM requests in flight, in all.", rich_help_panel=opt.EXECUTION_PANEL
        ),
    ] = 4,
    fail_on_error: opt.FAIL_ON_ERROR = None,
    dry_run: opt.DRY_RUN = False,
    max_calls: opt.MAX_CALLS = None,
    max_cost: opt.MAX_COST = None,
    prices: opt.PRICES = None,
) -> None:
    """Compile FRAMEWORK with a DSPy optimizer, print dev scores before and after, save the program."""
    from courtroom.api import compile
    from courtroom.eval.status import TooManyFailures, check_threshold
    from courtroom.models.lms import parse_role_overrides
    from courtroom.optimize.study_report import read_config
    from courtroom.programs import get_framework
    from courtroom.programs.presets import apply_preset

    threshold = check_threshold(fail_on_error)
    train, dev = opt.pick(ctx, "train_limit", "train"), opt.pick(ctx, "dev_limit", "dev")
    recipe: dict[str, Any] = read_config(config) if config else {}
    name = framework or recipe.get("framework")
    if preset:
        name = apply_preset(preset, name)[0]
    if not name:
        raise ConfigError("name a framework: `courtroom compile jot ...`, a --preset, or --config best.json")
    if recipe.get("framework") and recipe["framework"] != name:
        raise ConfigError(f"--config is for {recipe['framework']}, not {name}")
    from courtroom.optimize.compile import get_optimizer

    settings = opt.parse_sets(opt_settings, get_optimizer(optimizer).defaults, flag="--opt")
    opt.writable_file(out, "-o", "program.json")
    opt.check_providers(lm or recipe.get("lm"), [*(role or []), *(f"x={m}" for m in [prompt_lm] if m)])
    knobs = opt.parse_sets(sets, get_framework(name).knobs())
    if loops is not None:
        knobs["n_loops"] = loops
    result = compile(
        name,
        config=recipe,
        task=task,
        optimizer=optimizer,
        settings=settings,
        knobs=knobs,
        train=train,
        dev=dev,
        data=data,
        seed=seed,
        lm=lm,
        roles=parse_role_overrides(role or [], get_framework(name).roles),
        prompt_lm=prompt_lm,
        temperature=temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        timeout=timeout,
        concurrency=concurrency,
        preset=preset,
        out=out,
        fail_on_error=threshold,
        prices=prices,
        dry_run=dry_run,
        max_calls=max_calls,
        max_cost=max_cost,
    )
    if dry_run:
        from courtroom.cli._cost import print_estimates

        est, note = result
        return print_estimates({name: est}, [note])
    path = result.path
    framework = name
    console = Console()
    console.print(scores_table(result.before, result.after, f"{framework} + {optimizer}"))
    console.print(f"program: {path}")
    for when, folder in result.dev_dirs.items():
        console.print(f"dev {when}: {folder} (courtroom show {folder})", markup=False, soft_wrap=True)
    if result.after["status"] == "failed":
        raise TooManyFailures(f"dev score after compiling: {result.after['status_reason']}")
