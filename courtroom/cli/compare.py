"""``courtroom compare --task T --frameworks a,b,c``: a paper-style table, Markdown/CSV and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli import _options as opt
from courtroom.cli._app import app

FW = opt.FRAMEWORK_PANEL


def suite_lines(table: Any) -> str:
    """The paper-vs-measured table of a suite as Markdown."""
    from courtroom.analysis.papers import markdown_table

    shown = table.assign(
        ci95=[f"[{lo:.3f}, {hi:.3f}]" for lo, hi in zip(table["ci_low"], table["ci_high"], strict=True)]
    ).set_index("task")[["row", "paper", "measured", "ci95", "n"]]
    return markdown_table(shown)


def _suite_frameworks(suite: str | None) -> list[str]:
    """The frameworks a suite's rows run (their knobs are what ``--set`` may name)."""
    from courtroom.comparison.suites import get_suite

    return list(dict.fromkeys(r.framework for r in get_suite(suite).rows)) if suite else []


def _knob_defaults(names: list[str]) -> dict[str, Any]:
    """``KEY`` and ``FRAMEWORK.KEY`` -> the knob's default, so ``--set`` values are parsed strictly."""
    from courtroom.programs import FRAMEWORKS

    out: dict[str, Any] = {}
    for name in names:
        for key, default in (FRAMEWORKS[name].knobs() if name in FRAMEWORKS else {}).items():
            out.setdefault(key, default)
            out[f"{name}.{key}"] = default
    return out


def _planned(
    suite: str | None, suite_tasks: str | None, task: str, names: list[str]
) -> dict[str, tuple[list[str], dict[str, Any] | None]]:
    """Task -> (the rows compared on it, their specs for a suite), as the command would run them."""
    if not suite:
        return {task: (names, None)}
    from courtroom.comparison.suites import get_suite

    about = get_suite(suite)
    rows = {r.name: (r.framework, dict(r.knobs), r.preset) for r in about.rows}
    chosen = [t.strip() for t in suite_tasks.split(",")] if suite_tasks else list(about.tasks)
    return {t: (list(rows), rows) for t in chosen}


@app.command("compare")
def compare_command(
    ctx: typer.Context,
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
    frameworks: Annotated[
        str | None,
        typer.Option("--frameworks", help="Comma-separated frameworks and baselines.", rich_help_panel=FW),
    ] = None,
    suite: Annotated[
        str | None,
        typer.Option(
            "--suite", help="Run a paper's comparison table (see `courtroom frameworks`) instead.", rich_help_panel=FW
        ),
    ] = None,
    suite_tasks: Annotated[
        str | None,
        typer.Option(
            "--suite-tasks", help="With --suite: only these of its tasks, comma-separated.", rich_help_panel=FW
        ),
    ] = None,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Knob KEY=VALUE for every framework that has it, or FRAMEWORK.KEY=VALUE; repeatable.",
            rich_help_panel=FW,
        ),
    ] = None,
    presets: Annotated[
        list[str] | None,
        typer.Option(
            "--preset", help="A paper preset for the compared framework it names; repeatable.", rich_help_panel=FW
        ),
    ] = None,
    out: Annotated[
        str,
        typer.Option("--out", help="Folder that receives the comparison folder.", rich_help_panel=opt.OUTPUT_PANEL),
    ] = "comparisons",
    ambiguity_k: Annotated[
        int,
        typer.Option(
            "--ambiguity-k",
            min=0,
            help="Run the preliminary hearing K times for the ambiguity split (0: off).",
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
        int,
        typer.Option(
            "--concurrency", min=1, help="Bound on LM requests in flight.", rich_help_panel=opt.EXECUTION_PANEL
        ),
    ] = 4,
    repeats: Annotated[
        int,
        typer.Option(
            "--repeats",
            min=1,
            help="Runs per framework (box plots, mean, sd, CI).",
            rich_help_panel=opt.EXECUTION_PANEL,
        ),
    ] = 1,
    resume_dir: Annotated[
        Path | None,
        typer.Option(
            "--resume",
            metavar="COMPARISON_DIR",
            help="Finish an interrupted comparison in its folder; nothing is sent twice.",
            rich_help_panel=opt.EXECUTION_PANEL,
        ),
    ] = None,
    fail_on_error: opt.FAIL_ON_ERROR = None,
    dry_run: opt.DRY_RUN = False,
    max_calls: opt.MAX_CALLS = None,
    max_cost: opt.MAX_COST = None,
    prices: opt.PRICES = None,
    matched_baselines: Annotated[
        bool,
        typer.Option(
            "--matched-baselines/--no-matched-baselines",
            help="Add a majority-vote row per framework at the same calls (or tokens) per example.",
            rich_help_panel=opt.BUDGET_PANEL,
        ),
    ] = True,
    baseline: Annotated[
        str,
        typer.Option(
            "--baseline",
            help="Majority-vote baseline: self-consistency | parallel-vote.",
            rich_help_panel=opt.BUDGET_PANEL,
        ),
    ] = "self-consistency",
    match: Annotated[
        str,
        typer.Option(
            "--match", help="What the matched baseline matches: calls | tokens.", rich_help_panel=opt.BUDGET_PANEL
        ),
    ] = "calls",
    debias: opt.DEBIAS = None,
) -> None:
    """Compare frameworks on one task, or a paper's table with --suite; write tables and plots."""
    from courtroom.api import compare
    from courtroom.errors import ConfigError
    from courtroom.eval.status import check_threshold

    threshold = check_threshold(fail_on_error)
    console = Console()
    if resume_dir is not None:
        result = compare(
            resume=resume_dir,
            prices=prices,
            api_base=api_base,
            timeout=timeout,
            concurrency=concurrency,
            fail_on_error=threshold,
            max_calls=max_calls,
            max_cost=max_cost,
            dry_run=dry_run,
            **_given(ctx),
        )
        return _print_results({result.out_dir.name: result}, console)
    if (frameworks is None) == (suite is None):
        raise ConfigError("pass --frameworks a,b,c or --suite NAME (see `courtroom frameworks`)")
    names = [f.strip() for f in (frameworks or "").split(",") if f.strip()]
    roles = dict(r.split("=", 1) for r in role or [] if "=" in r)
    bad = [r for r in role or [] if "=" not in r]
    if bad:
        raise ConfigError(f"malformed --role {bad[0]!r}: write ROLE=MODEL, e.g. judge=openai/gpt-4o")
    opt.check_providers(lm, role)
    opt.writable_folder(out, "--out")
    spec = opt.dataset_spec(dataset, text_field, label_field, labels, dataset_config, hub_split)
    common: dict[str, Any] = dict(
        limit=limit,
        repeats=repeats,
        lm=lm,
        roles=roles,
        data=data,
        split=split,
        seed=seed,
        knobs=opt.parse_sets(sets, _knob_defaults(names or _suite_frameworks(suite))),
        concurrency=concurrency,
        out=out,
        temperature=temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        timeout=timeout,
        dataset=spec,
        prices=prices,
        ambiguity_k=ambiguity_k,
        theta=theta,
        train_limit=train_limit,
        fail_on_error=threshold,
        matched_baselines=matched_baselines,
        baseline=baseline,
        match=match,
        max_calls=max_calls,
        max_cost=max_cost,
        debias=debias,
    )
    if dry_run:
        from courtroom.cli._cost import print_estimates

        for t, (names_, rows) in _planned(suite, suite_tasks, task, names).items():
            print_estimates(compare(names_, task=t, rows=rows, presets=presets or (), dry_run=True, **common))
        return
    if suite:
        from courtroom.comparison.suites import get_suite, run_suite

        chosen = [t.strip() for t in suite_tasks.split(",")] if suite_tasks else None
        table, results = run_suite(
            suite, tasks=chosen, compare_fn=lambda t, names, **kw: compare(names, task=t, **kw), **common
        )
    else:
        results = {task: compare(names, task=task, presets=presets or (), **common)}
    suite_text = None
    if suite:
        about = get_suite(suite)
        note = f"; {about.note}" if about.note else ""
        suite_text = f"{about.paper}, {about.table}: the paper's accuracy beside yours (95% CI){note}"
        suite_text += "\n" + suite_lines(table)
    _print_results(results, console, suite_text)


def _given(ctx: typer.Context) -> dict[str, Any]:
    """With --resume: the options given (flags or --config), as :func:`courtroom.api.compare` names them.

    The resume refuses those that differ from the comparison's (safe ones are passed apart).
    """
    from courtroom.errors import ConfigError

    def given(name: str) -> bool:  # typer vendors click: compare the source by name
        return getattr(ctx.get_parameter_source(name), "name", None) in ("COMMANDLINE", "DEFAULT_MAP")

    if given("suite") or given("suite_tasks"):
        raise ConfigError("--resume finishes one comparison folder: drop --suite (resume each task's folder)")
    p = ctx.params
    same = ("task", "frameworks", "limit", "train_limit", "data", "split", "seed", "repeats", "lm", "temperature",
            "max_tokens", "ambiguity_k", "theta", "matched_baselines", "baseline", "match", "presets")  # fmt: skip
    out = {name: p[name] for name in same if given(name)}
    if given("sets"):
        out["knobs"] = opt.parse_sets(p["sets"])
    if given("role"):
        out["roles"] = dict(r.split("=", 1) for r in p["role"] or [] if "=" in r)
    fields = ("dataset", "text_field", "label_field", "labels", "dataset_config", "hub_split")
    if any(given(f) for f in fields):
        out["dataset"] = opt.dataset_spec(*(p[f] for f in fields))
    return out


def _print_results(results: dict[str, Any], console: Console, suite_text: str | None = None) -> None:
    """Print each comparison (table, analyses, plots, folder) and a suite's table; fail on failed rows."""
    from courtroom.analysis.papers import analyses_lines, markdown_table
    from courtroom.eval.status import TooManyFailures
    from courtroom.reporting.formatting import readable_table

    for result in results.values():
        console.print(markdown_table(readable_table(result.table)), markup=False, soft_wrap=True)
        for name, found in result.analyses.items():
            for line in analyses_lines(name, found):
                console.print(line, markup=False, soft_wrap=True)
        for name, path in result.plots.items():
            console.print(f"plot {name}: {Path(path)}", markup=False, soft_wrap=True)
        console.print(f"comparison folder: {result.out_dir}", markup=False, soft_wrap=True)
    if suite_text:
        console.print(suite_text, markup=False, soft_wrap=True)
    failed = {
        f"{t}: {name}" if len(results) > 1 else name: reason
        for t, r in results.items()
        for name, reason in r.failed.items()
    }
    if failed:
        name, reason = next(iter(failed.items()))
        more = f" (and {len(failed) - 1} more framework(s))" if len(failed) > 1 else ""
        raise TooManyFailures(f"{name}: {reason}{more}")
