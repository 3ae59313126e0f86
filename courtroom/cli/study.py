"""``courtroom study FRAMEWORK --task T --trials N``: an Optuna study over the framework's knobs."""

from __future__ import annotations

from typing import Annotated

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


@app.command("study")
def study_command(
    framework: Annotated[str, typer.Argument(help="Framework name (jot, courtroom-llm, debate-feedback, ...).")],
    task: Annotated[str, typer.Option("--task", help="Task name.")] = "boolean_expressions",
    trials: Annotated[int, typer.Option("--trials", help="Trials this process runs (0: only create the study).")] = 20,
    dev: Annotated[int, typer.Option("--dev", help="Dev examples each trial is scored on.")] = 20,
    train: Annotated[int, typer.Option("--train", help="Training examples (precedents, reliability model).")] = 20,
    storage: Annotated[
        str | None,
        typer.Option(
            "--storage",
            help="sqlite:///FILE.db (default courtroom-studies.db), journal:FILE, or postgresql://...",
        ),
    ] = None,
    study_name: Annotated[str | None, typer.Option("--study-name", help="Default: FRAMEWORK-TASK.")] = None,
    workers: Annotated[int, typer.Option("--workers", help="Trials run at once in this process.")] = 1,
    objective: Annotated[str, typer.Option("--objective", help="accuracy | f1")] = "accuracy",
    cost_objective: Annotated[
        bool,
        typer.Option(
            "--cost-objective", help="Also minimise LM calls per example (NSGA-II; reports the Pareto front)."
        ),
    ] = False,
    space: Annotated[
        list[str] | None,
        typer.Option("--space", help="Narrow a parameter: NAME=LOW:HIGH or NAME=a,b; repeatable."),
    ] = None,
    search_temperature: Annotated[
        bool, typer.Option("--search-temperature", help="Also search each role's temperature in [0, 1].")
    ] = False,
    lm: Annotated[
        list[str] | None, typer.Option("--lm", help="Model; repeat to let the study choose a model per role.")
    ] = None,
    role: opt.ROLE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    data: Annotated[str, typer.Option("--data", help="auto | generate | hub | PATH.")] = "auto",
    seed: Annotated[int, typer.Option("--seed", help="Seed for data, splits and the sampler.")] = 0,
    no_prune: Annotated[bool, typer.Option("--no-prune", help="Evaluate every trial fully.")] = False,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Examples in flight per trial.")] = 4,
    report: Annotated[str | None, typer.Option("--report", help="Report folder (default studies/NAME).")] = None,
    export_best: Annotated[
        str | None,
        typer.Option("--export-best", help="Write the best config for `courtroom compile --config`."),
    ] = None,
    dry_run: opt.DRY_RUN = False,
    max_cost: opt.MAX_COST = None,
    max_calls: opt.MAX_CALLS = None,
) -> None:
    """Search FRAMEWORK's knobs with Optuna; print the trials, write the report and the best config."""
    from courtroom.lms import parse_role_overrides
    from courtroom.optimize._report import best_trial, export_config, pareto_table, trials_table, write_report
    from courtroom.optimize.study import StudyConfig, report_dir, run_study, study_config_dict
    from courtroom.programs import get_framework

    cls = get_framework(framework)
    config = StudyConfig(
        framework=framework,
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
        space=parse_space(space),
        models=list(lm or []),
        roles=parse_role_overrides(role or [], cls.roles),
        search_temperature=search_temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        concurrency=concurrency,
        prune=not no_prune,
    )
    if dry_run:
        from courtroom.cli._cost import print_estimates
        from courtroom.eval.dry_run import estimate_study
        from courtroom.eval.runs import RunConfig
        from courtroom.optimize.spaces import build_space

        run_config = RunConfig(
            framework,
            task,
            data=data,
            split="dev",
            limit=dev,
            seed=seed,
            lm=config.models[0] if config.models else None,
            roles=config.roles,
            max_tokens=max_tokens,
            api_base=api_base,
            train_limit=train,
        )
        searched = build_space(framework, overrides=config.space, models=config.models, temperatures=search_temperature)
        est = estimate_study(run_config, searched, trials)
        note = f"{trials} trial(s), each at most the most expensive point of the space"
        return print_estimates({framework: est}, [note])
    from courtroom.cli._cost import make_budget, opt_budget

    outcome = opt_budget(make_budget(max_calls, max_cost), run_study, config)
    console = Console()
    study = outcome.study
    console.print(f"study {study.study_name}: {len(study.trials)} trial(s) in storage")
    if trials == 0:
        return
    df = trials_table(study)
    table = Table(title=f"{framework} on {task}")
    cols = [c for c in SHOWN if c in df.columns] + [p.name for p in outcome.space if p.name in df.columns]
    for c in cols:
        table.add_column(c)
    for _, row in df.iterrows():
        table.add_row(
            *[
                "" if str(row[c]) == "nan" else (f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]))
                for c in cols
            ]
        )
    console.print(table)
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
    written = write_report(study, report_dir(config, report), study_config_dict(config))
    console.print(f"report: {written['summary'].parent}")
    if export_best:
        export_config(study, framework, task, export_best)
        console.print(f"best config: {export_best} (use: courtroom compile --config {export_best})")
