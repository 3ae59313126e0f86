"""One Python function per command: ``courtroom run`` calls :func:`run`, and so on.

Each takes the command's options as keyword arguments, draws the same progress display
(``progress=False`` turns it off) and writes the same folders and files; the commands only
parse flags and print. They are re-exported at the top level: ``courtroom.run(...)``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError
from courtroom.reporting.progress import ProgressDisplay

if TYPE_CHECKING:
    import pandas as pd

    from courtroom.optimize.compile import CompileResult

__all__ = ["compare", "compile", "report", "run", "runs", "study"]

Prices = str | Path | Mapping[str, Sequence[float]] | None


def _budget(max_calls: int | None, max_cost: float | None, prices: Any = None) -> Any:
    """A :class:`~courtroom.cost.budget.Budget` for ``max_calls``/``max_cost``; None when neither is set."""
    if max_calls is None and max_cost is None:
        return None
    from courtroom.cost.budget import Budget

    return Budget(max_calls=max_calls, max_cost=max_cost, prices=prices)


def _prices(prices: Prices) -> dict[str, list[float]] | None:
    if prices is None:
        return None
    if isinstance(prices, Mapping):
        return {k: [float(x) for x in v] for k, v in prices.items()}
    from courtroom.eval.metrics import load_prices

    return load_prices(prices)


def run(
    framework: str | None = None,
    *,
    task: str = "boolean_expressions",
    limit: int | None = None,
    split: str = "test",
    data: str = "auto",
    seed: int = 0,
    knobs: Mapping[str, Any] | None = None,
    lm: str | None = None,
    roles: Mapping[str, str] | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    concurrency: int | None = None,
    out: str | Path = "runs",
    repeats: int = 1,
    dataset: Mapping[str, Any] | None = None,
    prices: Prices = None,
    train_limit: int | None = None,
    ambiguity_k: int = 0,
    theta: float = 0.5,
    resume: str | Path | None = None,
    retry_failed: bool = False,
    preset: str | None = None,
    fail_on_error: float | None = None,
    resume_given: Mapping[str, Any] | None = None,
    progress: bool = True,
    lms: Any = None,
    dry_run: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    debias: str | None = None,
) -> Any:
    """Evaluate ``framework`` on a task and write a run folder (``courtroom run``).

    ``resume=RUN_DIR`` finishes an interrupted run or repeat group instead; ``repeats > 1``
    writes a repeat group. ``lms`` (a ready role map, e.g. fakes) replaces the named models.
    ``preset`` sets a paper's knobs and sampling temperatures (``knobs`` override them).
    ``fail_on_error`` (default 0.1) is the failed fraction above which the summary's ``status``
    is ``failed``. On resume, ``resume_given`` holds run-defining options (framework, knobs, task,
    data, ...) that must match the folder's, or the resume is refused.
    Returns a :class:`~courtroom.runner.runs.RunOutcome` (``run_dir``, ``summary``, ``results``)
    or, for repeats, a :class:`~courtroom.runner.repeats.RepeatOutcome` (``group_dir``, ``stats``).

    ``dry_run=True`` sends nothing and returns ``{framework: Estimate}`` (calls, tokens, dollars;
    :mod:`courtroom.cost.estimate`). ``max_calls``/``max_cost`` stop starting examples at that
    budget: the folder is left resumable and :class:`~courtroom.cost.budget.BudgetExhausted`
    is raised, its ``line`` saying what was spent and how to finish.

    ``debias="swap"`` runs each case again with the sides exchanged and reports the
    position-consistency rate; ``"swap-vote"`` also makes the verdict the two orders' agreement
    (:mod:`courtroom.analysis.bias`). Frameworks without sides to swap are refused.
    """
    from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR
    from courtroom.programs.presets import apply_preset
    from courtroom.runner.repeats import is_repeat_group, resume_repeats, run_repeats
    from courtroom.runner.resume import resume as resume_run
    from courtroom.runner.runs import RunConfig
    from courtroom.runner.runs import run as run_once

    price_table = _prices(prices)
    config = None
    if resume is None:
        if framework is None and preset is None:
            raise ConfigError("name a framework (see `courtroom frameworks`), a --preset, or pass --resume RUN_DIR")
        framework, knobs = apply_preset(preset, framework, knobs)
        config = RunConfig(
            framework=framework,
            task=task,
            data=data,
            split=split,
            limit=limit,
            seed=seed,
            knobs=dict(knobs or {}),
            lm=lm,
            roles=dict(roles or {}),
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            timeout=timeout,
            concurrency=concurrency or 4,
            out=str(out),
            dataset=dict(dataset) if dataset else None,
            prices=price_table,
            train_limit=train_limit,
            preset=preset,
            debias=debias,
            fail_on_error=DEFAULT_FAIL_ON_ERROR if fail_on_error is None else fail_on_error,
        )
    if dry_run:
        from courtroom.cost.dry_run import estimate_runs

        if config is None:
            raise ConfigError("--dry-run estimates a new run: drop --resume")
        return estimate_runs({config.framework: config}, repeats=repeats)
    spend = {} if (budget := _budget(max_calls, max_cost, price_table)) is None else {"budget": budget}
    with ProgressDisplay(progress, prices=price_table) as display:
        bar = display.track(framework or "resume")
        hooks: dict[str, Any] = {"progress": lambda r, res: bar.result(res), "on_start": lambda r, n: bar.start(n)}
        if resume is not None:
            overrides: dict[str, Any] = {
                "lm": lm,
                "roles": dict(roles or {}),
                "api_base": api_base,
                "timeout": timeout,
                "temperature": temperature,
                "max_tokens": max_tokens,
                "concurrency": concurrency,
                "prices": price_table,
                "fail_on_error": fail_on_error,
                "debias": debias,
                **dict(resume_given or {}),
            }
            if is_repeat_group(resume):
                return resume_repeats(resume, lms=lms, **hooks, **overrides, **spend)
            outcome = resume_run(
                resume,
                lms=lms,
                progress=bar.result,
                on_start=bar.start,
                retry_failed=retry_failed,
                **overrides,
                **spend,
            )
        else:
            assert config is not None  # built above for every new run
            if repeats > 1:
                return run_repeats(config, repeats, lms=lms, **hooks, **spend)
            outcome = run_once(config, progress=bar.result, on_start=bar.start, lms=lms, **spend)
    if ambiguity_k:
        from courtroom.analysis.ambiguity import run_ambiguity

        outcome.analyses["ambiguity"] = run_ambiguity(
            outcome.run_dir, ambiguity_k, theta, lms=lms, api_base=api_base
        ).to_dict("records")
    return outcome


def compare(
    frameworks: str | Sequence[str] | None = None,
    *,
    task: str | None = None,
    progress: bool = True,
    prices: Prices = None,
    dry_run: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    resume: str | Path | None = None,
    **options: Any,
) -> Any:
    """Run every framework on the same examples; write the comparison folder (``courtroom compare``).

    ``frameworks`` is a list or a comma-separated string; ``task`` defaults to
    ``boolean_expressions``. Other options are those of
    :func:`courtroom.comparison.compare.compare` (``limit``, ``repeats``, ``lm``, ``roles``,
    ``knobs`` as ``{"KEY": v, "FRAMEWORK.KEY": v}``, ``out``, ``ambiguity_k``,
    ``matched_baselines``, ``baseline``, ``match``, ...). The result's ``table`` is the comparison
    as a pandas DataFrame; ``out_dir`` the folder. ``dry_run``, ``max_calls``, ``max_cost``: as
    in :func:`run` (a dry run returns ``{row: Estimate}``, matched baselines included).

    ``resume=COMPARISON_DIR`` finishes an interrupted comparison in its folder: runs are resumed,
    rows not started are run, nothing finished is sent again. Options given with it must match
    the comparison's, except ``api_base``, ``timeout``, ``concurrency``, ``prices``, ``fail_on_error``.
    ``debias="swap"|"swap-vote"`` applies to the compared frameworks that have sides to swap.
    """
    from courtroom.comparison.compare import compare as run_compare

    names = None if frameworks is None else frameworks.split(",") if isinstance(frameworks, str) else list(frameworks)
    price_table = _prices(prices)
    if resume is not None and dry_run:
        raise ConfigError("--dry-run estimates a new comparison: drop --resume")
    if resume is None and names is None:
        raise ConfigError("pass frameworks (e.g. --frameworks jot,cot), or resume a comparison folder")
    if dry_run:
        from courtroom.comparison.compare import comparison_configs
        from courtroom.cost.dry_run import estimate_comparison

        planned = {k: options.pop(k) for k in ("repeats", "matched_baselines", "baseline", "match") if k in options}
        for k in ("ambiguity_k", "theta", "lms", "progress", "on_start"):
            options.pop(k, None)
        configs = comparison_configs(task or "boolean_expressions", names or [], prices=price_table, **options)
        return estimate_comparison(configs, **planned)
    budget = _budget(max_calls, max_cost, price_table)
    with ProgressDisplay(progress, prices=price_table) as display:
        bars: dict[str, Any] = {}

        def bar(framework: str) -> Any:
            if framework not in bars:
                bars[framework] = display.track(framework)
            return bars[framework]

        hooks: dict[str, Any] = {
            "progress": lambda f, res: bar(f).result(res),
            "on_start": lambda f, n: bar(f).start(n),
            "budget": budget,
        }
        if resume is not None:
            from courtroom.comparison.resume import resume_comparison

            given: dict[str, Any] = {"task": task, "frameworks": names, "prices": price_table}
            return resume_comparison(resume, **hooks, **{k: v for k, v in given.items() if v is not None}, **options)
        return run_compare(task or "boolean_expressions", names or [], prices=price_table, **hooks, **options)


def compile(  # noqa: A001 - the command's name
    framework: str | None = None,
    *,
    config: str | Path | Mapping[str, Any] | None = None,
    task: str | None = None,
    optimizer: str = "bootstrap",
    knobs: Mapping[str, Any] | None = None,
    lm: str | None = None,
    roles: Mapping[str, Any] | None = None,
    temperature: float | None = None,
    preset: str | None = None,
    out: str | Path | None = "program.json",
    progress: bool = True,
    dry_run: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    prices: Prices = None,
    **options: Any,
) -> Any:
    """Compile a framework with a DSPy optimizer and save the program (``courtroom compile``).

    ``config`` is a recipe from ``courtroom study --export-best`` (a path or its dict): its
    framework, task, knobs and models per role are used unless given here (``lm`` replaces all
    of its models, ``roles`` some). ``out=None`` saves nothing. Other options are those of
    :func:`courtroom.optimize.compile.compile_program` (``settings``, ``train``, ``dev``,
    ``prompt_lm``, ``api_base``, ...). The result holds ``program``, ``before``/``after`` dev
    scores, ``metadata`` and ``path``. ``preset`` sets a paper's knobs and sampling temperatures.

    ``dry_run=True`` sends nothing and returns ``(Estimate, note)``. A compile runs as one unit:
    with ``max_calls``/``max_cost`` it starts only if its dry-run bound fits, else
    :class:`~courtroom.cost.budget.BudgetExhausted` is raised before any request.
    """
    from courtroom.optimize.compile import compile_program
    from courtroom.optimize.study_report import read_config, recipe_models
    from courtroom.programs import get_framework
    from courtroom.programs.presets import apply_preset, role_specs, sampling_temperatures
    from courtroom.saving import save_program

    recipe: Mapping[str, Any] = (read_config(config) if isinstance(config, str | Path) else config) or {}
    framework = framework or recipe.get("framework")
    if not framework and not preset:
        raise ConfigError("name a framework: `courtroom compile jot ...`, a --preset, or --config best.json")
    framework, preset_knobs = apply_preset(preset, framework) if preset else (framework, {})
    if not framework:
        raise ConfigError("name a framework: `courtroom compile jot ...`, a --preset, or --config best.json")
    if recipe.get("framework") and recipe["framework"] != framework:
        raise ConfigError(f"--config is for {recipe['framework']}, not {framework}")
    default, role_models = recipe_models(recipe, lm, roles, temperature)
    if temperature is None and not recipe.get("temperatures"):
        # Roles the framework samples run at its (or the preset's) temperature, as in `courtroom run`.
        role_models = role_specs(role_models, default, sampling_temperatures(get_framework(framework), preset))
    all_knobs = preset_knobs | dict(recipe.get("knobs") or {}) | dict(knobs or {})
    task = task or recipe.get("task") or "boolean_expressions"
    if dry_run or max_calls is not None or max_cost is not None:
        price_table = _prices(prices)
        est, note = _compile_estimate(framework, task, optimizer, all_knobs, default, role_models, price_table, options)
        if dry_run:
            return est, note
        from courtroom.cost.budget import check_compile

        check_compile(est, optimizer, max_calls, max_cost)
    with ProgressDisplay(progress, prices=_prices(prices)) as display:
        result = compile_program(
            framework,
            task=task,
            optimizer=optimizer,
            knobs=all_knobs,
            lm=default,
            roles=role_models,
            temperature=temperature,
            display=display,
            **options,
        )
    if out is not None:
        result.metadata = result.metadata | {"preset": preset}
        result.path = save_program(result.program, out, result.metadata)
        result.dev_dirs = _write_dev_runs(result, Path(out), framework)
    return result


def _compile_estimate(
    framework: str,
    task: str,
    optimizer: str,
    knobs: Mapping[str, Any],
    default: Any,
    roles: Mapping[str, Any],
    prices: Any,
    options: Mapping[str, Any],
) -> tuple[Any, str]:
    """The dry run of a compile: dev scored before and after, plus the optimizer's program runs."""
    from courtroom.cost.dry_run import estimate_compile
    from courtroom.optimize.compile import get_optimizer
    from courtroom.runner.runs import RunConfig

    config = RunConfig(
        framework,
        task,
        data=options.get("data", "auto"),
        seed=options.get("seed", 0),
        knobs=dict(knobs),
        lm=None if default is None else str(getattr(default, "model", default)),
        roles={r: str(getattr(m, "model", m)) for r, m in roles.items()},
        max_tokens=options.get("max_tokens"),
        api_base=options.get("api_base"),
        prices=prices,
    )
    settings = {**get_optimizer(optimizer).defaults, **dict(options.get("settings") or {})}
    return estimate_compile(
        config, optimizer, settings, train=options.get("train", 20), dev=options.get("dev", 20), prices=prices
    )


def _write_dev_runs(result: CompileResult, out: Path, framework: str) -> dict[str, Path]:
    """The dev evaluations before and after as run folders next to the program (``show``, ``report``)."""
    import datetime as _dt
    import json
    import shutil

    from courtroom._versions import versions
    from courtroom.eval.harness import summarize
    from courtroom.runner.runs import summary_markdown
    from courtroom.saving import role_models

    task = result.metadata["task"]
    written = {}
    for when, results in result.dev_results.items():
        folder = out.with_name(f"{out.stem}-dev-{when}")
        if (folder / "meta.json").is_file():
            shutil.rmtree(folder)  # the folder of an earlier compile to the same file
        folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "created": _dt.datetime.now().isoformat(timespec="seconds"),
            "config": {"framework": framework, "task": task["name"], "split": "dev", "compiled": when == "after"},
            "framework_config": result.program.config(),
            "models": role_models(result.program),
            "task": {"name": task["name"], "labels": task["labels"], "split": "dev", "source": task.get("source")},
            "seed": task.get("seed"),
            "example_ids": [r.id for r in results],
            "versions": versions(),
        }
        (folder / "meta.json").write_text(json.dumps(meta, indent=2))
        (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
        summary = summarize(results, task["labels"], result.dev_wall.get(when, 0.0))
        (folder / "summary.json").write_text(json.dumps(summary, indent=2))
        title = f"{framework} on {task['name']}, dev {when} compiling"
        (folder / "summary.md").write_text(summary_markdown(summary, title))
        written[when] = folder
    return written


def study(
    framework: str,
    *,
    lm: str | Sequence[str] | None = None,
    report: str | Path | bool | None = None,
    export_best: str | Path | None = None,
    progress: bool = True,
    lms: Any = None,
    model_objects: Mapping[str, Any] | None = None,
    dry_run: bool = False,
    max_calls: int | None = None,
    max_cost: float | None = None,
    prices: Prices = None,
    **options: Any,
) -> Any:
    """Run an Optuna study over a framework's knobs (``courtroom study``).

    Options are the fields of :class:`~courtroom.optimize.study.StudyConfig` (``task``,
    ``trials``, ``dev``, ``storage``, ``space``, ``roles``, ...); ``lm`` is one model or a list
    to choose from per role. Writes the report folder (``report``: default ``studies/NAME``,
    ``False`` for none) and, with ``export_best``, the recipe for :func:`compile`. The outcome
    holds the Optuna ``study``, ``best`` trials, ``report_dir`` and ``table`` (the trials).

    ``dry_run=True`` sends nothing and returns ``(Estimate, note)``: each trial at the space's most
    expensive point. ``max_calls``/``max_cost`` stop starting trials at that budget
    (:class:`~courtroom.cost.budget.BudgetExhausted`, with the command that continues the study).
    """
    from courtroom.optimize.study import StudyConfig, report_dir, run_study, study_config_dict
    from courtroom.optimize.study_report import best_trial, export_config, trials_table, write_report

    models = [lm] if isinstance(lm, str) else list(lm or [])
    config = StudyConfig(framework=framework, models=models, **options)
    price_table = _prices(prices)
    if dry_run:
        from courtroom.cost.budget import study_run_config
        from courtroom.cost.dry_run import estimate_study
        from courtroom.optimize.spaces import build_space

        space = build_space(
            framework, overrides=config.space, models=config.models, temperatures=config.search_temperature
        )
        note = f"{config.trials} trial(s), each at most the most expensive point of the space"
        return estimate_study(study_run_config(config), space, config.trials, prices=price_table), note
    budget = _budget(max_calls, max_cost, price_table)
    with ProgressDisplay(progress, prices=price_table) as display:
        bar = display.track(f"study {config.name}", total=config.trials, unit="trials")

        def on_trial(study: Any, trial: Any) -> None:
            value = trial.values[0] if trial.values else None
            bar.status(
                f"trial {trial.number} {trial.state.name.lower()}" + (f" {value:.3f}" if value is not None else "")
            )
            bar.tokens += int(trial.user_attrs.get("tokens") or 0)  # what the trial sent
            bar.advance()

        outcome = run_study(config, lms=lms, model_objects=model_objects, callbacks=[on_trial], budget=budget)
    if config.trials == 0:
        return outcome
    outcome.table = trials_table(outcome.study)
    try:
        best_trial(outcome.study)
    except ValueError:  # no completed trial
        return outcome
    import contextlib

    from courtroom._lock import FolderLock

    folder = report_dir(config, None if isinstance(report, bool) else report)
    # Workers of one study write its report in turn.
    lock = FolderLock(folder, what="study report", wait=600) if report is not False else contextlib.nullcontext()
    with lock:
        if report is not False:
            written = write_report(outcome.study, folder, study_config_dict(config), outcome.models)
            outcome.report_dir = written["summary"].parent
        if export_best:
            export_config(outcome.study, framework, config.task, export_best, models=outcome.models, lm=outcome.lm)
    return outcome


def report(source: str | Path, out: str | Path = "report.html") -> Path:
    """Write the self-contained HTML report of a run, repeat group or comparison (``courtroom report``)."""
    from courtroom.reporting.html import write_report

    return write_report(source, out)


def runs(folder: str | Path | Sequence[str | Path] = ("runs", "comparisons")) -> pd.DataFrame:
    """Past runs, repeat groups and comparisons under ``folder``, newest first (``courtroom runs``)."""
    from courtroom.runner.history import list_runs

    return list_runs(folder)
