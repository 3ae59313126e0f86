"""``courtroom study --frameworks a,b,c``: one study over designs (and ``--compile``: prompts inside it)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from courtroom.cli import _options as opt
from courtroom.errors import ConfigError


def design_study(**o: Any) -> None:
    """Run the study over designs from the ``courtroom study`` options (``space`` parsed); print, report."""
    from courtroom.eval.metrics import load_prices
    from courtroom.models.lms import parse_role_overrides, resolve_roles
    from courtroom.optimize._design_report import (
        design_pareto,
        design_table,
        export_design_config,
        export_design_program,
        write_design_report,
    )
    from courtroom.optimize.designs import DesignStudyConfig, parse_frameworks, run_design_study
    from courtroom.optimize.study import report_dir, study_config_dict
    from courtroom.optimize.study_report import best_trial
    from courtroom.programs import get_framework

    if o["framework"] and o["frameworks"]:
        raise ConfigError("give a FRAMEWORK or --frameworks, not both")
    frameworks = parse_frameworks(o["frameworks"] or str(o["framework"]))
    roles = sorted({r for fw in frameworks for r in get_framework(fw).roles})
    price_table = load_prices(o["prices"]) if o["prices"] else None
    config = DesignStudyConfig(
        frameworks=frameworks,
        task=o["task"],
        trials=o["trials"],
        dev=o["dev"],
        train=o["train"],
        data=o["data"],
        seed=o["seed"],
        storage=o["storage"],
        study_name=o["study_name"],
        workers=o["workers"],
        objective=o["objective"],
        cost_objective=o["cost_objective"],
        space=o["space"],
        models=list(o["lm"] or []),
        roles=parse_role_overrides(o["role"] or [], roles),
        search_temperature=o["search_temperature"],
        max_tokens=o["max_tokens"],
        api_base=o["api_base"],
        timeout=o.get("timeout"),
        concurrency=o["concurrency"],
        prune=not o["no_prune"],
        compile=o["compile_with"],
        compile_settings=opt.parse_sets(o["compile_set"]),
        cost=o["cost_unit"] or ("dollars" if price_table else "tokens"),
        prices={k: list(v) for k, v in price_table.items()} if price_table else None,
    )
    if o.get("dry_run"):
        from courtroom.cli._cost import print_estimates
        from courtroom.cost.dry_run import scaled
        from courtroom.optimize.designs import compile_bounded, design_estimates

        per_trial = design_estimates(config)
        compiling = ""
        if config.compile:
            compiling = (
                f"; compiling each trial ({config.compile}, at most its program runs on the train split) included"
                if compile_bounded(config)
                else f"; compiling each trial is not counted ({config.compile} decides its own number of calls)"
            )
        note = (
            f"per design: one trial at its most expensive point; {config.trials} trial(s) cost at most "
            f"{config.trials} x the dearest design" + compiling
        )
        print_estimates({f"{fw} (1 trial)": e for fw, e in per_trial.items()}, [note])
        dearest = max(per_trial.values(), key=lambda e: (e.calls, e.cost or 0.0))
        print_estimates({f"{config.trials} trial(s), at most": scaled(dearest, config.trials, exact=False)})
        return
    budget = None
    if o.get("max_calls") is not None or o.get("max_cost") is not None:
        from courtroom.cost.budget import Budget

        budget = Budget(max_calls=o.get("max_calls"), max_cost=o.get("max_cost"), prices=price_table)
    outcome = run_design_study(config, budget=budget)
    console = Console()
    study = outcome.study
    console.print(f"study {study.study_name}: {len(study.trials)} trial(s) in storage")
    if config.trials == 0:
        return
    console.print("per design (calls: made by the programs; cached: served from the shared cache):")
    console.print(design_table(study).to_string(index=False), markup=False)
    if config.cost_objective:
        console.print(f"Pareto front across designs (score up, {config.cost} per example down):")
        console.print(design_pareto(study).to_string(index=False), markup=False)
    try:
        best = best_trial(study)
    except ValueError:
        console.print("no trial completed: see the trials table for failures")
        return
    console.print(
        f"best trial {best.number}: {best.user_attrs.get('design')} values {list(best.values)} "
        f"params {best.user_attrs.get('config')}"
    )
    written = write_design_report(study, report_dir(config, o["report"]), study_config_dict(config))
    console.print(f"report: {written['summary'].parent}")
    export = o["export_best"]
    if not export:
        return
    if not config.compile:
        export_design_config(study, config.task, export)
        console.print(f"best config: {export} (use: courtroom compile --config {export})")
        return
    from courtroom.data.tasks import load_sized

    tr = load_sized(config.task, "train", config.train, data=config.data, seed=config.seed)
    base = resolve_roles(
        config.models[0] if config.models else None,
        config.roles,
        valid_roles=roles,
        max_tokens=config.max_tokens,
        api_base=config.api_base,
    )
    path = export_design_program(
        study,
        config,
        export,
        base=base,
        train=tr.examples,
        labels=list(tr.task.labels),
        positions=list(tr.task.positions) if tr.task.positions else None,
    )
    console.print(f"best program: {path} (use: courtroom.load({str(path)!r}) or courtroom predict {path})")
