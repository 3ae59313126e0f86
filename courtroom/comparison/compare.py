"""``courtroom compare``: several frameworks on one task, as a paper-style table with plots.

A comparison folder holds one run folder (or repeat group) per framework, ``comparison.json``,
``table.csv`` / ``table.md`` (rows: frameworks; columns: accuracy, macro-F1, failures, calls,
tokens, cost, time), ``analyses.json`` and ``plots/*.png``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import json
import logging
import shutil
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom import _stop
from courtroom._files import read_json, write_atomic, write_json
from courtroom._lock import FolderLock
from courtroom.analysis import papers as analysis
from courtroom.analysis.ambiguity import split_comparison
from courtroom.analysis.bias import check_debias, swappable_frameworks
from courtroom.analysis.calibration import scores
from courtroom.analysis.flips import flip_matrix
from courtroom.comparison.plots import comparison_runs, draw_plots, load_comparison
from courtroom.errors import ConfigError
from courtroom.eval.harness import ExampleResult
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR
from courtroom.models.cache import without_base_url
from courtroom.models.lms import RoleLMs
from courtroom.programs import get_framework
from courtroom.reporting.formatting import readable_table
from courtroom.runner.repeats import RepeatOutcome, is_repeat_group, resume_repeats, run_repeats
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, RunOutcome, run

logger = logging.getLogger(__name__)
COLUMNS = (
    "accuracy",
    "macro_f1",
    "n",
    "failures",
    "calls",
    "sent",
    "cached",
    "tokens",
    "cached_tokens",
    "cost",
    "wall_seconds",
    "brier",
    "ece",
)


@dataclass
class Comparison:
    """A finished comparison."""

    out_dir: Path
    table: pd.DataFrame
    runs: dict[str, str]
    """Framework -> its run folder or repeat group (relative to ``out_dir``)."""
    analyses: dict[str, dict[str, Any]] = field(default_factory=dict)
    plots: dict[str, Path] = field(default_factory=dict)
    failed: dict[str, str] = field(default_factory=dict)
    """Framework -> why its run failed (more failed examples than ``fail_on_error`` allows)."""


def split_knobs(
    sets: Mapping[str, Any] | None, frameworks: Sequence[str], of: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{"jot.n_loops": 2, "seed": 1}`` -> knobs per framework (or per row, ``of`` naming its framework).

    An unprefixed knob goes to every
    framework that has it, and must belong to at least one.
    """
    of = dict(of or {})
    out: dict[str, dict[str, Any]] = {f: {} for f in frameworks}
    for key, value in (sets or {}).items():
        fw, dot, knob = key.rpartition(".")
        if dot:
            if fw not in out:
                raise ConfigError(f"--set {key}: {fw!r} is not one of the compared frameworks {', '.join(frameworks)}")
            out[fw][knob] = value
            continue
        takers = [f for f in frameworks if key in get_framework(of.get(f, f)).knobs()]
        if not takers:
            raise ConfigError(f"--set {key}: no compared framework has that knob; write FRAMEWORK.{key}=VALUE")
        for f in takers:
            out[f][key] = value
    return out


def _row(outcome: RunOutcome | RepeatOutcome) -> dict[str, Any]:
    if isinstance(outcome, RunOutcome):
        return {c: outcome.summary.get(c) for c in COLUMNS}
    row = {c: outcome.stats[c]["mean"] if c in outcome.stats else None for c in COLUMNS}
    for c in ("cached", "cached_tokens"):
        row[c] = sum(o.summary.get(c, 0) for o in outcome.outcomes) / len(outcome.outcomes)
    row["n"] = outcome.outcomes[0].summary.get("n")
    for c in ("brier", "ece"):
        values = [o.summary[c] for o in outcome.outcomes if o.summary.get(c) is not None]
        row[c] = sum(values) / len(values) if values else None
    acc = outcome.stats["accuracy"]
    row.update(
        accuracy_sd=acc["sd"],
        accuracy_ci_low=acc["ci_low"],
        accuracy_ci_high=acc["ci_high"],
        macro_f1_sd=outcome.stats["macro_f1"]["sd"],
        repeats=len(outcome.outcomes),
    )
    return row


def _results(outcome: RunOutcome | RepeatOutcome) -> tuple[Path, list[ExampleResult]]:
    first = outcome if isinstance(outcome, RunOutcome) else outcome.outcomes[0]
    return first.run_dir, first.results


def comparison_configs(
    task: str,
    frameworks: Sequence[str],
    *,
    limit: int | None = None,
    roles: Mapping[str, str] | None = None,
    data: str = "auto",
    split: str = "test",
    seed: int = 0,
    knobs: Mapping[str, Any] | None = None,
    lm: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    out: str | Path = "comparisons",
    dataset: Mapping[str, Any] | None = None,
    prices: Mapping[str, Sequence[float]] | None = None,
    train_limit: int | None = None,
    presets: Sequence[str] = (),
    rows: Mapping[str, tuple[str, Mapping[str, Any], str | None]] | None = None,
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR,
    debias: str | None = None,
    splits: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, RunConfig]:
    """The run config of each compared row (same examples, models and settings).

    ``presets`` apply to the compared frameworks they name. ``rows`` (row name -> (framework,
    knobs, preset)) compares named configurations, several of one framework if need be (suites);
    ``frameworks`` then lists row names. ``debias`` applies to the rows whose framework has sides
    to swap (:mod:`courtroom.analysis.bias`); the others run once per case, as usual.
    """
    from courtroom.programs.presets import apply_preset, get_preset

    frameworks = list(dict.fromkeys(f.strip() for f in frameworks if f.strip()))
    if not frameworks:
        raise ConfigError("--frameworks is empty: e.g. --frameworks jot,zero-shot,cot")
    planned = {f: (rows[f] if rows and f in rows else (f, {}, None)) for f in frameworks}
    for name in presets:
        matched = [f for f in frameworks if planned[f][0] == get_preset(name).framework]
        if not matched:
            raise ConfigError(f"--preset {name} is for {get_preset(name).framework}, which is not compared")
        for f in matched:
            planned[f] = (planned[f][0], planned[f][1], name)
    base = {f: apply_preset(p, fw, k) for f, (fw, k, p) in planned.items()}
    classes = {f: get_framework(fw) for f, (fw, _) in base.items()}
    per_fw = split_knobs(knobs, frameworks, {f: fw for f, (fw, _) in base.items()})
    check_debias(debias)
    swapped = {f for f, c in classes.items() if c.swappable} if debias is not None else set()
    if debias is not None and not swapped:
        raise ConfigError(
            f"--debias {debias}: none of {', '.join(frameworks)} has sides to swap; "
            f"position swap works with {', '.join(swappable_frameworks())}"
        )
    unknown_roles = sorted(set(roles or {}) - {r for c in classes.values() for r in c.roles})
    if unknown_roles:
        raise ConfigError(f"--role {', '.join(unknown_roles)}: no compared framework has that role")
    return {
        f: RunConfig(
            base[f][0],
            task,
            data=data,
            split=split,
            limit=limit,
            seed=seed,
            knobs=base[f][1] | per_fw[f],
            lm=lm,
            roles={r: m for r, m in (roles or {}).items() if r in classes[f].roles},
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            timeout=timeout,
            concurrency=concurrency,
            out=str(out),
            dataset=dict(dataset) if dataset else None,
            prices={k: list(v) for k, v in prices.items()} if prices else None,
            train_limit=train_limit,
            preset=planned[f][2],
            fail_on_error=fail_on_error,
            debias=debias if f in swapped else None,
            splits=dict(splits) if splits else None,
            spec=dict(spec) if spec else None,
        )
        for f in frameworks
    }


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
    rows: Mapping[str, tuple[str, Mapping[str, Any], str | None]] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR,
    budget: Any = None,
    matched_baselines: bool = True,
    baseline: str = "self-consistency",
    match: str = "calls",
    debias: str | None = None,
    splits: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> Comparison:
    """Run every framework on the same examples and write the comparison folder.

    ``presets``, ``rows``: see :func:`comparison_configs`. ``progress(framework, result)`` is
    called per example, ``on_start(framework, n)`` when a framework's run (each repeat's) starts
    on ``n`` examples.

    A ``budget`` (:class:`courtroom.cost.budget.Budget`) is shared by the frameworks, run in
    order; at its limit the current run stops resumable and later frameworks do not start.

    With ``matched_baselines``, a majority-vote ``baseline`` row is added per framework, its
    samples set to match the framework's mean calls (or tokens) per example
    (:mod:`courtroom.comparison.matched`). ``debias``: see :func:`comparison_configs`.
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
    out_dir = Path(out) / f"{created}_compare_{name.replace('/', '-')}_{uuid.uuid4().hex[:6]}"
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
        },
        spec,
    )
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
    )


PLAN = "plan.json"
"""What a comparison will run, written before its first run: enough for ``compare --resume``."""


def write_plan(
    out_dir: Path,
    task: str,
    frameworks: Sequence[str],
    options: Mapping[str, Any],
    spec: Mapping[str, Any] | None = None,
) -> None:
    """Write ``plan.json``: the task, the compared rows, the options and the spec (never the base URL)."""
    plan = {"kind": "courtroom-comparison", "task": task, "frameworks": list(frameworks), "spec": spec}
    write_json(out_dir / PLAN, plan | {"options": without_base_url(options)})


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
            (matched_baselines, baseline, match),
            ambiguity_k,
            theta,
            concurrency,
            resuming,
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
    matching: tuple[bool, str, str],
    ambiguity_k: int,
    theta: float,
    concurrency: int,
    resuming: Mapping[str, Any] | None,
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
    matched_baselines, baseline, match = matching
    matches: dict[str, list[str]] = {}
    if matched_baselines:
        from courtroom.comparison import matched

        table_rows = {f: _row(outcomes[f]) for f in frameworks}
        first = configs[frameworks[0]]
        per_sample = matched.tokens_per_sample(first, baseline) if match == "tokens" else None
        knob = matched.BASELINES[baseline]
        plan = matched.plan(table_rows, baseline=baseline, match=match, sample_tokens=per_sample)
        for k, fws in sorted(plan.items()):
            if baseline in configs and configs[baseline].knobs.get(knob, get_framework(baseline).knobs()[knob]) == k:
                matches[baseline] = fws  # a compared row already is that vote
                continue
            row_name = matched.row_name(baseline, k)
            configs[row_name] = dataclasses.replace(
                first,
                framework=baseline,
                knobs={knob: k},
                preset=None,
                debias=None,
                roles={r: m for r, m in (roles or {}).items() if r in get_framework(baseline).roles},
            )
            matches[row_name] = fws
        added = [m for m in matches if m not in outcomes]
        for row_name in added:
            run_one(row_name, configs[row_name], [m for m in added if m not in outcomes and m != row_name])
    frameworks = [*frameworks, *(m for m in matches if m not in frameworks)]
    comparison = _write(out_dir, task, frameworks, outcomes, configs, matches)
    if ambiguity_k:
        rows = {f: _results(o)[1] for f, o in outcomes.items()}
        split_comparison(out_dir, comparison.analyses, rows, configs, lms, ambiguity_k, theta, concurrency)
    comparison.plots = draw_plots(out_dir)
    for f, o in outcomes.items():
        failed = [x for x in (o.outcomes if isinstance(o, RepeatOutcome) else [o]) if x.summary["status"] == "failed"]
        if failed:
            comparison.failed[f] = failed[0].summary["status_reason"]
    return comparison


def _clear(folder: Path, resuming: Mapping[str, Any] | None) -> None:
    """On resume, drop a row folder that was created but holds no run yet (stopped before its first write)."""
    if resuming is not None and folder.is_dir():
        shutil.rmtree(folder)


def _write(
    out_dir: Path,
    task: str,
    frameworks: Sequence[str],
    outcomes: Mapping[str, Any],
    configs: Mapping[str, RunConfig],
    matches: Mapping[str, Sequence[str]] | None = None,
) -> Comparison:
    from courtroom.comparison.matched import cost_columns

    table = pd.DataFrame([_row(outcomes[f]) for f in frameworks], index=pd.Index(frameworks, name="framework"))
    table = cost_columns(table)
    if matches:
        from courtroom.comparison.significance import add_mcnemar

        table["matches"] = [", ".join(matches.get(f, ())) for f in frameworks]
        table = add_mcnemar(table, {f: _results(outcomes[f])[1] for f in frameworks}, matches)
    table.to_csv(out_dir / "table.csv")
    write_atomic(out_dir / "table.md", f"# {task}\n\n" + analysis.markdown_table(readable_table(table)))
    runs, analyses = {}, {}
    for f in frameworks:
        o = outcomes[f]
        runs[f] = str((o.run_dir if isinstance(o, RunOutcome) else o.group_dir).relative_to(out_dir))
        run_dir, results = _results(o)
        meta = read_json(run_dir / "meta.json", "start a new comparison")
        analyses[f] = _jsonable(analysis.analyze(results, meta.get("framework_config")))
        flipped = flip_matrix(results, configs[f].framework, meta["task"]["labels"], meta["task"].get("positions"))
        if flipped is not None:
            analyses[f]["flips"] = flipped
        calibration = scores([r.to_dict() for r in results])
        if calibration:
            analyses[f]["calibration"] = calibration
        if isinstance(o, RepeatOutcome):
            analyses[f]["repeat_accuracies"] = [x.summary["accuracy"] for x in o.outcomes]
    write_json(out_dir / "analyses.json", analyses)
    first = configs[frameworks[0]]
    (out_dir / "comparison.json").write_text(
        json.dumps(
            {
                "task": task,
                "frameworks": list(frameworks),
                "runs": runs,
                "matched_baselines": {k: list(v) for k, v in (matches or {}).items()},
                "config": without_base_url(
                    {k: v for k, v in vars(first).items() if k not in ("framework", "knobs", "spec")}
                )
                | {"knobs": {f: c.knobs for f, c in configs.items()}},
                "spec": first.spec,
            },
            indent=2,
        )
    )
    return Comparison(out_dir, table, runs, analyses)


def _folder(name: str) -> str:
    """A run folder name for a table row (``self-consistency k=9`` -> ``self-consistency_k9``)."""
    return name.replace(" k=", "_k").replace(" ", "_")


def _jsonable(value: Any) -> Any:
    if isinstance(value, pd.DataFrame):
        return value.to_dict("records")
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


__all__ = [
    "Comparison",
    "compare",
    "comparison_configs",
    "comparison_runs",
    "draw_plots",
    "load_comparison",
]
