"""Compile a framework with a DSPy optimizer; ``OPTIMIZERS`` is the one registry, by name.

Every supported optimizer keeps the per-role models: programs hold their models in a
:class:`~courtroom.models.lms.RoleLMs` map (shared by deep copies) and pick them per call, so an
optimizer that resets ``predictor.lm`` (LabeledFewShot, BootstrapFewShot, random search) or
deep-copies the program (MIPROv2, COPRO, GEPA) changes nothing about routing. The optimizers'
own models (MIPROv2's and COPRO's prompt model, GEPA's reflection model) are the judge's model
unless ``prompt_lm`` is given. Optimizers that require one model for every predictor (SIMBA,
BestOfN, Refine) are refused.

The training split trains; the dev split is scored before and after and never seen by the
optimizer (optimizers that want a validation set carve it from the training split).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import dspy

from courtroom.errors import ConfigError
from courtroom.eval.harness import evaluate, summarize
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR, TooManyFailures, status
from courtroom.models._adapter import ADAPTER
from courtroom.models._concurrency import bounded_requests, limit_requests
from courtroom.models.lms import LMSpec, RoleLMs, build_lm, check_keys, resolve_roles
from courtroom.optimize._feedback import feedback_metric, label_metric
from courtroom.optimize._knn import KNNOptimizer
from courtroom.optimize._labeled import LabeledPrecedents, labeled_roles
from courtroom.programs import CourtroomProgram, build_program, get_framework
from courtroom.reporting.logs import optimizer_output

if TYPE_CHECKING:
    from courtroom.spec import Experiment


@dataclass
class Context:
    """What an optimizer builder gets."""

    settings: dict[str, Any]
    program: CourtroomProgram
    prompt_lm: Any
    concurrency: int
    seed: int


Runner = Callable[[Context, CourtroomProgram, list[dspy.Example]], CourtroomProgram]


@dataclass(frozen=True)
class Optimizer:
    """A registered optimizer: defaults, how small a trainset it accepts, and how it runs."""

    name: str
    summary: str
    defaults: Mapping[str, Any] = field(default_factory=dict)
    run: Runner | None = None
    min_train: Callable[[Mapping[str, Any]], int] = lambda s: 1
    refuse: str | None = None
    """Why this optimizer is not supported (it would run every role on one model)."""
    check: Callable[[Mapping[str, Any], Mapping[str, Any]], None] = lambda s, given: None
    """Raises :class:`ConfigError` for settings (all, and those the user gave) the optimizer would
    refuse only once it runs, or would silently override."""


def _labeled(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    return LabeledPrecedents(k=ctx.settings["k"], seed=ctx.seed).compile(student, trainset=train)


def _bootstrap(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.BootstrapFewShot(metric=label_metric, **ctx.settings)
    return opt.compile(student, trainset=train)


def _random_search(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.BootstrapFewShotWithRandomSearch(metric=label_metric, num_threads=ctx.concurrency, **ctx.settings)
    return opt.compile(student, trainset=train)


def _knn(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    return KNNOptimizer(label_metric, concurrency=ctx.concurrency, **ctx.settings).compile(student, trainset=train)


def _mipro(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    s = dict(ctx.settings)
    compile_keys = ("num_trials", "minibatch", "minibatch_size")
    compile_kwargs = {k: s.pop(k) for k in compile_keys if k in s and s[k] is not None}
    for k in compile_keys:
        s.pop(k, None)
    if s.get("num_candidates") is not None:
        s["auto"] = None
    opt = dspy.MIPROv2(
        metric=label_metric,
        prompt_model=ctx.prompt_lm,
        task_model=None,
        num_threads=ctx.concurrency,
        seed=ctx.seed,
        verbose=False,
        **s,
    )
    return opt.compile(student, trainset=train, requires_permission_to_run=False, **compile_kwargs)


def _mipro_budget(s: Mapping[str, Any], given: Mapping[str, Any]) -> None:
    """The budgets MIPROv2 refuses when its compile starts, refused as the settings are read.

    Candidates by hand replace the default auto budget; an auto budget the user gave as well is
    refused rather than dropped.
    """
    if s.get("auto") not in (None, "light", "medium", "heavy"):
        raise ConfigError(f"optimizer mipro: auto={s.get('auto')!r}: use light, medium, heavy or none")
    if given.get("auto") is not None and given.get("num_candidates") is not None:
        raise ConfigError(
            f"optimizer mipro: --opt auto={given['auto']} and --opt num_candidates={given['num_candidates']} "
            "both set the budget: keep auto alone, or give num_candidates and num_trials without it"
        )
    if s.get("auto") is not None and s.get("num_trials") is not None and s.get("num_candidates") is None:
        # MIPROv2 takes trials by hand only with candidates by hand: an auto budget sets both.
        raise ConfigError(
            f"optimizer mipro: --opt num_trials={s['num_trials']} needs --opt num_candidates=N too "
            f"(or drop num_trials to keep the auto={s['auto']} budget)"
        )
    manual = s.get("auto") is None or s.get("num_candidates") is not None
    if manual and (s.get("num_candidates") is None or s.get("num_trials") is None):
        raise ConfigError(
            "optimizer mipro without an auto budget needs --opt num_candidates=N and --opt num_trials=N "
            "(or keep --opt auto=light)"
        )


def _check_mipro(s: Mapping[str, Any], n_train: int) -> None:
    """MIPROv2's check of its minibatch against the training set, made before anything is spent."""
    if s.get("auto") is not None and s.get("num_candidates") is None:
        return  # an auto budget sizes the candidates, trials and minibatches itself
    valset = min(1000, max(1, int(n_train * 0.8)))  # MIPROv2 validates on 80% of the training set
    size = int(s.get("minibatch_size") or 35)
    if s.get("minibatch") is not False and size > valset:
        raise ConfigError(
            f"optimizer mipro: minibatch_size {size} is more than the {valset} validation examples it takes "
            f"from --train-limit {n_train}: pass --opt minibatch_size={valset}, --opt minibatch=false, "
            "or a larger --train-limit"
        )


def _copro(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.COPRO(prompt_model=ctx.prompt_lm, metric=label_metric, **ctx.settings)
    return opt.compile(student, trainset=train, eval_kwargs={"num_threads": ctx.concurrency, "display_progress": False})


def _gepa(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    s = {k: v for k, v in ctx.settings.items() if v is not None}
    budgets = [k for k in ("auto", "max_metric_calls", "max_full_evals") if k in s]
    if len(budgets) > 1 and "auto" in budgets:
        s.pop("auto")
        budgets.remove("auto")
    if len(budgets) != 1:
        raise ConfigError(f"gepa: set exactly one budget of auto, max_metric_calls, max_full_evals (got {budgets})")
    opt = dspy.GEPA(
        metric=feedback_metric(student.labels, student.positions),
        reflection_lm=ctx.prompt_lm,
        num_threads=ctx.concurrency,
        seed=ctx.seed,
        **s,
    )
    return opt.compile(student, trainset=train)


_SINGLE_LM = (
    "it requires every predictor to use the same model, so it would run every role on one model; "
    "use bootstrap, bootstrap-rs, knn, mipro, copro or gepa"
)

OPTIMIZERS: dict[str, Optimizer] = {
    o.name: o
    for o in (
        Optimizer(
            "labeled",
            "LabeledFewShot: k gold-labelled training cases as demos for the deciding roles",
            {"k": 3},
            _labeled,
            lambda s: int(s["k"]),
        ),
        Optimizer(
            "bootstrap",
            "BootstrapFewShot: demos from the program's own correct runs, for every role",
            {"max_bootstrapped_demos": 2, "max_labeled_demos": 0, "max_rounds": 1},
            _bootstrap,
            lambda s: int(s["max_bootstrapped_demos"]),
        ),
        Optimizer(
            "bootstrap-rs",
            "BootstrapFewShotWithRandomSearch: several bootstrapped demo sets, the best kept",
            {"max_bootstrapped_demos": 2, "max_labeled_demos": 0, "num_candidate_programs": 4},
            _random_search,
            lambda s: max(int(s["max_bootstrapped_demos"]), 2),
        ),
        Optimizer(
            "knn",
            "KNN precedents: per input, demos from the k most similar training cases",
            {"k": 3, "per_role": 1},
            _knn,
            lambda s: int(s["k"]),
        ),
        Optimizer(
            "mipro",
            "MIPROv2: instructions and demos per role, searched with Bayesian optimisation",
            {
                "auto": "light",
                "num_candidates": None,
                "num_trials": None,
                "max_bootstrapped_demos": 2,
                "max_labeled_demos": 0,
                "minibatch": None,
                "minibatch_size": None,
            },
            _mipro,
            lambda s: max(int(s["max_bootstrapped_demos"]), 2),
            check=_mipro_budget,
        ),
        Optimizer(
            "copro",
            "COPRO: coordinate ascent over each role's instructions",
            {"breadth": 4, "depth": 2, "init_temperature": 1.4},
            _copro,
            lambda s: 1,
        ),
        Optimizer(
            "gepa",
            "GEPA: reflective instruction evolution with per-role feedback from the metric",
            {
                "auto": "light",
                "max_metric_calls": None,
                "max_full_evals": None,
                "reflection_minibatch_size": 3,
            },
            _gepa,
            lambda s: int(s["reflection_minibatch_size"]),
        ),
        Optimizer("simba", "SIMBA (refused)", refuse=_SINGLE_LM),
        Optimizer("bestofn", "BestOfN (refused)", refuse=_SINGLE_LM),
        Optimizer("refine", "Refine (refused)", refuse=_SINGLE_LM),
    )
}


def register(optimizer: Optimizer) -> Optimizer:
    """Add an optimizer to the registry (replacing one of the same name)."""
    OPTIMIZERS[optimizer.name] = optimizer
    return optimizer


def get_optimizer(name: str) -> Optimizer:
    """The registered optimizer called ``name``; refused ones raise with the reason."""
    supported = sorted(n for n, o in OPTIMIZERS.items() if o.refuse is None)
    if name not in OPTIMIZERS:
        raise ConfigError(f"unknown optimizer {name!r}: valid optimizers are {', '.join(supported)}")
    opt = OPTIMIZERS[name]
    if opt.refuse:
        raise ConfigError(f"optimizer {name!r} is not supported: {opt.refuse}")
    return opt


def optimizer_settings(opt: Optimizer, overrides: Mapping[str, Any] | None) -> dict[str, Any]:
    """Defaults updated by ``overrides``, refusing unknown keys."""
    unknown = sorted(set(overrides or {}) - set(opt.defaults))
    if unknown:
        raise ConfigError(
            f"optimizer {opt.name} has no setting {', '.join(unknown)}: its settings are "
            + ", ".join(f"{k}={v}" for k, v in opt.defaults.items())
        )
    chosen = dict(opt.defaults) | dict(overrides or {})
    opt.check(chosen, dict(overrides or {}))
    return chosen


def check_compatible(opt: Optimizer, program: CourtroomProgram) -> None:
    """Refuse optimizers whose demos or feedback cannot reach this framework's roles."""
    fw = type(program).name
    predictors = list(program.named_predictors())
    if not predictors:
        raise ConfigError(f"{fw} has no predictors for {opt.name} to tune")
    if opt.name == "labeled" and not labeled_roles(program):
        raise ConfigError(
            f"optimizer labeled is incompatible with {fw}: no role reads the case and chooses a "
            "label; use bootstrap or knn"
        )
    if opt.name == "knn":
        blind = [n for n, p in predictors if "case" not in p.signature.input_fields]
        if blind:
            raise ConfigError(
                f"optimizer knn is incompatible with {fw}: role(s) {', '.join(blind)} do not read "
                "the case, so no similarity can pick their precedents; use bootstrap"
            )


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
            assert opt.run is not None
            compiled = keep_prepared_demos(program, opt.run(ctx, program, trainset))
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
    from courtroom._spec_values import typed_knobs

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
