"""``courtroom compare --task T --frameworks a,b,c``: a paper-style table, Markdown/CSV and plots."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli import _options as opt
from courtroom.cli._app import app


@app.command("compare")
def compare_command(
    frameworks: Annotated[str, typer.Option("--frameworks", help="Comma-separated frameworks and baselines.")],
    task: Annotated[str, typer.Option("--task", help="Task name (see `courtroom tasks`).")] = "boolean_expressions",
    limit: Annotated[int | None, typer.Option("--limit", help="Use the first N examples of the split.")] = None,
    repeats: Annotated[int, typer.Option("--repeats", help="Runs per framework (box plots, mean, sd, CI).")] = 1,
    data: Annotated[str, typer.Option("--data", help="auto | generate | hub | PATH.")] = "auto",
    split: Annotated[str, typer.Option("--split", help="train | dev | test")] = "test",
    seed: Annotated[int, typer.Option("--seed", help="Seed for data generation and splits.")] = 0,
    sets: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="Knob KEY=VALUE for every framework that has it, or FRAMEWORK.KEY=VALUE; repeatable.",
        ),
    ] = None,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    concurrency: Annotated[int, typer.Option("--concurrency", help="Bound on LM requests in flight.")] = 4,
    out: Annotated[str, typer.Option("--out", help="Folder that receives the comparison folder.")] = "comparisons",
    ambiguity_k: Annotated[
        int,
        typer.Option("--ambiguity-k", help="Run the preliminary hearing K times for the ambiguity split (0: off)."),
    ] = 0,
    theta: Annotated[float, typer.Option("--theta", help="Ambiguous if D_rate <= theta.")] = 0.5,
    dataset: opt.DATASET = None,
    text_field: opt.TEXT_FIELD = None,
    label_field: opt.LABEL_FIELD = None,
    labels: opt.LABELS = None,
    dataset_config: opt.DATASET_CONFIG = None,
    hub_split: opt.HUB_SPLIT = "train",
    prices: opt.PRICES = None,
    train_limit: opt.TRAIN_LIMIT = None,
    dry_run: opt.DRY_RUN = False,
    max_cost: opt.MAX_COST = None,
    max_calls: opt.MAX_CALLS = None,
    matched_baselines: Annotated[
        bool,
        typer.Option(
            "--matched-baselines/--no-matched-baselines",
            help="Add a majority-vote row per framework at the same calls (or tokens) per example.",
        ),
    ] = True,
    baseline: Annotated[
        str, typer.Option("--baseline", help="Majority-vote baseline: self-consistency | parallel-vote.")
    ] = "self-consistency",
    match: Annotated[str, typer.Option("--match", help="What the matched baseline matches: calls | tokens.")] = "calls",
) -> None:
    """Compare frameworks on one task: print the table; write table.md, table.csv and plots."""
    from courtroom.eval.analysis import markdown_table
    from courtroom.eval.compare import compare
    from courtroom.eval.metrics import load_prices

    names = [f.strip() for f in frameworks.split(",") if f.strip()]
    roles = dict(r.split("=", 1) for r in role or [] if "=" in r)
    bad = [r for r in role or [] if "=" not in r]
    if bad:
        from courtroom.errors import ConfigError

        raise ConfigError(f"malformed --role {bad[0]!r}: write ROLE=MODEL, e.g. judge=openai/gpt-4o")
    spec = opt.dataset_spec(dataset, text_field, label_field, labels, dataset_config, hub_split)
    if dry_run:
        from courtroom.cli._cost import print_estimates
        from courtroom.eval.compare import comparison_configs
        from courtroom.eval.dry_run import estimate_comparison

        configs = comparison_configs(
            task,
            names,
            limit=limit,
            roles=roles,
            data=data,
            split=split,
            seed=seed,
            knobs=opt.parse_sets(sets),
            lm=lm,
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            dataset=spec,
            prices=load_prices(prices) if prices else None,
            train_limit=train_limit,
        )
        estimates = estimate_comparison(
            configs, repeats=repeats, matched_baselines=matched_baselines, baseline=baseline, match=match
        )
        return print_estimates(estimates)
    from courtroom.cli._cost import make_budget, opt_budget

    price_table = load_prices(prices) if prices else None
    budget = make_budget(max_calls, max_cost, price_table, repeats)
    with opt.progress_bar(Console(stderr=True)) as bar:
        handles: dict[str, Any] = {}

        def progress(framework: str, res: Any) -> None:
            if framework not in handles:
                handles[framework] = bar.add_task(framework, total=None, status="")
            bar.update(handles[framework], advance=1, status="failed" if res.prediction is None else "")

        result = opt_budget(
            budget,
            compare,
            task,
            names,
            limit=limit,
            repeats=repeats,
            lm=lm,
            roles=roles,
            data=data,
            split=split,
            seed=seed,
            knobs=opt.parse_sets(sets),
            concurrency=concurrency,
            out=out,
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            dataset=spec,
            prices=price_table,
            ambiguity_k=ambiguity_k,
            theta=theta,
            progress=progress,
            train_limit=train_limit,
            matched_baselines=matched_baselines,
            baseline=baseline,
            match=match,
        )
    console = Console()
    console.print(markdown_table(result.table), markup=False, soft_wrap=True)
    from courtroom.eval.analysis import analyses_lines

    for name, found in result.analyses.items():
        for line in analyses_lines(name, found):
            console.print(line, markup=False, soft_wrap=True)
    for name, path in result.plots.items():
        console.print(f"plot {name}: {Path(path)}", markup=False, soft_wrap=True)
    console.print(f"comparison folder: {result.out_dir}", markup=False, soft_wrap=True)
