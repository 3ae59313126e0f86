"""``courtroom study FRAMEWORK --task T --trials N``: an Optuna study over the framework's knobs."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.errors import ConfigError

SHOWN = ("number", "state", "accuracy", "macro_f1", "calls_per_example", "sent", "cached")


def parse_space(items: list[str] | None) -> dict[str, str]:
    """``NAME=LOW:HIGH`` or ``NAME=a,b`` strings to a dict."""
    out = {}
    for item in items or []:
        name, sep, spec = item.partition("=")
        if not sep or not name.strip() or not spec.strip():
            raise ConfigError(f"malformed --space {item!r}: write NAME=LOW:HIGH or NAME=a,b (e.g. n_loops=1:3)")
        out[name.strip()] = spec.strip()
    return out


def _option(flag: str, panel: str, help: str, **kw: Any) -> Any:  # noqa: A002 - typer's name
    return typer.Option(flag, help=help, rich_help_panel=panel, **kw)


FW, OUT, EXE = opt.FRAMEWORK_PANEL, opt.OUTPUT_PANEL, opt.EXECUTION_PANEL


@app.command("study")
def study_command(
    ctx: typer.Context,
    framework: Annotated[
        str | None,
        typer.Argument(help="Framework name (jot, courtroom-llm, debate-feedback, ...); or use --frameworks."),
    ] = None,
    config: opt.CONFIG = None,
    task: opt.TASK = "boolean_expressions",
    data: opt.DATA = "auto",
    seed: Annotated[int, _option("--seed", opt.DATA_PANEL, "Seed for data, splits and the sampler.")] = 0,
    train_limit: opt.TRAIN_LIMIT_20 = 20,
    dev_limit: opt.DEV_LIMIT = 20,
    train: opt.OLD_TRAIN = None,
    dev: opt.OLD_DEV = None,
    lm: Annotated[
        list[str] | None,
        _option("--lm", opt.MODELS_PANEL, "Model; repeat to let the study choose a model per role."),
    ] = None,
    role: opt.ROLE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    timeout: opt.TIMEOUT = None,
    search_temperature: Annotated[
        bool, _option("--search-temperature", opt.MODELS_PANEL, "Also search each role's temperature in [0, 1].")
    ] = False,
    frameworks: Annotated[
        str | None,
        _option("--frameworks", FW, "Search over designs too: a,b,c or all (the design is a parameter)."),
    ] = None,
    preset: Annotated[
        str | None,
        _option("--preset", FW, "Fix the knobs a paper preset sets (see `courtroom frameworks`); --space wins."),
    ] = None,
    space: Annotated[
        list[str] | None, _option("--space", FW, "Narrow a parameter: NAME=LOW:HIGH or NAME=a,b; repeatable.")
    ] = None,
    objective: Annotated[str, _option("--objective", FW, "accuracy | f1")] = "accuracy",
    cost_objective: Annotated[
        bool, _option("--cost-objective", FW, "Also minimise LM calls per example (NSGA-II; reports the Pareto front).")
    ] = False,
    compile_with: Annotated[
        str | None, _option("--compile", FW, "Compile each trial on the train split: labeled, bootstrap, mipro, ...")
    ] = None,
    compile_set: Annotated[
        list[str] | None, _option("--compile-set", FW, "Optimizer setting KEY=VALUE; repeatable.")
    ] = None,
    report: Annotated[str | None, _option("--report", OUT, "Report folder.", show_default="studies/NAME")] = None,
    export_best: Annotated[
        str | None, _option("--export-best", OUT, "Write the best config for `courtroom compile --config`.")
    ] = None,
    trials: Annotated[
        int, _option("--trials", EXE, "Trials this process runs (0: only create the study).", min=0)
    ] = 20,
    storage: Annotated[
        str | None,
        _option(
            "--storage",
            EXE,
            "sqlite:///FILE.db, journal:FILE, or postgresql://...",
            show_default="sqlite:///courtroom-studies.db",
        ),
    ] = None,
    study_name: Annotated[
        str | None, _option("--study-name", EXE, "Name of the study in --storage.", show_default="FRAMEWORK-TASK")
    ] = None,
    workers: Annotated[int, _option("--workers", EXE, "Trials run at once in this process.", min=1)] = 1,
    concurrency: Annotated[int, _option("--concurrency", EXE, "LM requests in flight, all workers.", min=1)] = 4,
    no_prune: Annotated[bool, _option("--no-prune", EXE, "Evaluate every trial fully.")] = False,
    fail_on_error: opt.FAIL_ON_ERROR = None,
    dry_run: opt.DRY_RUN = False,
    max_calls: opt.MAX_CALLS = None,
    max_cost: opt.MAX_COST = None,
    prices: opt.PRICES = None,
    cost_unit: Annotated[
        str | None,
        _option(
            "--cost-unit", opt.BUDGET_PANEL, "calls | tokens | dollars.", show_default="tokens; dollars with --prices"
        ),
    ] = None,
) -> None:
    """Search FRAMEWORK's knobs with Optuna; print the trials, write the report and the best config."""
    from courtroom.eval.status import check_threshold

    train, dev = opt.pick(ctx, "train_limit", "train"), opt.pick(ctx, "dev_limit", "dev")
    options = {k: v for k, v in locals().items() if k not in ("ctx", "config")} | {"space": parse_space(space)}
    if frameworks or compile_with:  # a study over designs (one design with --compile alone)
        from courtroom.cli._design_study import design_study

        design_study(**options)
        return
    if framework is None:
        raise ConfigError("name a FRAMEWORK, or search several designs with --frameworks a,b,c (or all)")
    from courtroom.api import study as run_study
    from courtroom.models.lms import parse_role_overrides
    from courtroom.optimize.spaces import SPACES
    from courtroom.optimize.study_report import best_trial, pareto_table
    from courtroom.programs import get_framework
    from courtroom.programs.presets import apply_preset

    framework, fixed = apply_preset(preset, framework) if preset else (framework, {})
    in_space = {p.name for p in SPACES.get(framework, ())}
    preset_space = {k: str(v) for k, v in fixed.items() if k in in_space}
    cls = get_framework(framework)
    opt.check_providers(lm, role)
    if report:
        opt.writable_folder(report, "--report")
    if export_best:
        opt.writable_file(export_best, "--export-best", "best.json")
    outcome = run_study(
        framework,
        task=task,
        trials=trials,
        dev=dev,
        train=train,
        data=data,
        seed=seed,
        storage=storage,
        study_name=study_name,
        workers=workers,
        objective=objective,
        cost_objective=cost_objective,
        space=preset_space | parse_space(space),
        lm=list(lm or []),
        roles=parse_role_overrides(role or [], cls.roles),
        search_temperature=search_temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        timeout=timeout,
        concurrency=concurrency,
        prune=not no_prune,
        report=report,
        export_best=export_best,
        fail_on_error=check_threshold(fail_on_error),
        prices=prices,
        dry_run=dry_run,
        max_calls=max_calls,
        max_cost=max_cost,
    )
    if dry_run:
        from courtroom.cli._cost import print_estimates

        est, note = outcome
        return print_estimates({framework: est}, [note])
    console = Console()
    study = outcome.study
    console.print(f"study {study.study_name}: {len(study.trials)} trial(s) in storage")
    if trials == 0:
        return
    df = outcome.table
    table = Table(title=f"{framework} on {task}")
    cols = [c for c in SHOWN if c in df.columns] + [p.name for p in outcome.space if p.name in df.columns]
    cols += ["error"] if "error" in df.columns else []
    for c in cols:
        table.add_column(c)
    for _, row in df.iterrows():
        table.add_row(
            *[
                "" if str(row[c]) == "nan" else (f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c])[:60])
                for c in cols
            ]
        )
    console.print(table)
    failed = [t for t in study.trials if t.state.name == "FAIL"]
    if failed:
        console.print(f"{len(failed)} trial(s) failed of {len(study.trials)}:", markup=False)
        for t in failed:
            error = t.user_attrs.get("error", "no error recorded (its worker died)")
            console.print(f"  trial {t.number}: {error}", markup=False, soft_wrap=True)
    if cost_objective:
        console.print("Pareto front (score up, calls per example down):")
        console.print(pareto_table(study).to_string(index=False), markup=False)
    try:
        best = best_trial(study)
    except ValueError:
        console.print("no trial completed: see the trials table for failures")
        return
    params = best.user_attrs.get("config", best.params)
    console.print(f"best trial {best.number}: values {list(best.values)} params {params}")
    console.print(f"report: {outcome.report_dir}")
    if export_best:
        console.print(f"best config: {export_best} (use: courtroom compile --config {export_best})")
