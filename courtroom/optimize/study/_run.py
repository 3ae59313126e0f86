"""Optuna studies over a framework's structural knobs (SPEC §6).

One trial = one configuration evaluated on the same dev examples. The paper's default is
enqueued as trial 0 when the study is created. Single-objective studies (accuracy or macro-F1)
use TPE and prune on partial evaluations (the running score is reported after each chunk of
dev examples); with ``cost_objective`` the second objective is LM calls per example (minimised,
independent of the cache) and NSGA-II searches the Pareto front.

Trials reuse work through the shared LM cache: the same role call on the same case is one
cache entry whatever the trial. Each trial records the calls its program made (``calls``), the
calls that reached a model (``sent``) and those served from the cache (``cached``).

Several workers: ``workers`` threads in this process (``n_jobs``), or several processes or
machines that run the same study on a shared storage (each runs ``trials`` trials). The study is
created once (:func:`create_study`) before any trial starts.

The study's settings are :class:`StudyConfig` (:mod:`courtroom.optimize.study._config`); what one
trial does (build, score, record) is :mod:`courtroom.optimize.study._trials`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy

from courtroom import _stop
from courtroom.cost import race_cap as capping
from courtroom.errors import ConfigError
from courtroom.models._concurrency import bounded_requests
from courtroom.models.lms import DEFAULT, RoleLMs, check_keys, resolve_roles, saved_name
from courtroom.optimize.study import _storage, _trials, _workers, extend, race
from courtroom.optimize.study._asked import noting

# StudyConfig is imported from here by scripts, tests, the bench and the docs.
from courtroom.optimize.study._config import OBJECTIVES, StudyConfig, _optuna
from courtroom.optimize.study._trials import TrialFailed, make_objective, races, rebuilt
from courtroom.optimize.study.spaces import Param, build_space
from courtroom.optimize.study.tied import PREFER_ATTR
from courtroom.programs import get_framework


@dataclass
class StudyOutcome:
    """A finished (or resumed and extended) study (``courtroom.study``, ``courtroom study``)."""

    study: Any
    """The ``optuna.Study``: its trials, ``best_trial``, ``best_trials``, ``trials_dataframe()``."""
    config: StudyConfig
    """What the study searched and how (framework or designs, task, objective, sizes)."""
    space: list[Param]
    """The searched parameters."""
    models: dict[str, str] = field(default_factory=dict)
    """Role -> model name the trials ran on before any searched model choice (no keys, no URLs)."""
    lm: str | None = None
    """The default model's name."""
    table: Any = None
    """The trials as a DataFrame (set by :func:`courtroom.study`)."""
    report_dir: Path | None = None
    """The report folder, once written."""
    program_path: Path | None = None
    """The best program, saved by ``export_best`` in a study that compiles each trial."""
    test: dict[int, dict[str, Any]] = field(default_factory=dict)
    """Trial number -> its test-split scores beside its dev score (``--test-limit``,
    :mod:`courtroom.optimize.study.holdout`)."""

    @property
    def best(self) -> list[Any]:
        """The best trial (single objective) or the Pareto front (with cost)."""
        from courtroom.optimize.study._dedupe import chosen

        return chosen(self.study)


def create_study(config: StudyConfig, space: Sequence[Param] | None = None) -> Any:
    """Create (or load) the study; a new one gets its identity and trial 0 (the paper's default).

    Call it once before starting workers: concurrent creation of one SQLite study crashes.
    """
    optuna = _optuna()
    if config.objective not in OBJECTIVES:
        raise ConfigError(f"unknown objective {config.objective!r}: use {' or '.join(OBJECTIVES)}")
    space = (
        list(space)
        if space is not None
        else build_space(
            config.framework,
            overrides=config.space,
            models=config.models,
            temperatures=config.search_temperature,
        )
    )
    storage = _storage.open_storage(config.storage)
    directions = ["maximize", "minimize"] if config.cost_objective else ["maximize"]
    sampler = (
        optuna.samplers.NSGAIISampler(seed=config.seed)
        if config.cost_objective
        else optuna.samplers.TPESampler(seed=config.seed, n_startup_trials=min(10, max(config.trials // 3, 1)))
    )
    pruner = (
        optuna.pruners.NopPruner()
        if not config.prune or config.cost_objective
        else race.RacePruner(looks=max(1, config.chunks - 1), level=race.level(config.trials))
        if races(config)
        else optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
    )
    try:
        study = optuna.create_study(
            storage=storage,
            study_name=config.name,
            directions=directions,
            sampler=sampler,
            pruner=pruner,
            load_if_exists=True,
        )
    except ValueError as exc:  # e.g. a study with other directions
        raise ConfigError(
            f"study {config.name!r} exists with a different setup ({exc}); pick another --study-name"
        ) from exc
    if config.prefer is not None:  # which of the tied configurations is exported (not part of its identity)
        study.set_user_attr(PREFER_ATTR, config.prefer)
    saved = study.user_attrs.get("courtroom")
    if saved is None:
        study.set_user_attr(
            "courtroom", config.identity() | {"space": {p.name: p.describe() for p in space}, "spec": config.spec}
        )
        for params in config.paper_defaults(space):
            study.enqueue_trial(params, user_attrs={"paper_default": True})
    else:
        mismatch = {k: (saved.get(k), v) for k, v in config.identity().items() if k in saved and saved[k] != v}
        if "--dataset" in mismatch:  # the task's name follows from the dataset
            mismatch.pop("task", None)
        if mismatch:
            from courtroom.spec import typed

            got = ", ".join(f"{typed(k, old)} (you asked {typed(k, new)})" for k, (old, new) in mismatch.items())
            raise ConfigError(
                f"study {config.name!r} already exists with {got}: pass the same options to continue it, "
                "or use another --study-name"
            )
    return study


def unclaimed_name(config: StudyConfig) -> str:
    """The study name for ``config`` when none was given (its default, unless taken by another spec).

    When a study of the default name exists with another spec, this one is ``{default}-{hash}``
    (the same for every worker with this spec).

    Call it under the storage's creation lock (:func:`_storage.creation_lock`).
    """
    import hashlib
    import json

    optuna = _optuna()
    base = config.name
    storage = _storage.open_storage(config.storage)
    try:
        saved = optuna.load_study(study_name=base, storage=storage).user_attrs.get("courtroom")
    except KeyError:  # no such study yet
        return base
    if saved is None or all(saved.get(k, v) == v for k, v in config.identity().items()):
        return base
    digest = hashlib.sha1(json.dumps(config.identity(), sort_keys=True).encode()).hexdigest()[:6]
    return f"{base}-{digest}"


def study_data(
    config: StudyConfig,
    trainset: Sequence[dspy.Example] | None = None,
    devset: Sequence[dspy.Example] | None = None,
    labels: Sequence[str] | None = None,
    positions: Sequence[str] | None = None,
) -> tuple[Sequence[dspy.Example] | None, Sequence[dspy.Example], Sequence[str], Sequence[str] | None]:
    """(train, dev, labels, positions): the given ones, else the task's splits (``config.train``/``dev``)."""
    if devset is None or labels is None:
        from courtroom.data.tasks import load_sized

        where: dict[str, Any] = {"data": config.data, "seed": config.seed, "dataset": config.dataset,
                                 "splits": config.splits}  # fmt: skip
        dv = load_sized(config.task, "dev", config.dev, **where)
        devset, labels = dv.examples, list(dv.task.labels)
        positions = list(dv.task.positions) if dv.task.positions else None
        if trainset is None:
            trainset = load_sized(config.task, "train", config.train, **where).examples
    return trainset, devset, labels, positions


def run_study(
    config: StudyConfig,
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
    """Create or resume the study and run ``config.trials`` trials in this process.

    ``callbacks`` are Optuna's ``(study, frozen_trial)`` callbacks, called after each trial.

    ``lms`` and ``model_objects`` (model name -> ready LM, for per-role model choices) let a
    script or a test pass LM objects; otherwise models are built from ``config.models`` and
    ``config.roles``. Data: the task's train/dev splits, or ``trainset``/``devset``/``labels``.
    """
    from courtroom.models.cache import configure_cache

    cls = get_framework(config.framework)
    if config.trials < 0 or config.dev < 1 or config.workers < 1:
        raise ConfigError("--trials must be >= 0, --dev-limit >= 1 and --workers >= 1")
    space = build_space(
        config.framework, overrides=config.space, models=config.models, temperatures=config.search_temperature
    )
    need = capping.checked(config, budget)  # --race-calls: refused here where it cannot act
    with _storage.creation_lock(config.storage):
        study = create_study(config, space)
    if config.trials == 0:
        return StudyOutcome(study, config, space)
    if reserve is None and devset is not None:
        reserve = []  # a caller's own dev cases: no reserve unless given (the task's dev split is another)
    trainset, devset, labels, positions = study_data(config, trainset, devset, labels, positions)
    configure_cache()
    if lms is None:
        default = config.models[0] if config.models else None
        lms = resolve_roles(
            default,
            config.roles,
            valid_roles=cls.roles,
            temperature=config.temperature,
            max_tokens=config.max_tokens,
            api_base=config.api_base,
            timeout=config.timeout,
            n_sampling=config.n_sampling,
            prompt_layout=config.prompt_layout,
        )
        check_keys(lms)
    models = {role: saved_name(lms.for_role(role)) for role in cls.roles}
    default = saved_name(lms[DEFAULT]) if DEFAULT in lms else None
    _workers.fail_stale_trials(study)
    train, objects = list(trainset or []), dict(model_objects or {})
    build = noting(_trials.framework_builder(config, lms, train, labels, positions, objects))  # panels note whom
    objective = make_objective(config, space, lms, train, list(devset), labels, positions, objects, build=build)
    if budget is not None:
        from courtroom.cost.study_budget import guard_objective

        objective = guard_objective(objective, budget, config, space)
    cap = capping.race_cap(config, study, need)
    if cap is not None:
        objective = capping.capped_objective(objective, cap)
    where = _storage.redact(config.storage or _storage.DEFAULT_STORAGE)
    again = _stop.command_line() or "the same `courtroom study` command (same --storage and --study-name)"
    with _stop.saving_to(where, resume=again):
        _optimize(study, objective, config, callbacks, space, budget)
        capping.say_if_reached(cap, study, config)
        with bounded_requests(config.concurrency):
            extend.after_trials(
                study, config, dev=list(devset), reserve=reserve, budget=budget, cap=cap,
                build=lambda t: rebuilt(t, config, lms, train, list(labels), list(positions or []) or None, objects),
            )  # fmt: skip
    if budget is not None and budget.stopped:
        from courtroom.cost.study_budget import stopped_study

        raise stopped_study(budget, config, budget.admitted)
    return StudyOutcome(study, config, space, models, default)


def _optimize(
    study: Any,
    objective: Any,
    config: StudyConfig,
    callbacks: Sequence[Any],
    space: Sequence[Param],
    budget: Any = None,
) -> None:
    """Run this process's trials: ``config.trials`` that ran, a repeated configuration not counted.

    Two workers (threads, or processes on one SQLite file) can pop the same enqueued trial and
    tell it twice ("Cannot tell a COMPLETE trial"), so queued trials (the paper default) run one
    at a time, under the storage's lock, before the workers fan out. A sampled configuration the
    study already holds takes its stored value (:func:`courtroom.optimize.study._dedupe.run_distinct`).
    Then it waits for the other workers' running trials, and runs a dead worker's share
    (:func:`courtroom.optimize.study._workers.until_settled`), unless the budget stopped it.
    """
    from optuna.trial import TrialState

    from courtroom.optimize.study import _dedupe

    catch = (TrialFailed,)

    def rounds(n_trials: int, first: bool) -> None:
        if first:
            with _storage.creation_lock(config.storage):
                queued = len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
                if min(queued, n_trials):
                    _workers.optimize_owed(study, objective, config, min(queued, n_trials), 1, callbacks, catch)
            return
        _workers.optimize_owed(study, objective, config, n_trials, config.workers, callbacks, catch)

    # One bound for the process: the trials that run at once share --concurrency.
    with bounded_requests(config.concurrency):
        _workers.until_settled(
            study,
            lambda: _dedupe.run_distinct(study, rounds, config.trials, space),
            again=lambda: budget is None or not budget.stopped,
        )


def study_config_dict(config: StudyConfig) -> dict[str, Any]:
    """The config as JSON, with the storage URL's password redacted."""
    out = asdict(config)
    out["storage"] = _storage.redact(out.get("storage") or _storage.DEFAULT_STORAGE)  # None: the default file
    out.pop("api_base", None)
    return out


def report_dir(config: StudyConfig, out: str | Path | None) -> Path:
    """Where the study report goes (default ``studies/{name}``)."""
    return Path(out) if out else Path("studies") / config.name
