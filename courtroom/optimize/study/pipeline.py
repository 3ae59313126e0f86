"""From an experiment spec to a study: one framework's knobs, or several designs; report and export.

``courtroom study`` and :func:`courtroom.study` both call :func:`run_spec_study`; the dry run is
:func:`study_estimates`. A study's name is its identity's: with ``--study-name`` given, continuing
it under another spec is refused naming what differs; without, a study of the default name with
another spec is left alone and this spec gets its own (``NAME-{hash}``).
"""

from __future__ import annotations

import contextlib
import logging
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from courtroom.optimize.study._config import StudyConfig
    from courtroom.optimize.study._run import StudyOutcome
    from courtroom.spec import Experiment

logger = logging.getLogger(__name__)


def study_config(spec: Experiment) -> StudyConfig:
    """The study ``spec`` describes.

    A :class:`~courtroom.optimize.study.StudyConfig`, or a
    :class:`~courtroom.optimize.study.designs.DesignStudyConfig` across designs.
    """
    from courtroom.optimize.study._config import StudyConfig
    from courtroom.optimize.study.designs import DesignStudyConfig, parse_frameworks
    from courtroom.optimize.study.spaces import SPACES, add_plugin_spaces
    from courtroom.programs import check_roles, get_framework
    from courtroom.programs.presets import apply_preset

    d, m, st, design = spec.data, spec.models, spec.study, spec.design
    common: dict[str, Any] = {
        "task": d.task_name,
        "trials": st.trials,
        "dev": d.dev_limit or 20,
        "train": d.train_limit or 20,
        "data": d.source,
        "seed": d.seed,
        "storage": st.storage,
        "study_name": st.study_name,
        "workers": spec.execution.workers,
        "objective": st.objective,
        "cost_objective": st.cost_objective,
        "space": dict(st.space),
        "models": list(m.lm),
        "roles": dict(m.roles),
        "search_temperature": st.search_temperature,
        "temperature": m.temperature,
        "max_tokens": m.max_tokens,
        "api_base": m.api_base,
        "timeout": m.timeout,
        "n_sampling": m.n_sampling,
        "prompt_layout": m.prompt_layout,
        "concurrency": spec.execution.concurrency or 4,
        "prune": st.prune,
        "pruner": st.pruner,
        "prefer": st.prefer,
        "race_calls": st.race_calls,
        "fail_on_error": spec.execution.threshold,
        "dataset": d.custom(),
        "splits": d.splits(),
        "spec": spec.to_dict(),
    }
    if spec.execution.batch:
        common["batch"] = True
        common["api_base"] = _batch_base(spec)
    if design.frameworks or design.optimizer:  # a study over designs (one design with --compile alone)
        if design.framework and design.frameworks:
            raise ConfigError("give a FRAMEWORK or --frameworks, not both")
        frameworks = parse_frameworks(design.frameworks or [str(design.framework)])
        check_roles(m.roles, sorted({r for fw in frameworks for r in get_framework(fw).roles}))
        prices = spec.budget.table()
        from courtroom.optimize.optimizers import get_optimizer, optimizer_settings
        from courtroom.spec._values import typed_knobs

        settings = dict(design.optimizer_settings)
        if design.optimizer:
            opt = get_optimizer(design.optimizer)
            settings = typed_knobs(settings, opt.defaults, flag="--opt")
            optimizer_settings(opt, settings)  # refused now, not in every trial
        presets, fixed = design_fixed(frameworks, design.presets, design.knobs, common["space"])
        in_space = {f"{fw}.{p.name}" for fw in frameworks for p in SPACES[fw]}
        common["space"] = {k: _space_value(v) for k, v in fixed.items() if k in in_space} | common["space"]
        return DesignStudyConfig(
            frameworks=frameworks,
            presets=presets,
            knobs={k: v for k, v in fixed.items() if k not in in_space},
            compile=design.optimizer,
            compile_settings=settings,
            cost=st.cost_unit or ("dollars" if prices else "tokens"),
            prices=prices,
            **common,
        )
    if design.framework is None and design.preset is None:
        raise ConfigError("name a FRAMEWORK, or search several designs with --frameworks a,b,c (or all)")
    framework, preset_knobs = apply_preset(design.preset, design.framework)
    add_plugin_spaces([framework])
    if framework in SPACES and not SPACES[framework]:
        raise ConfigError(
            f"{framework} has no knobs to search: run it (`courtroom run {framework}`), or put it in a study "
            f"across designs as one point (--frameworks {framework},jot)"
        )
    check_roles(m.roles, get_framework(framework).roles)
    fixed = fixed_knobs(framework, preset_knobs, design.knobs, common["space"])
    in_space = {p.name for p in SPACES.get(framework, ())}
    # A fixed knob the space searches narrows it to that value; the others are set on every trial.
    common["space"] = {k: _space_value(v) for k, v in fixed.items() if k in in_space} | common["space"]
    knobs = {k: v for k, v in fixed.items() if k not in in_space}
    prices = spec.budget.table()  # --prices prices the cost objective and the cheapest of the tied set
    cost = st.cost_unit or ("dollars" if prices else "calls")
    return StudyConfig(framework=framework, knobs=knobs, preset=design.preset, cost=cost, prices=prices, **common)


def fixed_knobs(
    framework: str, preset_knobs: Mapping[str, Any], sets: Mapping[str, Any], space: Mapping[str, str]
) -> dict[str, Any]:
    """The knobs a study of ``framework`` holds fixed: the preset's under ``--set``'s, typed and checked.

    A knob both ``--set`` and ``--space`` name is refused (one fixes it, the other searches it).
    """
    from courtroom.optimize.study.spaces import SPACES
    from courtroom.programs import check_knobs, get_framework
    from courtroom.spec._values import typed_knobs

    sets = typed_knobs(sets, get_framework(framework).knobs())
    check_knobs(framework, sets)
    both = sorted(set(sets) & set(space))
    if both:
        raise ConfigError(
            f"{', '.join(both)}: given to --set (fixed) and --space (searched); keep one "
            f"(--space {both[0]}=VALUE also fixes it)"
        )
    for param in SPACES.get(framework, ()):
        if param.name in sets:
            try:
                param.narrowed(_space_value(sets[param.name]))
            except ConfigError:
                raise ConfigError(
                    f"--set {param.name}={sets[param.name]}: a study of {framework} searches {param.name} in "
                    f"{param.describe()}; give a value there"
                ) from None
    return dict(preset_knobs) | sets


def design_fixed(
    frameworks: Sequence[str], presets: Sequence[str], sets: Mapping[str, Any], space: Mapping[str, str]
) -> tuple[dict[str, str], dict[str, Any]]:
    """(design -> preset, ``{design}.{knob}`` -> value) a study across designs holds fixed.

    A preset applies to its framework, which must be one of the designs (one preset per design).
    ``--set design.knob=V`` fixes one design's knob; ``--set knob=V`` every design that has it, as
    ``--space`` narrows them.
    """
    from courtroom.programs import get_framework
    from courtroom.programs.presets import get_preset

    chosen: dict[str, str] = {}
    for name in presets:
        fw = get_preset(name).framework
        if fw not in frameworks:
            raise ConfigError(f"--preset {name} is for {fw}, which is not among the designs ({', '.join(frameworks)})")
        if fw in chosen:
            raise ConfigError(f"--preset {chosen[fw]} and --preset {name} are both for {fw}: keep one")
        chosen[fw] = name
    unknown = [k for k in sets if "." not in k and not any(k in get_framework(fw).knobs() for fw in frameworks)]
    unknown += [k for k in sets if "." in k and k.split(".", 1)[0] not in frameworks]
    if unknown:
        raise ConfigError(
            f"--set {', '.join(unknown)}: no design of {', '.join(frameworks)} has it "
            "(give DESIGN.KNOB=VALUE, or a knob some design has)"
        )
    out: dict[str, Any] = {}
    for fw in frameworks:
        knobs = get_framework(fw).knobs()
        mine = {k: v for k, v in sets.items() if "." not in k and k in knobs}
        mine |= {k.split(".", 1)[1]: v for k, v in sets.items() if k.startswith(fw + ".")}
        searched = {k: v for k, v in space.items() if "." not in k} | {
            k.split(".", 1)[1]: v for k, v in space.items() if k.startswith(fw + ".")
        }
        preset_knobs = get_preset(chosen[fw]).knobs if fw in chosen else {}
        out |= {f"{fw}.{k}": v for k, v in fixed_knobs(fw, preset_knobs, mine, searched).items()}
    return chosen, out


def _space_value(value: Any) -> str:
    """A fixed value as a ``--space`` override (``true``, ``3``, ``0.5``, ``sequential``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def _batch_base(spec: Experiment) -> str | None:
    """``--batch``: the models' base URL (models without a batch API refused here, before anything is built)."""
    import os

    from courtroom.models.batch import check_names
    from courtroom.models.panels import split_models

    if spec.execution.workers > 1:
        raise ConfigError(
            "--batch runs one trial at a time in a process (each batch gathers every case of its trial): "
            "drop --workers, or start several `courtroom study ... --batch` processes on one --storage"
        )
    m = spec.models
    named = [*(m.lm or [os.environ.get("COURTROOM_LM", "local")]), *m.roles.values()]
    return check_names([x for value in named for x in split_models(str(value))], m.api_base)


def is_design_study(config: Any) -> bool:
    """Whether ``config`` is a study across designs."""
    return hasattr(config, "frameworks")


def run_spec_study(
    spec: Experiment,
    *,
    progress: bool = True,
    lms: Any = None,
    model_objects: Any = None,
    budget: Any = None,
) -> StudyOutcome:
    """Create or continue the study ``spec`` describes, run its trials, write the report and the export."""
    from courtroom.optimize.study import _storage
    from courtroom.optimize.study._run import run_study, unclaimed_name
    from courtroom.optimize.study.designs import DesignStudyConfig, run_design_study
    from courtroom.optimize.study.report import trials_table
    from courtroom.reporting.logs import phases_to
    from courtroom.reporting.progress import ProgressDisplay

    config = study_config(spec)
    from courtroom.cost import race_cap

    race_cap.checked(config, budget, _dearest_trial)  # before the storage is opened: nothing written
    if spec.study.study_name is None:
        with _storage.creation_lock(config.storage):
            name = unclaimed_name(config)
        if name != config.name:
            logger.warning(
                "study %s exists with another spec (see its study.json); this spec's study is %s", config.name, name
            )
            config.study_name = name
    with ProgressDisplay(progress, prices=spec.budget.table(), batch=spec.execution.batch) as display:
        bar = display.track(f"study {config.name}", total=config.trials, unit="trials")

        def count(held: int) -> None:
            """The bar shows the study's ended trials that count (every worker's), never past --trials."""
            while bar.done < min(held, config.trials):
                bar.advance()

        count(_held(config))  # a continued study: the trials it holds

        def on_trial(study: Any, trial: Any) -> None:
            from courtroom.optimize.study._attrs import ended

            value = trial.values[0] if trial.values else None
            if trial.user_attrs.get("duplicate_of") is not None:  # not run: it does not count against --trials
                reused = "its value reused" if trial.state.name == "COMPLETE" else "not run again"  # settled
                bar.status(f"trial {trial.number} repeats trial {trial.user_attrs['duplicate_of']}: {reused}")
                return
            # Counted before its line is printed: "trial 0 complete, 1/3 trials". Not one per trial told:
            # an interrupted trial does not count, and a dead worker's (running when this began) did not end.
            count(ended(study))
            bar.status(
                f"trial {trial.number} {trial.state.name.lower()}" + (f" {value:.3f}" if value is not None else "")
            )

        with phases_to(bar.status):  # a trial's compile reports its optimizer's phases on the study's line
            if isinstance(config, DesignStudyConfig):
                outcome = run_design_study(
                    config, lms=lms, model_objects=model_objects, callbacks=[on_trial], budget=budget
                )
            else:
                outcome = run_study(config, lms=lms, model_objects=model_objects, callbacks=[on_trial], budget=budget)
    if config.trials == 0:
        return outcome
    outcome.table = trials_table(outcome.study)
    if not any(t.state.name == "COMPLETE" for t in outcome.study.trials):
        return outcome
    outcome.test = _score_test(outcome, spec, lms, model_objects, budget)
    write_outputs(outcome, spec, lms=lms, model_objects=model_objects)
    return outcome


def _held(config: StudyConfig) -> int:
    """Trials the study already holds that count against ``--trials`` and have ended (0 for a new study)."""
    from courtroom.optimize.study import _storage
    from courtroom.optimize.study._attrs import ended
    from courtroom.optimize.study._config import _optuna

    optuna = _optuna()
    try:
        return ended(optuna.load_study(study_name=config.name, storage=_storage.open_storage(config.storage)))
    except KeyError:  # a new study
        return 0


def test_limit(spec: Experiment, budget: Any = None) -> int:
    """How many test examples the chosen trial(s) are scored on: ``--test-limit``, else as many as dev's.

    By default the chosen trial is scored on as many held-out cases as the dev cases that chose it
    (``--dev-limit``, 20 by default). Under a budget (``--max-calls``/``--max-cost``) the default is
    off: the budget bounds the trials.
    """
    given = spec.data.test_limit
    if given is not None:
        return int(given)
    limited = spec.budget.max_calls is not None or spec.budget.max_cost is not None
    if limited or (budget is not None and getattr(budget, "active", False)):
        return 0
    return int(spec.data.dev_limit or 20)


def _score_test(outcome: StudyOutcome, spec: Experiment, lms: Any, model_objects: Any, budget: Any) -> dict[int, Any]:
    """The chosen trial(s) scored on the test split (number -> scores); {} when off or (by default) no test data."""
    from courtroom.optimize.study.holdout import score_chosen

    limit = test_limit(spec, budget)
    if not limit:
        return {}
    try:
        return score_chosen(outcome, limit, lms=lms, model_objects=model_objects)
    except ConfigError as exc:
        if spec.data.test_limit is not None:
            raise
        logger.warning("the chosen trial is not scored on new data (%s); pass --test-limit N once there is", exc)
        return {}


def write_outputs(outcome: StudyOutcome, spec: Experiment, *, lms: Any = None, model_objects: Any = None) -> None:
    """The report folder and, with ``export_best``, the recipe (or, with ``--compile``, the best program)."""
    from courtroom._lock import FolderLock
    from courtroom.optimize.recipes import export_config
    from courtroom.optimize.study._design_report import write_design_report
    from courtroom.optimize.study._run import report_dir, study_config_dict
    from courtroom.optimize.study.report import best_trial, write_report

    config, study = outcome.config, outcome.study
    folder = report_dir(config, spec.output.out)
    lock = (
        FolderLock(folder, what="study report", wait=600) if spec.output.out is not False else contextlib.nullcontext()
    )
    with lock:  # workers of one study write its report in turn
        recorded = study_config_dict(config)
        if is_design_study(config):
            written = write_design_report(study, folder, recorded)
        else:
            written = write_report(study, folder, recorded, outcome.models)
        outcome.report_dir = written["summary"].parent
        from courtroom.optimize.study.holdout import stored, write_test

        write_test(outcome.report_dir, outcome.test or stored(study))
        export = spec.output.export_best
        if not export:
            return
        if is_design_study(config) and getattr(config, "compile", None):
            outcome.program_path = _export_program(outcome, spec, export, lms, model_objects)
            return
        framework = None if is_design_study(config) else config.framework
        fixed, preset = config.fixed_for(framework or best_trial(study).user_attrs.get("design"))
        export_config(
            study, framework, config.task, export, models=outcome.models, lm=outcome.lm, spec=config.spec,
            test=outcome.test or stored(study), fixed=fixed, preset=preset,
        )  # fmt: skip


def _export_program(outcome: StudyOutcome, spec: Experiment, path: str, lms: Any, model_objects: Any) -> Path:
    """The best trial of a study with ``--compile``, rebuilt and recompiled from the cache, saved as a program."""
    from courtroom.data.tasks import load_sized
    from courtroom.models.lms import resolve_roles
    from courtroom.optimize.study._design_report import export_design_program
    from courtroom.optimize.study.holdout import stored
    from courtroom.programs import get_framework

    config: Any = outcome.config
    where = {"data": config.data, "seed": config.seed, "dataset": config.dataset, "splits": config.splits}
    tr = load_sized(config.task, "train", config.train, **where)
    roles = sorted({r for fw in config.frameworks for r in get_framework(fw).roles})
    base = lms or resolve_roles(
        config.models[0] if config.models else None,
        config.roles,
        valid_roles=roles,
        max_tokens=config.max_tokens,
        api_base=config.api_base,
        n_sampling=config.n_sampling,
        prompt_layout=config.prompt_layout,
    )
    return export_design_program(
        outcome.study,
        config,
        path,
        base=base,
        train=tr.examples,
        labels=list(tr.task.labels),
        positions=list(tr.task.positions) if tr.task.positions else None,
        model_objects=model_objects,
        test=outcome.test or stored(outcome.study),
    )


def study_estimates(spec: Experiment) -> tuple[dict[str, Any], list[str]]:
    """The dry run of a study: per design, one trial at its most expensive point, and the total bound."""
    from courtroom.cost.dry_run import estimate_study, scaled
    from courtroom.cost.study_budget import study_run_config
    from courtroom.optimize.study.designs import compile_bounded, design_estimates
    from courtroom.optimize.study.spaces import build_space

    config: Any = study_config(spec)
    from courtroom.cost import race_cap

    race_cap.checked(config, None, _dearest_trial)
    prices = spec.budget.table()
    if not is_design_study(config):
        space = build_space(
            config.framework, overrides=config.space, models=config.models, temperatures=config.search_temperature
        )
        note = f"{config.trials} trial(s), each at most the most expensive point of the space"
        out = {config.framework: estimate_study(study_run_config(config), space, config.trials, prices=prices)}
        return out | _test_estimate(spec, config, {config.framework: space}), [note]
    per_trial = design_estimates(config)
    compiling = ""
    if config.compile:
        compiling = (
            f"; compiling each trial ({config.compile}, at most its program runs on the train split) included"
            if compile_bounded(config)
            else f"; compiling each trial is not counted ({config.compile} decides its own number of calls)"
        )
    note = (
        f"per design: one trial at its most expensive point; {config.trials} trial(s) cost at most "
        f"{config.trials} x the dearest design" + compiling
    )
    out = {f"{fw} (1 trial)": e for fw, e in per_trial.items()}
    dearest = max(per_trial.values(), key=lambda e: (e.calls, e.cost or 0.0))
    out[f"{config.trials} trial(s), at most"] = scaled(dearest, config.trials, exact=False)
    from courtroom.optimize.study.designs import design_space

    space = design_space(config)
    spaces = {
        fw: [replace(p, name=p.name[len(fw) + 1 :]) for p in space if p.name.startswith(fw + ".")]
        for fw in config.frameworks
    }
    return out | _test_estimate(spec, config, spaces), [note]


def _test_estimate(spec: Experiment, config: Any, spaces: dict[str, Any]) -> dict[str, Any]:
    """Scoring the chosen trial(s) on the test split (:func:`test_limit`), each at its design's dearest point.

    One trial for a single objective; a Pareto front has at most one point per trial.
    """
    from courtroom.cost.dry_run import dearest_point, scaled
    from courtroom.cost.study_budget import study_run_config

    limit = test_limit(spec)
    if not limit:
        return {}
    chosen = config.trials if config.cost_objective else 1
    worst = None
    for fw, space in spaces.items():
        run_config = replace(study_run_config(config, fw), split="test", limit=limit)
        est = dearest_point(run_config, space, prices=spec.budget.table())[1]
        worst = est if worst is None or (est.calls, est.cost or 0.0) > (worst.calls, worst.cost or 0.0) else worst
    if worst is None or chosen < 1:
        return {}
    return {f"test split: {chosen} chosen trial(s), at most": scaled(worst, chosen, exact=False)}


def _dearest_trial(config: Any) -> Any:
    """One trial at the space's dearest point, across designs the dearest design's (the race cap's unit)."""
    from courtroom.cost import race_cap

    if is_design_study(config):
        from courtroom.optimize.study.designs import design_space, design_trial_estimate

        return design_trial_estimate(config, design_space(config))
    return race_cap.trial_estimate(config)
