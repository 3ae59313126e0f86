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
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import dspy

from courtroom import _stop
from courtroom.errors import ConfigError, CourtroomError
from courtroom.eval.harness import ExampleResult, evaluate, total_usage
from courtroom.eval.metrics import score
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR, TooManyFailures, status
from courtroom.models._concurrency import bounded_requests
from courtroom.models.lms import DEFAULT, LMSpec, RoleLMs, check_keys, resolve_roles, saved_name
from courtroom.models.usage import metered
from courtroom.optimize import _storage
from courtroom.optimize.spaces import Param, build_space, default_params, sample, split_params
from courtroom.programs import build_program, get_framework
from courtroom.programs.presets import sampling_temperatures

OBJECTIVES = {"accuracy": "accuracy", "f1": "macro_f1"}


class TrialFailed(Exception):
    """A trial raised: it is recorded as FAIL with its error (``user_attrs["error"]``) and the study goes on."""


@dataclass
class StudyConfig:
    """Everything that defines a study (stored on the study as user attributes)."""

    framework: str
    task: str = "boolean_expressions"
    trials: int = 20
    dev: int = 20
    train: int = 20
    data: str = "auto"
    seed: int = 0
    storage: str | None = None
    study_name: str | None = None
    workers: int = 1
    objective: str = "accuracy"
    cost_objective: bool = False
    space: dict[str, str] = field(default_factory=dict)
    """Search-space overrides: name -> ``LOW:HIGH`` or ``a,b``."""
    knobs: dict[str, Any] = field(default_factory=dict)
    """Knobs every trial runs with that the space does not search (a ``--preset``'s and ``--set``'s)."""
    preset: str | None = None
    """The paper preset the study runs (its knobs are in ``space`` and ``knobs``; its role temperatures apply)."""
    models: list[str] = field(default_factory=list)
    """Model names to choose from per role (several: a per-role model choice is searched)."""
    roles: dict[str, str] = field(default_factory=dict)
    search_temperature: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    timeout: float | None = None
    """Seconds per LM request (None: the model's default)."""
    concurrency: int = 4
    chunks: int = 4
    """Partial evaluations per trial (pruning steps)."""
    prune: bool = True
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR
    """A trial whose failed examples exceed this fraction stops the study (:class:`TooManyFailures`)."""
    dataset: dict[str, Any] | None = None
    """:func:`courtroom.data.tasks.custom_task` arguments for the user's own dataset."""
    splits: dict[str, Any] | None = None
    """Split sizes and splits given as their own files (:func:`courtroom.data.tasks.load_splits`)."""
    spec: dict[str, Any] | None = None
    """The experiment spec the study came from, as recorded on it."""

    @property
    def name(self) -> str:
        """The study name (default ``{framework}-{task}``, in characters a folder name may hold)."""
        return self.study_name or _portable(f"{self.framework}-{self.task}")

    def paper_defaults(self, space: Sequence[Param]) -> list[dict[str, Any]]:
        """The trials enqueued when the study is created: the paper's configuration."""
        return [default_params(self.framework, space)]

    def identity(self) -> dict[str, Any]:
        """What a continued study must match: everything that changes a trial's answers or score."""
        return _jsonable(
            {
                "framework": self.framework,
                "task": self.task,
                "objective": self.objective,
                "cost_objective": self.cost_objective,
                "--data": self.data,
                "--dataset": self.dataset,
                "--split-sizes": self.splits,
                "--seed": self.seed,
                "--train-limit": self.train,
                "--dev-limit": self.dev,
                "--lm": list(self.models),
                "--role": dict(self.roles),
                "--temperature": self.temperature,
                "--max-tokens": self.max_tokens,
                "--search-temperature": self.search_temperature,
                "--space": dict(self.space),
                "--set": dict(self.knobs),
                "--preset": self.preset,
            }
        )


@dataclass
class StudyOutcome:
    """A finished (or resumed and extended) study."""

    study: Any
    config: StudyConfig
    space: list[Param]
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
    :mod:`courtroom.optimize.holdout`)."""

    @property
    def best(self) -> list[Any]:
        """The best trial (single objective) or the Pareto front (with cost)."""
        return list(self.study.best_trials) if self.config.cost_objective else [self.study.best_trial]


def _optuna() -> Any:
    try:
        import optuna
    except ImportError as exc:  # pragma: no cover - a declared dependency
        raise ConfigError("studies need optuna: pip install 'optuna>=5,<6'") from exc
    # ERROR: a failed trial is shown (and counted) by the study command; Optuna would add a traceback.
    from courtroom.reporting.logs import optuna_level

    optuna.logging.set_verbosity(optuna_level())
    return optuna


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
        optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1)
        if config.prune and not config.cost_objective
        else optuna.pruners.NopPruner()
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
    saved = study.user_attrs.get("courtroom")
    if saved is None:
        study.set_user_attr(
            "courtroom", config.identity() | {"space": {p.name: p.describe() for p in space}, "spec": config.spec}
        )
        for params in config.paper_defaults(space):
            study.enqueue_trial(params, user_attrs={"paper_default": True})
    else:
        mismatch = {k: (saved.get(k), v) for k, v in config.identity().items() if k in saved and saved[k] != v}
        if mismatch:
            got = ", ".join(f"{k}={old!r} (you asked {new!r})" for k, (old, new) in mismatch.items())
            raise ConfigError(
                f"study {config.name!r} already exists with {got}: pass the same options to continue it, "
                "or use another --study-name"
            )
    return study


def _portable(name: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9._-]+", "-", name).strip("-")


def _jsonable(value: Any) -> Any:
    import json

    return json.loads(json.dumps(value, default=str))


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


def _trial_lms(
    base: RoleLMs,
    config: StudyConfig,
    models: Mapping[str, str],
    temps: Mapping[str, float],
    choices: Mapping[str, Any],
) -> RoleLMs:
    if not models and not temps:
        return base
    lms = RoleLMs(base)
    for role in set(models) | set(temps):
        value: Any = choices.get(models[role], models[role]) if role in models else base.serving(role)
        if role in temps:
            if isinstance(value, str):
                value = LMSpec(
                    value,
                    temperature=temps[role],
                    max_tokens=config.max_tokens,
                    api_base=config.api_base,
                    timeout=config.timeout,
                )
            else:
                value = value.copy(temperature=temps[role])
        lms[role] = (
            resolve_roles(
                value, temperature=config.temperature, max_tokens=config.max_tokens, api_base=config.api_base
            ).serving(role)
            if isinstance(value, str | LMSpec)
            else value
        )
    return lms


def _value(results: Sequence[ExampleResult], labels: Sequence[str], objective: str) -> float:
    s = score([r.gold for r in results], [r.prediction for r in results], labels)
    return float(s[OBJECTIVES[objective]])


def trial_program(
    config: StudyConfig,
    params: Mapping[str, Any],
    base: RoleLMs,
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """The program of a one-framework study's trial with ``params`` (not yet prepared on train).

    Its knobs are the study's fixed ones (``config.knobs``) under the searched ones; a preset's
    role temperatures apply, as in ``courtroom run --preset``.
    """
    knobs, models, temps = split_params(dict(params))
    program = build_program(
        config.framework,
        labels,
        positions,
        knobs=config.knobs | knobs,
        lms=_trial_lms(base, config, models, temps, model_objects),
    )
    if config.preset:
        program.temperatures = sampling_temperatures(type(program), config.preset)
    return program


def framework_builder(
    config: StudyConfig,
    base: RoleLMs,
    train: Sequence[dspy.Example],
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """A study of one framework: a trial's parameters are its knobs (and searched models, temperatures)."""

    def build(trial: Any, params: Mapping[str, Any]) -> Any:
        trial.set_user_attr("config", dict(params))
        try:
            program = trial_program(config, params, base, labels, positions, model_objects)
            program.prepare(list(train))
        except ConfigError as exc:  # the space produced a configuration the framework refuses
            raise ConfigError(f"trial {trial.number} {dict(params)}: {exc}") from exc
        return program

    return build


def make_objective(
    config: StudyConfig,
    space: Sequence[Param],
    base: RoleLMs,
    train: Sequence[dspy.Example],
    dev: Sequence[dspy.Example],
    labels: Sequence[str],
    positions: Sequence[str] | None,
    model_objects: Mapping[str, Any],
    build: Any = None,
) -> Any:
    """The one Optuna objective of every study: build the trial's program, score it on dev in chunks.

    ``build(trial, params) -> program`` makes the trial's program (default: one framework's,
    :func:`framework_builder`; a study across designs passes its own). Each trial records its usage;
    a trial whose failed examples exceed ``config.fail_on_error`` stops the study
    (:class:`TooManyFailures`); any other error is recorded on the trial and the study goes on.
    The second objective (``cost_objective``) is calls per example, or for a study across designs
    the cost in its unit (:func:`trial_cost`).
    """
    optuna = _optuna()
    single = not config.cost_objective
    size = max(1, -(-len(dev) // max(1, config.chunks)))
    build = build or framework_builder(config, base, train, labels, positions, model_objects)

    def objective(trial: Any) -> Any:
        try:
            return run_trial(trial)
        except (optuna.TrialPruned, CourtroomError) as exc:
            if isinstance(exc, CourtroomError):  # a configuration error or too many failures: stop
                trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the trial (shown and counted), the study goes on
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
            trial.set_user_attr("error", error)
            raise TrialFailed(error) from exc

    def run_trial(trial: Any) -> Any:
        from courtroom.cost.tally import TokenTally, tallied

        trial.set_user_attr("worker", _storage.WORKER)
        trial.set_user_attr("heartbeat", time.time())
        params = sample(space, trial)
        start = time.perf_counter()
        prep_tally, tally = TokenTally(), TokenTally()
        with metered() as prep, tallied(prep_tally):
            program = build(trial, params)
        results: list[ExampleResult] = []
        with tallied(tally):
            for i in range(0, len(dev), size):
                results += evaluate(program, dev[i : i + size], concurrency=config.concurrency)
                trial.set_user_attr("heartbeat", time.time())
                if single and config.prune and len(results) < len(dev):
                    trial.report(_value(results, labels, config.objective), step=len(results))
                    if trial.should_prune():
                        _record(trial, results, labels, prep.usage, start)
                        raise optuna.TrialPruned(f"pruned after {len(results)} of {len(dev)} examples")
        _record(trial, results, labels, prep.usage, start)
        errors = [r.error for r in results if r.prediction is None]
        verdict = status(len(errors), len(results), config.fail_on_error, errors)
        if verdict["status"] == "failed":
            raise TooManyFailures(f"trial {trial.number}: {verdict['status_reason']}")
        cost = trial.user_attrs["calls_per_example"]
        if getattr(config, "cost", None) is not None:  # a study across designs: cost in its unit
            cost = trial_cost(trial, config, results, prep_tally, tally)
        value = _value(results, labels, config.objective)
        return (value, cost) if config.cost_objective else value

    return objective


def trial_cost(trial: Any, config: Any, results: Sequence[ExampleResult], prep_tally: Any, tally: Any) -> float:
    """Cost per example in ``config.cost`` (calls, tokens or dollars), compile included; recorded on the trial."""
    from courtroom.cost.tally import TokenTally

    n = max(len(results), 1)
    compile_calls = sum(row[0] for row in prep_tally.by_model.values())
    calls = total_usage(results).calls + compile_calls
    trial.set_user_attr("compile_calls", compile_calls)
    trial.set_user_attr("tokens_per_example", round((tally.tokens + prep_tally.tokens) / n, 2))
    merged = TokenTally()
    for t in (tally, prep_tally):
        for m, row in t.by_model.items():
            merged.by_model[m] = [a + b for a, b in zip(merged.by_model.get(m, [0, 0, 0]), row, strict=True)]
    if config.cost == "calls":
        total = float(calls)
    elif config.cost == "tokens":
        total = float(merged.tokens)
    else:
        prices = {m: (float(p[0]), float(p[1])) for m, p in (config.prices or {}).items()}
        dollars = merged.dollars(prices)
        if dollars is None:
            raise ConfigError(
                f"no price for {', '.join(merged.by_model)}: pass --prices FILE or use --cost-unit tokens"
            )
        total = dollars
    cost = total / n
    trial.set_user_attr("cost_per_example", round(cost, 8))
    trial.set_user_attr("cost_unit", config.cost)
    return cost


def _record(trial: Any, results: Sequence[ExampleResult], labels: Sequence[str], prep: Any, start: float) -> None:
    usage = total_usage(results)
    s = score([r.gold for r in results], [r.prediction for r in results], labels)
    calls, sent = usage.calls + prep.calls, usage.sent + prep.sent
    trial.set_user_attr("examples", len(results))
    trial.set_user_attr("accuracy", s["accuracy"])
    trial.set_user_attr("macro_f1", s["macro_f1"])
    trial.set_user_attr("failures", s["failures"])
    trial.set_user_attr("calls", calls)
    trial.set_user_attr("sent", sent)
    trial.set_user_attr("cached", usage.cached + prep.cached)
    trial.set_user_attr("calls_per_example", round(usage.calls / max(len(results), 1), 4))
    trial.set_user_attr(
        "tokens", usage.prompt_tokens + usage.completion_tokens + prep.prompt_tokens + prep.completion_tokens
    )
    trial.set_user_attr("seconds", round(time.perf_counter() - start, 3))


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
    with _storage.creation_lock(config.storage):
        study = create_study(config, space)
    if config.trials == 0:
        return StudyOutcome(study, config, space)
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
        )
        check_keys(lms)
    models = {role: saved_name(lms.for_role(role)) for role in cls.roles}
    default = saved_name(lms[DEFAULT]) if DEFAULT in lms else None
    _storage.fail_stale_trials(study)
    objective = make_objective(
        config, space, lms, list(trainset or []), list(devset), labels, positions, dict(model_objects or {})
    )
    if budget is not None:
        from courtroom.cost.budget import guard_objective

        objective = guard_objective(objective, budget, config, space)
    where = _storage.redact(config.storage or _storage.DEFAULT_STORAGE)
    with _stop.saving_to(where, resume="the same `courtroom study` command (same --storage and --study-name)"):
        _optimize(study, objective, config, callbacks)
    if budget is not None and budget.stopped:
        from courtroom.cost.budget import stopped_study

        raise stopped_study(budget, config, budget.admitted)
    return StudyOutcome(study, config, space, models, default)


def _optimize(study: Any, objective: Any, config: StudyConfig, callbacks: Sequence[Any]) -> None:
    """Run this process's trials.

    Two workers (threads, or processes on one SQLite file) can pop the same enqueued trial and
    tell it twice ("Cannot tell a COMPLETE trial"), so queued trials (the paper default) run one
    at a time, under the storage's lock, before the workers fan out.
    """
    from optuna.trial import TrialState

    # One bound for the process: the trials that run at once share --concurrency.
    with bounded_requests(config.concurrency):
        with _storage.creation_lock(config.storage):
            queued = len(study.get_trials(deepcopy=False, states=(TrialState.WAITING,)))
            first = min(queued, config.trials)
            if first:
                study.optimize(
                    objective,
                    n_trials=first,
                    n_jobs=1,
                    catch=(TrialFailed,),
                    gc_after_trial=False,
                    callbacks=list(callbacks),
                )
        if config.trials - first:
            study.optimize(
                objective,
                n_trials=config.trials - first,
                n_jobs=config.workers,
                catch=(TrialFailed,),
                gc_after_trial=False,
                callbacks=list(callbacks),
            )


def study_config_dict(config: StudyConfig) -> dict[str, Any]:
    """The config as JSON, with the storage URL's password redacted."""
    out = asdict(config)
    if out.get("storage"):
        out["storage"] = _storage.redact(out["storage"])
    out.pop("api_base", None)
    return out


def report_dir(config: StudyConfig, out: str | Path | None) -> Path:
    """Where the study report goes (default ``studies/{name}``)."""
    return Path(out) if out else Path("studies") / config.name
