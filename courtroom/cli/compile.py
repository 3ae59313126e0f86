"""``courtroom compile FRAMEWORK --task T --optimizer O -o program.json``: optimize and save a program."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.errors import ConfigError


def read_config(path: str) -> dict[str, Any]:
    """A config written by ``courtroom study --export-best`` (framework, task, knobs, models)."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != "courtroom-config":
        raise ConfigError(f"{path} is not a courtroom config: write one with `courtroom study --export-best`")
    return data


def get_optimizer_defaults(name: str) -> dict[str, Any]:
    """An optimizer's default settings (an unknown name fails with the valid ones)."""
    from courtroom.optimize.compile import OPTIMIZERS

    if name not in OPTIMIZERS:
        raise ConfigError(f"unknown optimizer {name!r}: valid optimizers are {', '.join(sorted(OPTIMIZERS))}")
    return dict(OPTIMIZERS[name].defaults)


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
    framework: Annotated[str | None, typer.Argument(help="Framework name (or take it from --config).")] = None,
    task: Annotated[str | None, typer.Option("--task", help="Task name.")] = None,
    optimizer: Annotated[
        str,
        typer.Option("--optimizer", help="labeled | bootstrap | bootstrap-rs | knn | mipro | copro | gepa"),
    ] = "bootstrap",
    train: Annotated[int, typer.Option("--train", help="Training examples (the task's train split).")] = 20,
    dev: Annotated[int, typer.Option("--dev", help="Dev examples, scored before and after.")] = 20,
    out: Annotated[str, typer.Option("-o", "--out", help="Program file to write.")] = "program.json",
    config: Annotated[
        str | None, typer.Option("--config", help="best.json from `courtroom study --export-best`.")
    ] = None,
    opt_settings: Annotated[
        list[str] | None,
        typer.Option("--opt", help="Optimizer setting KEY=VALUE (e.g. max_bootstrapped_demos=2); repeatable."),
    ] = None,
    prompt_lm: Annotated[
        str | None,
        typer.Option("--prompt-lm", help="Model for the optimizer's own proposals (default: the judge's model)."),
    ] = None,
    loops: Annotated[int | None, typer.Option("--loops", help="JoT rounds (n_loops).")] = None,
    sets: opt.SET = None,
    data: Annotated[str, typer.Option("--data", help="auto | generate | hub | PATH.")] = "auto",
    seed: Annotated[int, typer.Option("--seed", help="Seed for data and splits.")] = 0,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Examples in flight at once.")] = 4,
    dry_run: opt.DRY_RUN = False,
    max_cost: opt.MAX_COST = None,
    max_calls: opt.MAX_CALLS = None,
) -> None:
    """Compile FRAMEWORK with a DSPy optimizer, print dev scores before and after, save the program."""
    from courtroom.cache import configure_cache
    from courtroom.lms import parse_role_overrides
    from courtroom.optimize.compile import compile_program
    from courtroom.programs import get_framework
    from courtroom.saving import save_program

    base: dict[str, Any] = read_config(config) if config else {}
    framework = framework or base.get("framework")
    if not framework:
        raise ConfigError("name a framework: `courtroom compile jot ...` or --config best.json")
    if base.get("framework") and base["framework"] != framework:
        raise ConfigError(f"--config is for {base['framework']}, not {framework}")
    cls = get_framework(framework)
    knobs = dict(base.get("knobs") or {}) | opt.parse_sets(sets)
    if loops is not None:
        knobs["n_loops"] = loops
    roles = dict(base.get("roles") or {}) | parse_role_overrides(role or [], cls.roles)
    temps = dict(base.get("temperatures") or {})
    if temps and temperature is None:
        from courtroom.lms import LMSpec

        # A searched temperature applies to that role's model (its own, else the default one).
        default = lm or base.get("lm") or os.environ.get("COURTROOM_LM", "local")
        roles = {r: LMSpec(str(roles.get(r) or default), temperature=float(t)) for r, t in temps.items()} | {
            r: m for r, m in roles.items() if r not in temps
        }
    if dry_run or max_calls is not None or max_cost is not None:
        from courtroom.cli._cost import check_compile_budget, print_estimates
        from courtroom.eval.dry_run import estimate_compile
        from courtroom.eval.runs import RunConfig

        run_config = RunConfig(
            framework,
            task or base.get("task") or "boolean_expressions",
            data=data,
            seed=seed,
            knobs=knobs,
            lm=lm or base.get("lm"),
            roles={r: str(getattr(m, "model", m)) for r, m in roles.items()},
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
        )
        settings = {**get_optimizer_defaults(optimizer), **opt.parse_sets(opt_settings)}
        est, note = estimate_compile(run_config, optimizer, settings, train=train, dev=dev)
        if dry_run:
            return print_estimates({framework: est}, [note])
        check_compile_budget(est, optimizer, max_calls, max_cost)
    configure_cache()
    result = compile_program(
        framework,
        task=task or base.get("task") or "boolean_expressions",
        optimizer=optimizer,
        settings=opt.parse_sets(opt_settings),
        knobs=knobs,
        train=train,
        dev=dev,
        data=data,
        seed=seed,
        lm=lm or base.get("lm"),
        roles=roles,
        prompt_lm=prompt_lm,
        temperature=temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        concurrency=concurrency,
    )
    path = save_program(result.program, out, result.metadata)
    console = Console()
    console.print(scores_table(result.before, result.after, f"{framework} + {optimizer}"))
    console.print(f"program: {path}")
