"""One Optuna study over courtroom designs, their knobs, prompts and models (SPEC §11).

The first parameter of every trial is the ``design`` (a framework name); each design's knobs
(:mod:`courtroom.optimize.study.spaces`) are drawn only when that design is (define-by-run), under the
names ``{design}.{knob}``. Trial 0 of each design is its paper default (enqueued). With
``compile`` set, each trial's program is compiled on the train split (LabeledFewShot,
BootstrapFewShot, MIPROv2 light, ...) before it is scored on dev, so prompts are searched with
the topology (MASS, arXiv 2502.02533); the compile's calls count in the trial's cost.

Objectives: accuracy or macro-F1, and with ``cost_objective`` the cost per example in ``calls``,
``tokens`` or ``dollars`` (see :mod:`courtroom.cost.tally`), compile cost included and spread
over the dev examples. With several ``models``, each role draws its model, and roles a design
calls several times (judges, samples, voters, debaters) may also draw the mixed panel of all of
them (:mod:`courtroom.models.panels`). Storage, resume, workers and pruning are those of
:mod:`courtroom.optimize.study`; the LM cache is shared by all designs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import dspy

from courtroom.cost import race_cap as capping
from courtroom.cost.tally import UNITS
from courtroom.errors import ConfigError
from courtroom.models._concurrency import bounded_requests
from courtroom.models.lms import DEFAULT, RoleLMs, check_keys, resolve_roles, saved_name
from courtroom.models.panels import Panel
from courtroom.optimize.study import _storage, _workers, extend
from courtroom.optimize.study._config import StudyConfig, _portable
from courtroom.optimize.study._dedupe import run_distinct
from courtroom.optimize.study._run import StudyOutcome, create_study, study_data
from courtroom.optimize.study._trials import TrialFailed, make_objective, trial_program
from courtroom.optimize.study.spaces import MODEL, SPACES, Choice, Param, add_plugin_spaces, build_space, default_params
from courtroom.programs import get_framework

DESIGN = "design"


def parse_frameworks(text: str | Sequence[str]) -> list[str]:
    """``"a,b"`` or ``"all"`` (every design with a search space) -> checked design names.

    Designs without searched knobs (zero-shot, few-shot, cot) have an empty space: one point each.
    """
    names = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    if names == ["all"]:
        return sorted(SPACES)
    add_plugin_spaces(names)  # checks each name too: an installed package's framework gets its space
    if not names:
        raise ConfigError("--frameworks needs at least one design, e.g. jot,courtroom-llm or all")
    return list(dict.fromkeys(names))


@dataclass
class DesignStudyConfig(StudyConfig):
    """A study over several designs (``framework`` is unused and fixed to ``designs``)."""

    framework: str = "designs"
    frameworks: list[str] = field(default_factory=list)
    compile: str | None = None
    """Optimizer that compiles each trial's program on the train split (None: no compile)."""
    compile_settings: dict[str, Any] = field(default_factory=dict)
    cost: str = "tokens"
    """Cost per example: ``calls``, ``tokens`` or ``dollars`` (needs prices LiteLLM or ``prices`` has)."""
    panels: bool = True
    """With several models, let repeated roles draw the mixed panel of all of them."""
    presets: dict[str, str] = field(default_factory=dict)
    """Design -> the paper preset its trials run (``knobs`` holds each design's as ``{design}.{knob}``)."""

    @property
    def name(self) -> str:
        """The study name (default ``designs-{task}``)."""
        return self.study_name or _portable(f"designs-{self.task}")

    def paper_defaults(self, space: Sequence[Param]) -> list[dict[str, Any]]:
        """One enqueued trial per design: its paper configuration."""
        out = []
        for fw in self.frameworks:
            sub = [_unprefixed(p, fw) for p in space if p.name.startswith(fw + ".")]
            out.append({DESIGN: fw} | {f"{fw}.{k}": v for k, v in default_params(fw, sub).items()})
        return out

    def identity(self) -> dict[str, Any]:
        """What a resumed study must match."""
        return super().identity() | {
            "frameworks": list(self.frameworks),
            "compile": self.compile,
            "cost": self.cost,
            "--preset": dict(self.presets),
        }

    def fixed_for(self, framework: str) -> tuple[dict[str, Any], str | None]:
        """(knobs held outside the space, preset) of design ``framework``'s trials."""
        mine = {k[len(framework) + 1 :]: v for k, v in self.knobs.items() if k.startswith(framework + ".")}
        return mine, self.presets.get(framework)


def _unprefixed(p: Param, fw: str) -> Param:
    """Design ``fw``'s parameter ``p`` under its own name, its condition too (``fw.x`` -> ``x``)."""
    return p.renamed(lambda n: None if n == DESIGN else n[len(fw) + 1 :] if n.startswith(fw + ".") else n)


def design_space(config: DesignStudyConfig) -> list[Param]:
    """``design`` first, then each design's parameters, prefixed and conditional on it.

    ``config.space`` narrows ``{design}.{name}`` for one design, or ``{name}`` for every design that
    has it; ``design=a,b`` narrows the designs themselves.
    """
    if config.cost not in UNITS:
        raise ConfigError(f"unknown cost unit {config.cost!r}: use {', '.join(UNITS)}")
    overrides = dict(config.space)
    designs = Choice(DESIGN, *config.frameworks)
    if DESIGN in overrides:
        designs = designs.narrowed(overrides.pop(DESIGN))
    space, used = [designs], set()
    models = list(dict.fromkeys(config.models))
    for fw in config.frameworks:
        names = {p.name for p in SPACES[fw]} | (
            {MODEL + r for r in get_framework(fw).roles} if len(models) > 1 else set()
        )
        mine = {
            k if k in names else k.partition(".")[2]: v
            for k, v in overrides.items()
            if k in names or k.startswith(fw + ".")
        }
        used |= {k for k in overrides if k in names or k.startswith(fw + ".")}
        sub = build_space(
            fw, overrides=mine, models=models, temperatures=config.search_temperature, panels=config.panels
        )
        space += [p.renamed(lambda n, fw=fw: f"{fw}.{n}", parent=(DESIGN, (fw,))) for p in sub]
    unknown = sorted(set(overrides) - used)
    if unknown:
        raise ConfigError(f"--space names {', '.join(unknown)}, which no design of {config.frameworks} has")
    return space


def trial_design(params: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """(design, its own parameters without the prefix) from a trial's parameters."""
    fw = str(params[DESIGN])
    return fw, {k[len(fw) + 1 :]: v for k, v in params.items() if k.startswith(fw + ".")}


def _with_panels(model_objects: Mapping[str, Any], models: Sequence[str]) -> dict[str, Any]:
    """``model_objects`` plus the mixed panel of the given ready LMs, under its comma name."""
    out = dict(model_objects)
    if len(models) > 1 and all(m in out for m in models):
        out[",".join(models)] = Panel(out[m] for m in models)
    return out


def compile_in_trial(program: Any, config: DesignStudyConfig, train: Sequence[dspy.Example]) -> Any:
    """``program`` compiled with ``config.compile`` on ``train`` (no dev scoring: the trial scores)."""
    from courtroom.models._adapter import ADAPTER
    from courtroom.optimize.compile import keep_prepared_demos
    from courtroom.optimize.optimizers import Context, check_compatible, get_optimizer, optimizer_settings
    from courtroom.reporting.logs import optimizer_output

    opt = get_optimizer(str(config.compile))
    chosen = optimizer_settings(opt, config.compile_settings)
    if opt.name == "mipro" and chosen.get("minibatch") is None and chosen.get("minibatch_size") is None:
        chosen["minibatch"] = False  # MIPROv2's minibatch of 35 exceeds the small train splits of a trial
    check_compatible(opt, program)
    if len(train) < opt.min_train(chosen):
        raise ConfigError(f"{opt.name} needs {opt.min_train(chosen)} training examples, got {len(train)}")
    roles = type(program).roles
    helper = program.lms.for_role("judge" if "judge" in roles else roles[0])
    ctx = Context(chosen, program, helper, config.concurrency, config.seed)
    label = f"{type(program).name} + {opt.name}"
    with dspy.context(lm=helper, adapter=ADAPTER), optimizer_output(label=label):
        assert opt.run is not None
        return keep_prepared_demos(program, opt.run(ctx, program, list(train)))


def build_trial_program(
    config: DesignStudyConfig,
    params: Mapping[str, Any],
    base: RoleLMs,
    train: Sequence[dspy.Example],
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """The trial's program: built, prepared on ``train`` and, with ``config.compile``, compiled."""
    fw, own = trial_design(params)
    objects = _with_panels(model_objects, list(dict.fromkeys(config.models)))
    program = trial_program(replace(config, framework=fw), own, base, labels, positions, objects)
    program.prepare(list(train))
    return compile_in_trial(program, config, train) if config.compile else program


def design_builder(
    config: DesignStudyConfig,
    base: RoleLMs,
    train: Sequence[dspy.Example],
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """A study across designs: a trial draws its design, then that design's knobs (an invalid one is pruned)."""
    import optuna

    def build(trial: Any, params: Mapping[str, Any]) -> Any:
        fw, own = trial_design(params)
        trial.set_user_attr("design", fw)
        trial.set_user_attr("config", own)
        if not own:  # a design without searched knobs is one point: score it once
            from optuna.trial import TrialState

            done = [
                t.number
                for t in trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
                if t.user_attrs.get("design") == fw
            ]
            if done:
                trial.set_user_attr("duplicate_of", done[0])
                raise optuna.TrialPruned(f"{fw} has no knobs: its one point is trial {done[0]}")
        try:
            return build_trial_program(config, params, base, train, labels, positions, model_objects)
        except ConfigError as exc:
            trial.set_user_attr("invalid", str(exc))
            raise optuna.TrialPruned(f"invalid configuration: {exc}") from exc

    return build


def run_design_study(
    config: DesignStudyConfig,
    *,
    lms: RoleLMs | None = None,
    model_objects: Mapping[str, Any] | None = None,
    trainset: Sequence[dspy.Example] | None = None,
    devset: Sequence[dspy.Example] | None = None,
    labels: Sequence[str] | None = None,
    positions: Sequence[str] | None = None,
    callbacks: Sequence[Any] = (),
    budget: Any = None,
    reserve: Sequence[dspy.Example] | None = None,
) -> StudyOutcome:
    """Create or resume the study over ``config.frameworks`` and run ``config.trials`` trials here.

    Arguments as :func:`courtroom.optimize.study.run_study`. With a ``budget``
    (:class:`courtroom.cost.budget.Budget`) each trial is bounded by the dearest design's most
    expensive point, and the study stops starting trials at the budget (``BudgetExhausted``).
    """
    from optuna.trial import TrialState

    from courtroom.models.cache import configure_cache
    from courtroom.optimize.study._asked import noting

    config.frameworks = parse_frameworks(config.frameworks)
    if config.trials < 0 or config.dev < 1 or config.workers < 1:
        raise ConfigError("--trials must be >= 0, --dev-limit >= 1 and --workers >= 1")
    space = design_space(config)
    need = capping.checked(config, budget, _dearest)  # --race-calls: refused here where it cannot act
    with _storage.creation_lock(config.storage):  # workers may start together on a fresh file
        study = create_study(config, space)
    if config.trials == 0:
        return StudyOutcome(study, config, space)
    if reserve is None and devset is not None:
        reserve = []  # a caller's own dev cases: no reserve unless given (the task's dev split is another)
    trainset, devset, labels, positions = study_data(config, trainset, devset, labels, positions)
    configure_cache()
    if lms is None:
        roles = {r for fw in config.frameworks for r in get_framework(fw).roles}
        default = config.models[0] if config.models else None
        lms = resolve_roles(
            default,
            config.roles,
            valid_roles=roles,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            api_base=config.api_base,
            timeout=config.timeout,
            n_sampling=config.n_sampling,
            prompt_layout=config.prompt_layout,
        )
        check_keys(lms)
    _workers.fail_stale_trials(study)
    train, objects = list(trainset or []), dict(model_objects or {})
    objective = make_objective(
        config, space, lms, train, list(devset), labels, positions, objects,
        build=noting(design_builder(config, lms, train, labels, positions, objects)),
    )  # fmt: skip
    if budget is not None:
        from courtroom.cost.study_budget import guard_objective

        if config.compile and not compile_bounded(config):
            raise ConfigError(
                f"--compile {config.compile} decides its own number of calls, so a trial has no bound: compile with "
                "bootstrap, bootstrap-rs, labeled or knn, or drop --max-calls/--max-cost"
            )
        objective = guard_objective(objective, budget, config, space, unit=design_trial_estimate(config, space))
    cap = capping.race_cap(config, study, need)
    if cap is not None:
        objective = capping.capped_objective(objective, cap)

    def rounds(n_trials: int, first: bool) -> None:
        # Enqueued trials (the paper defaults) run one at a time first: threads could pop one twice.
        if first:
            queued = len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,))) if config.workers > 1 else 0
            _workers.optimize_owed(study, objective, config, min(queued, n_trials), 1, callbacks, (TrialFailed,))
        else:
            _workers.optimize_owed(study, objective, config, n_trials, config.workers, callbacks, (TrialFailed,))

    # One bound for the process: the trials that run at once share --concurrency.
    with bounded_requests(config.concurrency):
        _workers.until_settled(  # then a dead worker's share, once the others' trials have ended
            study,
            lambda: run_distinct(study, rounds, config.trials, space),
            again=lambda: budget is None or not budget.stopped,
        )
        capping.say_if_reached(cap, study, config)
        extend.after_trials(
            study, config, dev=list(devset), reserve=reserve, budget=budget, cap=cap,
            build=lambda t: rebuilt_design(t, config, lms, train, list(labels), list(positions or []) or None, objects),
        )  # fmt: skip
    if budget is not None and budget.stopped:
        from courtroom.cost.study_budget import stopped_study

        raise stopped_study(budget, config, budget.admitted)
    names = {role: saved_name(lms.for_role(role)) for role in sorted(roles_of(config))}
    return StudyOutcome(study, config, space, names, saved_name(lms[DEFAULT]) if DEFAULT in lms else None)


def roles_of(config: DesignStudyConfig) -> set[str]:
    """Every role of the designs searched."""
    return {r for fw in config.frameworks for r in get_framework(fw).roles}


def compile_bounded(config: DesignStudyConfig) -> bool:
    """Whether a trial's compile has a dry-run bound (its optimizer's program runs are known)."""
    from courtroom.cost.dry_run import PROGRAM_RUNS

    return config.compile in PROGRAM_RUNS


def design_estimates(config: DesignStudyConfig, space: Sequence[Param] | None = None) -> dict[str, Any]:
    """Design -> the dry run of one trial at its most expensive point (no request sent).

    A trial's compile on the train split is included when its optimizer has a bound
    (:func:`compile_bounded`); otherwise the estimate covers the dev scoring only.
    """
    from courtroom.cost.dry_run import added, compile_runs, dearest_point
    from courtroom.cost.study_budget import study_run_config
    from courtroom.optimize.optimizers import get_optimizer, optimizer_settings

    config.frameworks = parse_frameworks(config.frameworks)
    space = list(space or design_space(config))
    compiles = bool(config.compile) and compile_bounded(config)
    settings = optimizer_settings(get_optimizer(str(config.compile)), config.compile_settings) if compiles else {}
    out = {}
    for fw in config.frameworks:
        own = [_unprefixed(p, fw) for p in space if p.name.startswith(fw + ".")]
        run_config = study_run_config(config, fw)
        point, est = dearest_point(run_config, own, prices=config.prices)
        est = replace(est, calls_exact=False)
        if compiles:
            worst = replace(run_config, knobs={**run_config.knobs, **point})
            runs = compile_runs(worst, str(config.compile), settings, config.train, prices=config.prices)
            est = added(est, runs) if runs is not None else est
        out[fw] = est
    return out


def design_trial_estimate(config: DesignStudyConfig, space: Sequence[Param]) -> Any:
    """The dearest design's one-trial estimate: a bound on any trial (calls first, then dollars)."""
    return max(design_estimates(config, space).values(), key=lambda e: (e.calls, e.cost or 0.0))


def rebuilt_design(
    trial: Any,
    config: Any,
    base: Any,
    train: list[Any],
    labels: list[str],
    positions: list[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """The program ``trial`` of a study across designs scored: its design and knobs, prepared on ``train``."""
    from courtroom.optimize.study._attrs import configuration

    own = configuration(trial)
    design = trial.user_attrs.get("design") or trial.params[DESIGN]
    params = {DESIGN: design} | {f"{design}.{k}": v for k, v in own.items()}
    return build_trial_program(config, params, base, train, labels, positions, dict(model_objects))


def _dearest(config: Any) -> Any:
    """One trial at the dearest design's dearest point (the race cap's unit)."""
    return design_trial_estimate(config, design_space(config))
