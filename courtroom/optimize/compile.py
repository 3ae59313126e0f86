"""Compile a framework with a DSPy optimizer and prove the gain on held-out cases.

The optimizers are registered in :mod:`courtroom.optimize.optimizers` (``OPTIMIZERS``, by name),
which says how each keeps the per-role models; its names are importable from here too.

Three disjoint splits: the optimizer trains on the train split; optimizers that select among
candidates (random search, MIPROv2, GEPA) select on the dev split; the test split is held out. The
starting and the optimized program are scored on dev and on test, and :mod:`courtroom.optimize.proof`
compares them case by case (intervals, exact McNemar test). Only the test comparison is a proof:
nothing chose with those cases.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import dspy

from courtroom import _stop
from courtroom.errors import ConfigError
from courtroom.eval.harness import evaluate, total_usage
from courtroom.eval.metrics import active, majority, score_results
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR, TooManyFailures, status
from courtroom.models._adapter import ADAPTER
from courtroom.models._concurrency import bounded_requests, limit_requests
from courtroom.models.lms import LMSpec, RoleLMs, build_lm, check_keys, resolve_roles
from courtroom.optimize._causes import failures
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
from courtroom.optimize.proof import DEFAULT_TEST_LIMIT, CompileResult, gain, proof_record
from courtroom.programs import CourtroomProgram, build_program, get_framework
from courtroom.reporting.logs import optimizer_output

if TYPE_CHECKING:
    from courtroom.spec import Experiment

logger = logging.getLogger(__name__)


def _scores(
    program: CourtroomProgram,
    examples: Sequence[dspy.Example],
    concurrency: int,
    fail_on_error: float | None,
    display: Any = None,
    name: str = "dev",
) -> dict[str, Any]:
    start = time.perf_counter()
    bar = display.track(name, total=len(examples)) if display is not None else None
    results = evaluate(program, examples, concurrency=concurrency, on_result=bar.result if bar else None)
    wall = round(time.perf_counter() - start, 3)
    # Not the harness's whole summary (calibration, bias): the run folders written later have it.
    s = score_results(results, program.labels)
    usage = total_usage(results)
    errors = [r.error for r in results if r.prediction is None]
    scores = {k: s[k] for k in ("n", "accuracy", "macro_f1", "failures")}
    scores |= {"calls": usage.calls, "sent": usage.sent, "cached": usage.cached}
    scores |= status(len(errors), len(results), fail_on_error, errors)
    return scores | {"results": results, "wall": wall}


def compile_program(
    framework: str,
    *,
    task: str = "boolean_expressions",
    optimizer: str = "bootstrap",
    settings: Mapping[str, Any] | None = None,
    knobs: Mapping[str, Any] | None = None,
    train: int = 20,
    dev: int = 20,
    test: int = DEFAULT_TEST_LIMIT,
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
    n_sampling: bool | None = None,
    prompt_layout: str | None = None,
    concurrency: int = 4,
    trainset: Sequence[dspy.Example] | None = None,
    devset: Sequence[dspy.Example] | None = None,
    testset: Sequence[dspy.Example] | None = None,
    labels: Sequence[str] | None = None,
    positions: Sequence[str] | None = None,
    display: Any = None,
    fail_on_error: float | None = DEFAULT_FAIL_ON_ERROR,
    dataset: Mapping[str, Any] | None = None,
    splits: Mapping[str, Any] | None = None,
    keep_better: bool = False,
) -> CompileResult:
    """Compile ``framework`` on a task with ``optimizer``; score dev and the held-out test split before and after.

    Data: the task's train, dev and test splits (first ``train`` / ``dev`` / ``test`` examples;
    ``test=0`` scores no test split), or ``trainset``, ``devset``, ``labels`` (and ``testset``, else
    no test split) given directly. Test cases whose text is also in train or dev are left out.
    Models: ``lms``, or ``lm`` plus ``roles`` (strings or ``dspy.LM`` objects). ``display`` (a
    :class:`~courtroom.reporting.progress.ProgressDisplay`) shows the scoring and the optimizer's LM
    calls; DSPy's own bars are off. When more than ``fail_on_error`` of the dev examples fail before
    compiling, nothing is compiled (:class:`TooManyFailures`); after compiling, the scores' ``status``
    says so and the caller decides. When the optimized program scores lower on dev than the
    starting one, a warning says so and the result records it (``worse_on_dev``); with
    ``keep_better`` the starting program is kept (``kept == "start"``).
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
        if test < 0:
            raise ConfigError(f"--test-limit must be >= 0 (0: no test split), got {test}")
        where: dict[str, Any] = {"data": data, "seed": seed, "dataset": dataset, "splits": splits}
        tr = load_sized(task, "train", train, **where)
        dv = load_sized(task, "dev", dev, **where)
        trainset, devset = tr.examples, dv.examples
        if test:
            testset = _test_split(task, test, where)
        task_info["name"] = tr.task.name
        labels, positions = list(tr.task.labels), list(tr.task.positions or tr.task.labels)
        task_info |= {"source": tr.source, "seed": seed}
    trainset, devset = list(trainset), list(devset)
    testset, test_note = _held_out(testset, trainset + devset)
    if not devset:
        raise ConfigError("the dev set is empty: dev scores before and after need at least one example")
    need = opt.min_train(chosen)
    if len(trainset) < need:
        raise ConfigError(
            f"optimizer {opt.name} with {chosen} needs at least {need} training examples, got "
            f"{len(trainset)}: raise --train-limit or lower the optimizer's settings"
        )
    if opt.name == "mipro":
        _check_mipro(chosen, len(devset))
    if lms is None:
        lms = resolve_roles(
            lm,
            roles,
            valid_roles=cls.roles,
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            timeout=timeout,
            n_sampling=n_sampling,
            prompt_layout=prompt_layout,
        )
        check_keys(lms)
    program = build_program(framework, labels, positions, knobs=knobs, lms=lms)
    check_compatible(opt, program)
    helper = build_lm(LMSpec(prompt_lm, timeout=timeout)) if isinstance(prompt_lm, str) else prompt_lm
    helper = limit_requests(helper or lms.for_role("judge" if "judge" in cls.roles else cls.roles[0]))
    scored: dict[str, dict[str, dict[str, Any]]] = {"dev": {}, "test": {}}
    # One bound for the whole compile: the optimizer's own threads (and its prompt model) share it.
    with bounded_requests(concurrency):
        program.prepare(trainset)
        scored["dev"]["before"] = _scores(program, devset, concurrency, fail_on_error, display, "dev before")
        if scored["dev"]["before"]["status"] == "failed":
            raise TooManyFailures(
                f"dev score before compiling: {scored['dev']['before']['status_reason']}; nothing was compiled "
                "(fix the model, or pass --fail-on-error 1)"
            )
        if testset:
            scored["test"]["before"] = _scores(program, testset, concurrency, 1.0, display, "test before")
        # The optimizer gets a copy: some (labeled, knn) change the program they are given.
        custom = active()  # --metric: what the optimizer maximises too
        ctx = Context(chosen, program, helper, concurrency, seed, valset=devset)
        if custom is not None:
            ctx.metric = custom.fn
        start = time.perf_counter()
        bar = display.track(f"optimizing ({opt.name})", unit=None) if display is not None else None
        phases = optimizer_output(bar.status if bar is not None else None, label=f"{cls.name} + {opt.name}")
        run = opt.run
        assert run is not None

        def optimize() -> CourtroomProgram:
            # Entered in the thread that runs the optimizer: its phase lines are told apart by thread.
            with dspy.context(lm=helper, adapter=ADAPTER), phases, failures() as failed:
                try:
                    return run(ctx, program.deepcopy(), trainset)
                except Exception as exc:  # DSPy's "Execution cancelled" says nothing of why: the first failure does
                    failed.raise_cause(exc, opt.name)

        # In a worker: a stop (Ctrl-C, SIGTERM) lets the optimizer's requests in flight finish and be cached.
        compiled = keep_prepared_demos(program, _stop.finishing(optimize))
        if bar is not None:
            bar.status("done")
        seconds = time.perf_counter() - start
        scored["dev"]["after"] = _scores(compiled, devset, concurrency, fail_on_error, display, "dev after")
        worse = scored["dev"]["after"]["accuracy"] < scored["dev"]["before"]["accuracy"]
        kept = "start" if worse and keep_better else "optimized"
        if testset and kept == "optimized":
            scored["test"]["after"] = _scores(compiled, testset, concurrency, 1.0, display, "test after")
        elif testset:
            scored["test"]["after"] = dict(scored["test"]["before"])  # the same program: its answers, not new draws
    if worse:
        b, a = scored["dev"]["before"]["accuracy"], scored["dev"]["after"]["accuracy"]
        logger.warning(
            "the optimized program scores lower on dev than the starting one (%.3f -> %.3f): %s",
            b,
            a,
            "keeping the starting program (--keep-better)"
            if kept == "start"
            else "pass --keep-better to keep the starting program",
        )
    results = {split: {w: s.pop("results") for w, s in by.items()} for split, by in scored.items() if by}
    walls = {split: {w: s.pop("wall") for w, s in by.items()} for split, by in scored.items() if by}
    proofs = {
        split: gain(split, r["before"], r["after"], labels, _calls(scored[split])) for split, r in results.items()
    }
    task_info |= {
        "labels": list(labels),
        "positions": list(compiled.positions),
        "train_ids": [str(ex.get("id")) for ex in trainset],
        "dev_ids": [str(ex.get("id")) for ex in devset],
        "test_ids": [str(ex.get("id")) for ex in testset],
        # What the program saw, by text (digests, not the texts): `courtroom score` checks its cases against them.
        "seen_cases": {"train": _digests(trainset), "dev": _digests(devset)},
    }
    from courtroom.saving import describe_lm

    before, after = scored["dev"]["before"], scored["dev"]["after"]
    metadata = {
        "task": task_info,
        "optimizer": {
            "name": opt.name,
            "settings": chosen,
            "prompt_model": describe_lm(helper),
            "seconds": round(seconds, 2),
            "selects_on_dev": opt.selects,
        },
        "scores": {split: {"before": by["before"], "after": by["after"]} for split, by in scored.items() if by},
        "proof": proof_record(proofs["dev"], proofs.get("test"), worse_on_dev=worse, kept=kept, test_note=test_note),
        "metric": custom.name if custom is not None else "accuracy",
        "majority": majority_record(trainset, results),
    }
    return CompileResult(
        program=program if kept == "start" else compiled,
        before=before,
        after=after,
        metadata=metadata,
        dev=proofs["dev"],
        test=proofs.get("test"),
        worse_on_dev=worse,
        kept=kept,
        results=results,
        walls=walls,
    )


def majority_record(train: Sequence[dspy.Example], results: Mapping[str, Mapping[str, Any]]) -> dict[str, Any] | None:
    """The training split's majority class and the accuracy of always answering it on each scored split.

    The accuracy to beat: a program below it does worse than a constant answer (None: no training labels).
    """
    found = majority([str(ex.label) for ex in train])
    if found is None:
        return None
    label, rate = found
    out: dict[str, Any] = {"label": label, "from": "train", "train": round(rate, 4)}
    for split, by in results.items():
        golds = [r.gold for r in by.get("before") or []]
        if golds:
            out[split] = round(sum(g == label for g in golds) / len(golds), 4)
    return out


def _test_split(task: str, test: int, where: Mapping[str, Any]) -> list[dspy.Example]:
    """The first ``test`` examples of the test split; none (with a warning) when the data leaves it empty."""
    from courtroom.data.tasks import load_task
    from courtroom.errors import DataError

    try:
        loaded = load_task(task, split="test", limit=test, limit_flag="--test-limit", short="warn", **where)
        return list(loaded.examples)
    except DataError as exc:
        if "split is empty" not in str(exc):
            raise
        logger.warning("no held-out test split (%s): give --split-sizes a test share to prove the gain", exc)
        return []


def _held_out(
    testset: Sequence[dspy.Example] | None, seen: Sequence[dspy.Example]
) -> tuple[list[dspy.Example], str | None]:
    """The test examples whose case text neither train nor dev holds; and a note of what was left out."""
    if not testset:
        return [], "no test split scored (--test-limit 0, or none given)"
    from courtroom.data.tasks import case_key

    known = {case_key(ex.get("case")) for ex in seen}
    kept = [ex for ex in testset if case_key(ex.get("case")) not in known]
    dropped = len(testset) - len(kept)
    if dropped:
        logger.warning("%d test case(s) also appear in train or dev: left out of the held-out score", dropped)
    if not kept:
        return [], "every test case also appears in train or dev: no held-out score"
    return kept, f"{dropped} test case(s) also in train or dev left out" if dropped else None


def _digests(examples: Sequence[dspy.Example]) -> list[str]:
    from courtroom.data.tasks import case_digest

    return sorted({case_digest(ex.get("case")) for ex in examples})


def _calls(by: Mapping[str, Mapping[str, Any]]) -> dict[str, int]:
    return {w: int(s.get("calls") or 0) for w, s in by.items()}


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
        test=DEFAULT_TEST_LIMIT if d.test_limit is None else d.test_limit,
        data=d.source,
        seed=d.seed,
        lm=default,
        roles=roles,
        prompt_lm=m.prompt_lm,
        temperature=m.temperature,
        max_tokens=m.max_tokens,
        api_base=m.api_base,
        timeout=m.timeout,
        n_sampling=m.n_sampling,
        prompt_layout=m.prompt_layout,
        concurrency=spec.execution.concurrency or 4,
        display=display,
        fail_on_error=spec.execution.threshold,
        dataset=d.custom(),
        splits=d.splits(),
        keep_better=spec.design.keep_better,
    )


__all__ = [
    "DEFAULT_TEST_LIMIT",
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
