"""A study's trials: build each trial's program, score it on dev in chunks, record what it cost.

:func:`make_objective` is the one Optuna objective of every study. A trial's parameters become its
program (:func:`trial_program`, or a study across designs' own builder); the running score is
reported after each chunk of dev examples so Optuna can prune; the trial records its scores, the
calls its program made (``calls``), those that reached a model (``sent``) and those served from
the cache (``cached``), its tokens and seconds, and for a study across designs its cost in that
study's unit (:func:`trial_cost`). A trial that raises is recorded as failed
(:class:`TrialFailed`) and the study goes on; a configuration error or too many failed examples
stops it.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom.errors import ConfigError, CourtroomError
from courtroom.eval.harness import ExampleResult, evaluate, total_usage
from courtroom.eval.metrics import score_results
from courtroom.eval.status import TooManyFailures, status
from courtroom.models.lms import LMSpec, RoleLMs, resolve_roles
from courtroom.models.usage import metered
from courtroom.optimize.study import _dedupe, _workers, race
from courtroom.optimize.study._config import OBJECTIVES, StudyConfig, _optuna
from courtroom.optimize.study.spaces import Param, sample, split_params
from courtroom.programs import build_program
from courtroom.programs.presets import sampling_temperatures


class TrialFailed(Exception):
    """A trial raised: it is recorded as FAIL with its error (``user_attrs["error"]``) and the study goes on."""


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
                    n_sampling=config.n_sampling,
                    prompt_layout=config.prompt_layout,
                )
            else:
                value = value.copy(temperature=temps[role])
        lms[role] = (
            resolve_roles(
                value,
                temperature=config.temperature,
                max_tokens=config.max_tokens,
                api_base=config.api_base,
                n_sampling=config.n_sampling,
                prompt_layout=config.prompt_layout,
            ).serving(role)
            if isinstance(value, str | LMSpec)
            else value
        )
    return lms


def _value(results: Sequence[ExampleResult], labels: Sequence[str], objective: str) -> float:
    return float(score_results(results, labels)[OBJECTIVES[objective]])


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
    fixed, preset = config.fixed_for(config.framework)
    program = build_program(
        config.framework,
        labels,
        positions,
        knobs=fixed | knobs,
        lms=_trial_lms(base, config, models, temps, model_objects),
    )
    if preset:
        program.temperatures = sampling_temperatures(type(program), preset)
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


def batch_mode(config: Any, lms: Any = None) -> Any:
    """Batch mode for a study's scoring when ``config.batch`` (``--batch``), else nothing.

    No run folder records the batches: a study that stops is continued trial by trial, and a
    trial cut short is scored again (its answered requests come from the cache).
    """
    if not getattr(config, "batch", False):
        return contextlib.nullcontext()
    from courtroom.models.batch import batching

    return batching(None, lms.models() if lms is not None else ())


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
    size = block_size(config, len(dev))
    looks = -(-len(dev) // size) - 1  # the race looks after every block but the last
    racing = races(config)
    build = build or framework_builder(config, base, train, labels, positions, model_objects)
    if getattr(config, "batch", False):
        from courtroom.models.batch import check_batchable

        check_batchable([*base.models(), *model_objects.values()])  # before any trial sends anything
    # A trial's compile (a study with --compile) stays live: an optimizer waits on each answer.
    live_build = bool(getattr(config, "compile", None))

    def objective(trial: Any) -> Any:
        try:
            with _workers.heartbeat(trial):  # beats while the trial runs, however long a chunk takes
                return run_trial(trial)
        except (optuna.TrialPruned, CourtroomError) as exc:
            if isinstance(exc, CourtroomError):  # a configuration error or too many failures: stop
                trial.set_user_attr("error", f"{type(exc).__name__}: {exc}")
            raise
        except Exception as exc:  # noqa: BLE001 - recorded on the trial (shown and counted), the study goes on
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ''}"
            trial.set_user_attr("error", error)
            raise TrialFailed(error) from exc
        except KeyboardInterrupt:  # Ctrl-C (or a refused call after it): Optuna fails the trial; say why
            with contextlib.suppress(Exception):
                trial.set_user_attr("interrupted", True)
            raise

    def run_trial(trial: Any) -> Any:
        from courtroom import _stop
        from courtroom.cost.tally import TokenTally, tallied

        _workers.sign(trial)  # who runs it, since when: another worker judges whether it is gone
        params = sample(space, trial)
        try:
            _dedupe.claim(
                trial, dict(trial.params), config.storage, lambda: trial.set_user_attr("heartbeat", time.time()), size
            )
        except _dedupe.Duplicate as dup:
            return _dedupe.reuse(trial, dup.original)
        floor = int(trial.user_attrs.get(race.FLOOR, 0))
        trial.set_user_attr(race.LOOKS, looks)
        start = time.perf_counter()
        prep_tally = TokenTally()
        with (
            metered() as prep,
            tallied(prep_tally),
            contextlib.nullcontext() if live_build else batch_mode(config),
        ):
            program = build(trial, params)
        results: list[ExampleResult] = []
        with batch_mode(config):
            for i in range(0, len(dev), size):
                results += evaluate(program, dev[i : i + size], concurrency=config.concurrency)
                trial.set_user_attr("heartbeat", time.time())
                trial.set_user_attr(race.OUTCOMES, race.outcomes(results))
                if _stop.stop_requested():  # cut short: not a score; a continued study runs it again
                    trial.set_user_attr("interrupted", True)
                    _record(trial, results, labels, prep.usage, start)
                    raise optuna.TrialPruned(f"stopped after {len(results)} of {len(dev)} examples")
                if not config.prune or len(results) >= len(dev) or len(results) < floor:
                    continue
                if racing:
                    marks = race.outcomes(results)
                    said = race.verdict(trial.study, trial.number, marks, looks, race.level(config.trials), floor)
                    if said is not None:
                        trial.set_user_attr("race", said.to_dict())
                    if single:  # Optuna's pruner interface (the study's RacePruner) makes the same call
                        trial.report(_value(results, labels, config.objective), step=len(results))
                        stop = trial.should_prune()
                    else:
                        stop = bool(said and said.stop)
                    if stop and said is not None:
                        _record(trial, results, labels, prep.usage, start)
                        raise optuna.TrialPruned(
                            f"worse than trial {said.against} on {said.cases} shared cases "
                            f"({said.losses} lost, {said.wins} won; p = {said.p:.3g})"
                        )
                elif single:
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
        if getattr(config, "frameworks", None) or config.cost != "calls":  # across designs, or priced
            cost = trial_cost(
                trial, config, results, prep_tally, prep.usage, prep_batch=not live_build and config.batch
            )
        value = _value(results, labels, config.objective)
        return (value, cost) if config.cost_objective else value

    return objective


def races(config: Any) -> bool:
    """Whether the study's trials race (:mod:`courtroom.optimize.study.race`): pruning on, the race rule, accuracy."""
    return bool(config.prune) and getattr(config, "pruner", "race") == "race" and config.objective == "accuracy"


def block_size(config: Any, n_dev: int) -> int:
    """Dev cases per block: ``config.chunks`` blocks; one block when nothing is pruned in batch mode."""
    size = max(1, -(-n_dev // max(1, config.chunks)))
    stops = config.prune and (races(config) or not config.cost_objective)
    if getattr(config, "batch", False) and not stops:
        size = max(1, n_dev)  # nothing to prune: every dev case in the same batches
    return size


def trial_cost(
    trial: Any,
    config: Any,
    results: Sequence[ExampleResult],
    prep_tally: Any,
    prep: Any,
    *,
    prep_batch: bool = False,
) -> float:
    """Cost per example in ``config.cost`` (calls, tokens or dollars), compile included; recorded on the trial.

    Calls: every LM call the program made, the compile's too. Tokens and dollars: the provider's
    usage of every request the trial sent, plus what each answer it read from the shared cache was
    billed for when it was sent, so a trial costs what it would cost run alone (the cache saving
    this study nothing), priced by the one path from usage to dollars (:mod:`courtroom.cost.bill`,
    ``--prices`` winning; at batch price in batch mode). ``prep``: the compile's usage
    (``prep_batch``: sent in batches).
    """
    from courtroom.eval.metrics import user_prices

    n = max(len(results), 1)
    usage = total_usage(results)
    compile_calls = sum(row[0] for row in prep_tally.by_model.values())
    calls = usage.calls + compile_calls
    tokens = sum(u.prompt_tokens + u.completion_tokens + u.cached_tokens for u in (usage, prep))
    trial.set_user_attr("compile_calls", compile_calls)
    trial.set_user_attr("tokens_per_example", round(tokens / n, 2))
    if config.cost == "calls":
        total = float(calls)
    elif config.cost == "tokens":
        total = float(tokens)
    else:
        batch = bool(getattr(config, "batch", False))
        parts = [
            cost(user_prices({**u.by_model, **u.cached_by_model}, config.prices), batch=b)
            for u, b in ((usage, batch), (prep, prep_batch))
            for cost in (u.cost, u.cached_cost)
        ]
        models = sorted({m for u in (usage, prep) for m in (*u.by_model, *u.cached_by_model)})
        if models and all(p is None for p in parts):
            raise ConfigError(f"no price for {', '.join(models)}: pass --prices FILE or use --cost-unit tokens")
        total = sum(p for p in parts if p is not None)
    cost = total / n
    trial.set_user_attr("cost_per_example", round(cost, 8))
    trial.set_user_attr("cost_unit", config.cost)
    return cost


def _record(trial: Any, results: Sequence[ExampleResult], labels: Sequence[str], prep: Any, start: float) -> None:
    usage = total_usage(results)
    s = score_results(results, labels)
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


def rebuilt(
    trial: Any,
    config: Any,
    base: Any,
    train: list[Any],
    labels: list[str],
    positions: list[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """The program ``trial`` of a one-framework study scored: built from its configuration, prepared on ``train``."""
    from courtroom.optimize.study._attrs import configuration

    own = configuration(trial)
    program = trial_program(config, own, base, labels, positions, model_objects)
    program.prepare(train)
    return program
