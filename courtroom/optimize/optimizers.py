"""The optimizer registry: ``OPTIMIZERS``, by name, and how each registered optimizer runs.

Every supported optimizer keeps the per-role models: programs hold their models in a
:class:`~courtroom.models.lms.RoleLMs` map (shared by deep copies) and pick them per call, so an
optimizer that resets ``predictor.lm`` (LabeledFewShot, BootstrapFewShot, random search) or
deep-copies the program (MIPROv2, COPRO, GEPA) changes nothing about routing. The optimizers'
own models (MIPROv2's and COPRO's prompt model, GEPA's reflection model) are the judge's model
unless ``prompt_lm`` is given. Optimizers that require one model for every predictor (SIMBA,
BestOfN, Refine) are refused.

:func:`~courtroom.optimize.compile.compile_program` runs one of them (``prompt_lm`` is its
argument) on the train split; those that select among candidates (``selects``: random search,
MIPROv2, GEPA) select on the dev split. The test split is held out from all of them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import dspy

from courtroom.errors import ConfigError
from courtroom.optimize._feedback import feedback_metric, label_metric
from courtroom.optimize._knn import KNNOptimizer
from courtroom.optimize._labeled import LabeledPrecedents, labeled_roles
from courtroom.programs import CourtroomProgram


@dataclass
class Context:
    """What an optimizer builder gets."""

    settings: dict[str, Any]
    program: CourtroomProgram
    prompt_lm: Any
    concurrency: int
    seed: int
    valset: list[dspy.Example] | None = None
    """The dev split, for optimizers that select among candidates (``Optimizer.selects``)."""
    metric: Callable[..., Any] = label_metric
    """What the optimizer maximises: ``metric(example, prediction, trace=None)``, the verdict equals the
    gold label unless ``--metric`` names another (:func:`courtroom.eval.metrics.get_metric`)."""


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
    selects: bool = False
    """It selects among candidate programs on the dev split (``Context.valset``)."""


def _labeled(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    return LabeledPrecedents(k=ctx.settings["k"], seed=ctx.seed).compile(student, trainset=train)


def _bootstrap(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.BootstrapFewShot(metric=ctx.metric, **ctx.settings)
    return opt.compile(student, trainset=train)


def _random_search(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.BootstrapFewShotWithRandomSearch(metric=ctx.metric, num_threads=ctx.concurrency, **ctx.settings)
    return opt.compile(student, trainset=train, valset=ctx.valset)


def _knn(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    return KNNOptimizer(ctx.metric, concurrency=ctx.concurrency, **ctx.settings).compile(student, trainset=train)


def _mipro(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    s = dict(ctx.settings)
    compile_keys = ("num_trials", "minibatch", "minibatch_size")
    compile_kwargs = {k: s.pop(k) for k in compile_keys if k in s and s[k] is not None}
    for k in compile_keys:
        s.pop(k, None)
    if s.get("num_candidates") is not None:
        s["auto"] = None
    opt = dspy.MIPROv2(
        metric=ctx.metric,
        prompt_model=ctx.prompt_lm,
        task_model=None,
        num_threads=ctx.concurrency,
        seed=ctx.seed,
        verbose=False,
        **s,
    )
    return opt.compile(student, trainset=train, valset=ctx.valset, requires_permission_to_run=False, **compile_kwargs)


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


def _check_mipro(s: Mapping[str, Any], n_dev: int) -> None:
    """MIPROv2's check of its minibatch against the dev split it selects on, made before anything is spent."""
    if s.get("auto") is not None and s.get("num_candidates") is None:
        return  # an auto budget sizes the candidates, trials and minibatches itself
    size = int(s.get("minibatch_size") or 35)
    if s.get("minibatch") is not False and size > n_dev:
        raise ConfigError(
            f"optimizer mipro: minibatch_size {size} is more than the {n_dev} dev examples it selects on "
            f"(--dev-limit): pass --opt minibatch_size={n_dev}, --opt minibatch=false, or a larger --dev-limit"
        )


def _copro(ctx: Context, student: CourtroomProgram, train: list[dspy.Example]) -> CourtroomProgram:
    opt = dspy.COPRO(prompt_model=ctx.prompt_lm, metric=ctx.metric, **ctx.settings)
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
        metric=feedback_metric(student.labels, student.positions, ctx.metric),
        reflection_lm=ctx.prompt_lm,
        num_threads=ctx.concurrency,
        seed=ctx.seed,
        **s,
    )
    return opt.compile(student, trainset=train, valset=ctx.valset)


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
            selects=True,
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
            selects=True,
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
            selects=True,
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


def _add_plugin(name: str, obj: Any) -> None:
    from courtroom._plugins import named

    register(named(obj, Optimizer, name, "optimizer"))


def load_plugins() -> None:
    """Add the optimizers installed packages name in ``courtroom.optimizers`` (:mod:`courtroom._plugins`)."""
    from courtroom import _plugins

    _plugins.load("optimizers", _add_plugin)


def get_optimizer(name: str) -> Optimizer:
    """The registered optimizer called ``name`` (an installed package's too); refused ones raise with the reason."""
    if name not in OPTIMIZERS:
        load_plugins()  # a package put on the path since this module was imported
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
