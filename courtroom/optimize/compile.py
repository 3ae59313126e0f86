"""Compile a framework with a DSPy optimizer and score the dev split before and after.

The optimizers are registered in :mod:`courtroom.optimize.optimizers` (``OPTIMIZERS``, by name),
which says how each keeps the per-role models; its names are importable from here too.

The training split trains; the dev split is scored before and after and never seen by the
optimizer (optimizers that want a validation set carve it from the training split).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy

from courtroom import _stop
from courtroom.errors import ConfigError
from courtroom.eval.harness import evaluate, summarize
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR, TooManyFailures, status
from courtroom.models._adapter import ADAPTER
from courtroom.models._concurrency import bounded_requests, limit_requests
from courtroom.models.lms import LMSpec, RoleLMs, build_lm, check_keys, resolve_roles
from courtroom.optimize.optimizers import (
    OPTIMIZERS,
    Context,
    Optimizer,
    _check_mipro,
    check_compatible,
    get_optimizer,
    optimizer_settings,
    register,
)
from courtroom.programs import CourtroomProgram, build_program, get_framework
from courtroom.reporting.logs import optimizer_output

if TYPE_CHECKING:
    from courtroom.spec import Experiment


@dataclass
class CompileResult:
    """A compiled program, its dev scores before and after, and the metadata to save with it."""

    program: CourtroomProgram
    before: dict[str, Any]
    after: dict[str, Any]
    metadata: dict[str, Any]
    path: Path | None = None
    """Where the program was saved (by :func:`courtroom.compile`)."""
    dev_results: dict[str, list[Any]] = field(default_factory=dict)
    """``before`` / ``after``: the dev evaluations' per-example results (errors included)."""
    dev_wall: dict[str, float] = field(default_factory=dict)
    """``before`` / ``after``: the dev evaluations' wall seconds."""
    dev_dirs: dict[str, Path] = field(default_factory=dict)
    """``before`` / ``after``: the run folders they were written to (by :func:`courtroom.compile`)."""


def _dev_scores(
    program: CourtroomProgram,
    dev: Sequence[dspy.Example],
    concurrency: int,
    fail_on_error: float | None,
    display: Any = None,
    name: str = "dev",
) -> dict[str, Any]:
    start = time.perf_counter()
    bar = display.track(name, total=len(dev)) if display is not None else None
    results = evaluate(program, dev, concurrency=concurrency, on_result=bar.result if bar else None)
    s = summarize(results, program.labels, time.perf_counter() - start)
    errors = [r.error for r in results if r.prediction is None]
    scores = {k: s[k] for k in ("n", "accuracy", "macro_f1", "failures", "calls", "sent", "cached")}
    scores |= status(len(errors), len(results), fail_on_error, errors)
    return scores | {"results": results, "wall": s["wall_seconds"]}


def compile_program(
    framework: str,
    *,
    task: str = "boolean_expressions",
    optimizer: str = "bootstrap",
    settings: Mapping[str, Any] | None = None,
    knobs: Mapping[str, Any] | None = None,
    train: int = 20,
    dev: int = 20,
    data: str = "auto",
    seed: int = 0,
    lm: Any = None,
    roles: Mapping[str, Any] | None = None,
    lms: RoleLMs | None = None,
    prompt_lm: Any = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    trainset: Sequence[dspy.Example] | None = None,
    devset: Sequence[dspy.Example] | None = None,
    labels: Sequence[str] | None = None,
    positions: Sequence[str] | None = None,
    display: Any = None,
    fail_on_error: float | None = DEFAULT_FAIL_ON_ERROR,
    dataset: Mapping[str, Any] | None = None,
    splits: Mapping[str, Any] | None = None,
) -> CompileResult:
    """Compile ``framework`` on a task with ``optimizer``; score the dev split before and after.

    Data: the task's train and dev splits (first ``train`` / ``dev`` examples), or ``trainset``,
    ``devset`` and ``labels`` given directly. Models: ``lms``, or ``lm`` plus ``roles`` (strings
    or ``dspy.LM`` objects). ``display`` (a :class:`~courtroom.reporting.progress.ProgressDisplay`) shows
    the dev scoring before and after and the optimizer's LM calls; DSPy's own bars are off. When
    more than ``fail_on_error`` of the dev examples fail before compiling, nothing is compiled
    (:class:`TooManyFailures`); after compiling, the scores' ``status`` says so and the caller decides.
    """
    from courtroom.models.cache import configure_cache

    configure_cache()  # the courtroom cache (credentials redacted), as every other command uses
    opt = get_optimizer(optimizer)
    cls = get_framework(framework)
    chosen = optimizer_settings(opt, settings)
    task_info: dict[str, Any] = {"name": task}
    if trainset is None or devset is None or labels is None:
        from courtroom.data.tasks import load_sized

        if train < 1 or dev < 1:
            raise ConfigError(f"--train-limit and --dev-limit must be >= 1 (got {train}, {dev})")
        tr = load_sized(task, "train", train, data=data, seed=seed, dataset=dataset, splits=splits)
        dv = load_sized(task, "dev", dev, data=data, seed=seed, dataset=dataset, splits=splits)
        trainset, devset = tr.examples, dv.examples
        task_info["name"] = tr.task.name
        labels, positions = list(tr.task.labels), list(tr.task.positions or tr.task.labels)
        task_info |= {"source": tr.source, "seed": seed}
    trainset, devset = list(trainset), list(devset)
    if not devset:
        raise ConfigError("the dev set is empty: dev scores before and after need at least one example")
    need = opt.min_train(chosen)
    if len(trainset) < need:
        raise ConfigError(
            f"optimizer {opt.name} with {chosen} needs at least {need} training examples, got "
            f"{len(trainset)}: raise --train-limit or lower the optimizer's settings"
        )
    if opt.name == "mipro":
        _check_mipro(chosen, len(trainset))
    if lms is None:
        lms = resolve_roles(
            lm,
            roles,
            valid_roles=cls.roles,
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            timeout=timeout,
        )
        check_keys(lms)
    program = build_program(framework, labels, positions, knobs=knobs, lms=lms)
    check_compatible(opt, program)
    helper = build_lm(LMSpec(prompt_lm, timeout=timeout)) if isinstance(prompt_lm, str) else prompt_lm
    helper = limit_requests(helper or lms.for_role("judge" if "judge" in cls.roles else cls.roles[0]))
    # One bound for the whole compile: the optimizer's own threads (and its prompt model) share it.
    with bounded_requests(concurrency):
        program.prepare(trainset)
        before = _dev_scores(program, devset, concurrency, fail_on_error, display, "dev before")
        if before["status"] == "failed":
            raise TooManyFailures(
                f"dev score before compiling: {before['status_reason']}; nothing was compiled "
                "(fix the model, or pass --fail-on-error 1)"
            )
        ctx = Context(chosen, program, helper, concurrency, seed)
        start = time.perf_counter()
        bar = display.track(f"optimizing ({opt.name})", unit=None) if display is not None else None
        phases = optimizer_output(bar.status if bar is not None else None, label=f"{cls.name} + {opt.name}")
        with dspy.context(lm=helper, adapter=ADAPTER), phases:
            run = opt.run
            assert run is not None
            # In a worker: a stop (Ctrl-C, SIGTERM) lets the optimizer's requests in flight finish and be cached.
            compiled = keep_prepared_demos(program, _stop.finishing(lambda: run(ctx, program, trainset)))
        if bar is not None:
            bar.status("done")
        seconds = time.perf_counter() - start
        after = _dev_scores(compiled, devset, concurrency, fail_on_error, display, "dev after")
    task_info |= {
        "labels": list(labels),
        "positions": list(compiled.positions),
        "train_ids": [str(ex.get("id")) for ex in trainset],
        "dev_ids": [str(ex.get("id")) for ex in devset],
    }
    from courtroom.saving import describe_lm

    metadata = {
        "task": task_info,
        "optimizer": {
            "name": opt.name,
            "settings": chosen,
            "prompt_model": describe_lm(helper),
            "seconds": round(seconds, 2),
        },
        "scores": {"dev": {"before": before, "after": after}},
    }
    dev_results = {"before": before.pop("results"), "after": after.pop("results")}
    dev_wall = {"before": before.pop("wall"), "after": after.pop("wall")}
    return CompileResult(compiled, before, after, metadata, dev_results=dev_results, dev_wall=dev_wall)


def keep_prepared_demos(prepared: CourtroomProgram, compiled: CourtroomProgram) -> CourtroomProgram:
    """A role the optimizer left without demos keeps the ones ``prepare`` gave it (few-shot's, CoT's).

    Bootstrapping resets every predictor and adds only the traces its metric passed: with none, a
    few-shot baseline would lose the demos it cannot answer without.
    """
    before = dict(prepared.named_predictors())
    for name, predictor in compiled.named_predictors():
        if not predictor.demos and name in before and before[name].demos:
            predictor.demos = list(before[name].demos)
    return compiled


def compile_spec(spec: Experiment, models: tuple[Any, Mapping[str, Any]], *, display: Any = None) -> CompileResult:
    """:func:`compile_program` as ``spec`` describes it; ``models`` is (default model, role -> model)."""
    from courtroom.spec._values import typed_knobs

    opt = get_optimizer(spec.design.optimizer or "bootstrap")
    d, m = spec.data, spec.models
    default, roles = models
    return compile_program(
        str(spec.design.framework),
        task=d.task_name,
        optimizer=opt.name,
        settings=typed_knobs(spec.design.optimizer_settings, opt.defaults, flag="--opt"),
        knobs=spec.design.knobs,
        train=d.train_limit or 20,
        dev=d.dev_limit or 20,
        data=d.source,
        seed=d.seed,
        lm=default,
        roles=roles,
        prompt_lm=m.prompt_lm,
        temperature=m.temperature,
        max_tokens=m.max_tokens,
        api_base=m.api_base,
        timeout=m.timeout,
        concurrency=spec.execution.concurrency or 4,
        display=display,
        fail_on_error=spec.execution.threshold,
        dataset=d.custom(),
        splits=d.splits(),
    )


__all__ = [
    "OPTIMIZERS",
    "CompileResult",
    "Context",
    "Optimizer",
    "check_compatible",
    "compile_program",
    "compile_spec",
    "get_optimizer",
    "keep_prepared_demos",
    "optimizer_settings",
    "register",
]
