"""``courtroom compare``: several frameworks on one task, as a paper-style table with plots.

A comparison folder holds one run folder (or repeat group) per framework, ``comparison.json``,
``table.csv`` / ``table.md`` (rows: frameworks; columns: accuracy, macro-F1, failures, calls,
tokens, cost, time), ``analyses.json`` and ``plots/*.png``.

This module runs the rows (:func:`compare`, :func:`run_comparison`); what they are and
``plan.json`` come from :mod:`courtroom.comparison.plan`, the table and the files beside it
from :mod:`courtroom.comparison.table`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import logging
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom import _stop
from courtroom._lock import FolderLock
from courtroom.analysis.ambiguity import split_comparison
from courtroom.comparison.plan import comparison_configs, split_knobs, write_plan
from courtroom.comparison.plots import comparison_runs, draw_plots, load_comparison
from courtroom.comparison.table import Comparison, first_results, table_row, write_tables
from courtroom.errors import CourtroomError
from courtroom.eval.harness import ExampleResult
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR
from courtroom.models.lms import RoleLMs
from courtroom.programs import get_framework
from courtroom.runner.config import RunConfig
from courtroom.runner.repeats import RepeatOutcome, is_repeat_group, resume_repeats, run_repeats
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunOutcome, run

logger = logging.getLogger(__name__)


def compare(
    task: str,
    frameworks: Sequence[str],
    *,
    limit: int | None = None,
    repeats: int = 1,
    lm: str | None = None,
    roles: Mapping[str, str] | None = None,
    data: str = "auto",
    split: str = "test",
    seed: int = 0,
    knobs: Mapping[str, Any] | None = None,
    concurrency: int = 4,
    out: str | Path = "comparisons",
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    dataset: Mapping[str, Any] | None = None,
    prices: Mapping[str, Sequence[float]] | None = None,
    ambiguity_k: int = 0,
    theta: float = 0.5,
    lms: RoleLMs | None = None,
    progress: Callable[[str, ExampleResult], None] | None = None,
    train_limit: int | None = None,
    presets: Sequence[str] = (),
    rows: Mapping[str, tuple[Any, ...]] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR,
    budget: Any = None,
    matched_baselines: bool = True,
    baseline: str = "self-consistency",
    match: str = "calls",
    debias: str | None = None,
    splits: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
    kind: str = "compare",
    baseline_knobs: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> Comparison:
    """Run every framework on the same examples and write the comparison folder.

    ``presets``, ``rows``: see :func:`comparison_configs`. ``progress(framework, result)`` is
    called per example, ``on_start(framework, n)`` when a framework's run (each repeat's) starts
    on ``n`` examples.

    A ``budget`` (:class:`courtroom.cost.budget.Budget`) is shared by the frameworks, run in
    order; at its limit the current run stops resumable and later frameworks do not start.

    With ``matched_baselines``, a majority-vote ``baseline`` row is added per framework, its
    samples set to match the framework's mean calls (or tokens) per example
    (:mod:`courtroom.comparison.matched`). ``debias``: see :func:`comparison_configs`. ``kind``
    names the folder (``{created}_{kind}_{task}_{id}``; ``courtroom score`` writes ``score``);
    ``baseline_knobs`` are given to every matched vote row (``k_shots=0`` where the data has no train split);
    ``plots=False`` draws none (a score's two rows: the table says it).
    """
    frameworks = list(dict.fromkeys(f.strip() for f in frameworks if f.strip()))
    if matched_baselines:
        from courtroom.comparison import matched

        matched.check(baseline, match)  # before any row runs, not after them all
    configs = comparison_configs(
        task,
        frameworks,
        limit=limit,
        roles=roles,
        data=data,
        split=split,
        seed=seed,
        knobs=knobs,
        lm=lm,
        temperature=temperature,
        max_tokens=max_tokens,
        api_base=api_base,
        timeout=timeout,
        concurrency=concurrency,
        dataset=dataset,
        prices=prices,
        train_limit=train_limit,
        presets=presets,
        rows=rows,
        fail_on_error=fail_on_error,
        debias=debias,
        splits=splits,
        spec=spec,
    )
    name = task if not dataset else "custom"
    created = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    out_dir = Path(out) / f"{created}_{kind}_{name.replace('/', '-')}_{uuid.uuid4().hex[:6]}"
    out_dir.mkdir(parents=True)
    for config in configs.values():
        config.out = str(out_dir)
    write_plan(
        out_dir,
        task,
        frameworks,
        {
            "limit": limit,
            "repeats": repeats,
            "lm": lm,
            "roles": dict(roles or {}),
            "data": data,
            "split": split,
            "seed": seed,
            "knobs": dict(knobs or {}),
            "concurrency": concurrency,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "api_base": api_base,
            "timeout": timeout,
            "dataset": dict(dataset) if dataset else None,
            "prices": {k: list(v) for k, v in prices.items()} if prices else None,
            "ambiguity_k": ambiguity_k,
            "theta": theta,
            "train_limit": train_limit,
            "presets": list(presets),
            "rows": {k: list(v) for k, v in rows.items()} if rows else None,
            "fail_on_error": fail_on_error,
            "matched_baselines": matched_baselines,
            "baseline": baseline,
            "match": match,
            "splits": dict(splits) if splits else None,
            "baseline_knobs": dict(baseline_knobs or {}),
            "plots": plots,
        },
        spec,
    )
    try:
        return run_comparison(
            out_dir,
            task,
            configs,
            repeats=repeats,
            roles=roles,
            lms=lms,
            progress=progress,
            on_start=on_start,
            budget=budget,
            matched_baselines=matched_baselines,
            baseline=baseline,
            match=match,
            ambiguity_k=ambiguity_k,
            theta=theta,
            concurrency=concurrency,
            baseline_knobs=baseline_knobs,
            plots=plots,
        )
    except CourtroomError as exc:
        if exc.exit_code == 2:
            _drop_unstarted(out_dir)
        raise


def _drop_unstarted(out_dir: Path) -> None:
    """Remove a comparison folder refused before any row started (it holds only its plan): nothing to resume."""
    with contextlib.suppress(OSError):
        if {p.name for p in out_dir.iterdir()} <= {"plan.json", ".lock"}:
            shutil.rmtree(out_dir)


def run_comparison(
    out_dir: Path,
    task: str,
    configs: dict[str, RunConfig],
    *,
    repeats: int = 1,
    roles: Mapping[str, str] | None = None,
    lms: RoleLMs | None = None,
    progress: Callable[[str, ExampleResult], None] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    budget: Any = None,
    matched_baselines: bool = True,
    baseline: str = "self-consistency",
    match: str = "calls",
    ambiguity_k: int = 0,
    theta: float = 0.5,
    concurrency: int = 4,
    resuming: Mapping[str, Any] | None = None,
    baseline_knobs: Mapping[str, Any] | None = None,
    plots: bool = True,
) -> Comparison:
    """Run each row of ``configs`` into ``out_dir`` (row folders named after the rows), then write the tables.

    With ``resuming`` (the settings a resume may change), a row whose folder holds a run is
    resumed in it and a row not started is run: nothing finished is sent again.
    """
    resume_line = _stop.with_flags(f"courtroom compare --resume {out_dir}")
    with FolderLock(out_dir, what="comparison folder"), _stop.saving_to(out_dir, resume=resume_line):
        return _run_rows(
            out_dir,
            task,
            configs,
            repeats,
            roles,
            lms,
            progress,
            on_start,
            budget,
            (matched_baselines, baseline, match, dict(baseline_knobs or {})),
            ambiguity_k,
            theta,
            concurrency,
            resuming,
            plots,
        )


def _run_rows(
    out_dir: Path,
    task: str,
    configs: dict[str, RunConfig],
    repeats: int,
    roles: Mapping[str, str] | None,
    lms: RoleLMs | None,
    progress: Callable[[str, ExampleResult], None] | None,
    on_start: Callable[[str, int], None] | None,
    budget: Any,
    matching: tuple[bool, str, str, dict[str, Any]],
    ambiguity_k: int,
    theta: float,
    concurrency: int,
    resuming: Mapping[str, Any] | None,
    plots: bool = True,
) -> Comparison:
    frameworks = list(configs)
    outcomes: dict[str, RunOutcome | RepeatOutcome] = {}

    def run_one(f: str, config: RunConfig, later: Sequence[str]) -> None:
        def hook(res: ExampleResult) -> None:
            if progress:
                progress(f, res)

        def start(n: int) -> None:
            if on_start:
                on_start(f, n)

        start(0)  # the row is under way: its training calls (demos, precedents) are its own
        spend = {"budget": budget} if budget is not None else {}
        folder = out_dir / _folder(f)
        with contextlib.ExitStack() as stack:
            if budget is not None:
                from courtroom.cost.budget import stopped_comparison

                stack.enter_context(stopped_comparison(out_dir, f, later))
            if repeats > 1:
                each: dict[str, Any] = {"progress": lambda r, res: hook(res), "on_start": lambda r, n: start(n)}
                if resuming is not None and is_repeat_group(folder):
                    outcomes[f] = resume_repeats(folder, lms=lms, **each, **resuming, **spend)
                else:
                    _clear(folder, resuming)
                    outcomes[f] = run_repeats(config, repeats, lms=lms, group_dir=folder, **each, **spend)
            elif resuming is not None and (folder / "meta.json").is_file():
                outcomes[f] = resume(folder, lms=lms, progress=hook, on_start=start, **resuming, **spend)
            else:
                _clear(folder, resuming)
                outcomes[f] = run(config, lms=lms, run_dir=folder, progress=hook, on_start=start, **spend)

    for i, (f, config) in enumerate(configs.items()):
        run_one(f, config, list(configs)[i + 1 :])
    matched_baselines, baseline, match, vote_knobs = matching
    matches: dict[str, list[str]] = {}
    if matched_baselines:
        from courtroom.comparison import matched

        table_rows = {f: table_row(outcomes[f]) for f in frameworks}
        first = configs[frameworks[0]]
        fixed, per_sample = matched.sample_tokens(first, baseline) if match == "tokens" else (0.0, None)
        knob = matched.BASELINES[baseline]
        plan = matched.plan(table_rows, baseline=baseline, match=match, sample_tokens=per_sample, fixed_tokens=fixed)
        for k, fws in sorted(plan.items()):
            if baseline in configs and configs[baseline].knobs.get(knob, get_framework(baseline).knobs()[knob]) == k:
                matches[baseline] = fws  # a compared row already is that vote
                continue
            row_name = matched.row_name(baseline, k)
            configs[row_name] = dataclasses.replace(
                first,
                framework=baseline,
                knobs={knob: k} | vote_knobs,
                program=None,
                preset=None,
                debias=None,
                roles={r: m for r, m in (roles or {}).items() if r in get_framework(baseline).roles},
            )
            matches[row_name] = fws
        added = [m for m in matches if m not in outcomes]
        for row_name in added:
            run_one(row_name, configs[row_name], [m for m in added if m not in outcomes and m != row_name])
    frameworks = [*frameworks, *(m for m in matches if m not in frameworks)]
    comparison = write_tables(out_dir, task, frameworks, outcomes, configs, matches)
    if ambiguity_k:
        rows = {f: first_results(o)[1] for f, o in outcomes.items()}
        split_comparison(out_dir, comparison.analyses, rows, configs, lms, ambiguity_k, theta, concurrency)
    comparison.plots = draw_plots(out_dir) if plots else {}
    for f, o in outcomes.items():
        failed = [x for x in (o.outcomes if isinstance(o, RepeatOutcome) else [o]) if x.summary["status"] == "failed"]
        if failed:
            comparison.failed[f] = failed[0].summary["status_reason"]
    return comparison


def _clear(folder: Path, resuming: Mapping[str, Any] | None) -> None:
    """On resume, drop a row folder that was created but holds no run yet (stopped before its first write)."""
    if resuming is not None and folder.is_dir():
        shutil.rmtree(folder)


def _folder(name: str) -> str:
    """A run folder name for a table row (``self-consistency k=9`` -> ``self-consistency_k9``)."""
    return name.replace(" k=", "_k").replace(" ", "_")


__all__ = [
    "Comparison",
    "compare",
    "comparison_configs",
    "comparison_runs",
    "draw_plots",
    "load_comparison",
    "split_knobs",
]
