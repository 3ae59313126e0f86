"""One Python function per command: ``courtroom run`` calls :func:`run`, and so on.

Each takes one :class:`~courtroom.spec.Experiment` (``spec=``) or the same options as keywords
(the flags' names: ``courtroom.run("jot", dataset="reviews.csv", text_field="text", ...)``, typed
per command in :mod:`courtroom.api._options`: a misspelt keyword is a type checker's error), draws
the same progress display (``progress=False`` turns it off) and writes the same folders and files;
the commands only parse flags and print. :func:`estimate` is every command's dry run. They are
re-exported at the top level: ``courtroom.run(...)``. The helpers of single commands live beside
this module: :mod:`courtroom.api._score` (a saved program on labelled data: its data, models, vote),
:mod:`courtroom.api._run` (:func:`run_config`, what a resume takes),
:mod:`courtroom.api._compare` (a suite's rows, the per-row progress), :mod:`courtroom.api._compile`
(a study's recipe, the compile's dry run, the dev and test runs written next to the program) and
:mod:`courtroom.api._results` (:class:`Verdict`, the record :func:`predict` returns per case).
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from courtroom import _stop
from courtroom.api._compare import compared, row_hooks
from courtroom.api._compile import compile_estimate, with_recipe, write_score_runs
from courtroom.api._options import (
    CompareOptions,
    CompileOptions,
    EstimateOptions,
    ExperimentOptions,
    LoadOptions,
    RunOptions,
    ScoreOptions,
    StudyOptions,
)
from courtroom.api._results import Verdict
from courtroom.api._run import resume_overrides, run_config
from courtroom.api._score import ScoreOutcome, run_score, score_estimate
from courtroom.errors import ConfigError
from courtroom.spec import Experiment

if TYPE_CHECKING:
    import pandas as pd

    from courtroom.comparison.table import Comparison
    from courtroom.cost.estimate import Estimate
    from courtroom.optimize.compile import CompileResult
    from courtroom.optimize.study import StudyOutcome
    from courtroom.programs import CourtroomProgram
    from courtroom.runner.repeats import RepeatOutcome
    from courtroom.runner.runs import RunOutcome

__all__ = [
    "ScoreOutcome",
    "CompareOptions",
    "CompileOptions",
    "EstimateOptions",
    "ExperimentOptions",
    "LoadOptions",
    "RunOptions",
    "ScoreOptions",
    "StudyOptions",
    "Verdict",
    "compare",
    "compile",
    "estimate",
    "experiment",
    "predict",
    "report",
    "run",
    "runs",
    "score",
    "study",
]


def experiment(
    command: str = "run", spec: Experiment | None = None, **options: Unpack[ExperimentOptions]
) -> Experiment:
    """The validated spec of ``command`` from ``spec`` and/or keywords (keywords win).

    The ``COURTROOM_*`` variables are checked first (:func:`courtroom._env.check_environment`), as
    the CLI checks them: a bad one is refused before anything is written or sent.
    """
    from courtroom._env import check_environment

    check_environment()
    given: dict[str, Any] = {k: v for k, v in options.items() if v is not None}
    if spec is None:
        spec = Experiment.build(command, **given)
    elif given:
        spec = spec.updated(**given)
    spec.command = command
    spec.validate()
    if spec.design.metric is not None:  # an unknown name or a function that does not import: before any request
        from courtroom.eval.metrics import get_metric

        get_metric(spec.design.metric)
    return spec


def _budget(spec: Experiment) -> Any:
    """A :class:`~courtroom.cost.budget.Budget` for ``--max-calls``/``--max-cost``; None when neither is set."""
    b = spec.budget
    if b.max_calls is None and b.max_cost is None:
        return None
    from courtroom.cost.budget import Budget

    return Budget(max_calls=b.max_calls, max_cost=b.max_cost, prices=b.table())


def _tracked(spec: Experiment, outcome: Any) -> Any:
    """``outcome``, logged to MLflow first when the spec says ``--track`` (:mod:`courtroom.tracking`)."""
    if spec.output.track is not None:
        from courtroom import _stop
        from courtroom.tracking import record, written_to

        folder = written_to(outcome)
        # A stop while logging (a slow tracker) names the folder, which holds the finished results;
        # a run folder resumes at once (and logs), any other command is run again.
        again = None if type(outcome).__name__ in ("RunOutcome", "RepeatOutcome") else _stop.command_line()
        with _stop.saving_to(folder, resume=again) if folder is not None else nullcontext():
            record(spec, outcome)
    return outcome


@contextmanager
def _display(spec: Experiment, progress: bool) -> Iterator[Any]:
    """The progress display, with ``--trace``'s MLflow traces on while it runs (:func:`courtroom.tracking.tracing`)."""
    from courtroom.reporting.progress import ProgressDisplay

    with (
        _tracing(spec),
        _scoring(spec),
        ProgressDisplay(progress, prices=spec.budget.table(), batch=spec.execution.batch) as display,
    ):
        yield display


def _scoring(spec: Experiment, folder: str | Path | None = None) -> Any:
    """Every case scored with ``--metric`` while it runs (a resumed folder: the metric its spec records)."""
    from courtroom.eval.metrics import scoring

    metric = spec.design.metric
    for name in ("meta.json", "plan.json", "group.json") if metric is None and folder is not None else ():
        try:  # a run folder, a comparison, a repeat group (its config holds the spec)
            data = json.loads((Path(folder) / name).read_text())  # type: ignore[arg-type]
            recorded = data.get("spec") or (data.get("config") or {}).get("spec") or {}
            metric = (recorded.get("design") or {}).get("metric")
        except (OSError, ValueError, AttributeError):
            continue  # not this kind of folder (or damaged: the folder's own reader names it)
        break
    return scoring(metric)


def _tracing(spec: Experiment) -> Any:
    if not spec.output.trace:
        return nullcontext()
    from courtroom.tracking import tracing

    return tracing(spec)


def run(
    framework: str | None = None,
    *,
    spec: Experiment | None = None,
    resume: str | Path | None = None,
    retry_failed: bool = False,
    progress: bool = True,
    lms: Any = None,
    **options: Unpack[RunOptions],
) -> RunOutcome | RepeatOutcome:
    """Evaluate ``framework`` on a task and write a run folder (``courtroom run``).

    Options are the spec's (``limit``, ``dataset``, ``lm``, ``roles``, ``knobs``, ``preset``,
    ``repeats``, ``max_calls``, ...). ``resume=RUN_DIR`` finishes an interrupted run or repeat group
    instead (options given with it that would change answers are refused); ``retry_failed`` reruns
    its failed examples too. ``lms`` (a ready role map, e.g. fakes) replaces the named models.
    Returns a :class:`~courtroom.runner.runs.RunOutcome` (``run_dir``, ``summary``, ``results``) or,
    for repeats, a :class:`~courtroom.runner.repeats.RepeatOutcome`, which reads alike (``run_dir``:
    the group's folder; ``summary``: each metric's mean) and adds ``stats`` and ``outcomes``. At a
    budget the folder is left resumable and :class:`~courtroom.cost.budget.BudgetExhausted` is raised.
    """
    from courtroom.runner.repeats import is_repeat_group, resume_repeats, run_repeats
    from courtroom.runner.resume import resume as resume_run
    from courtroom.runner.runs import run as run_once

    spec = experiment("run", spec, framework=framework, **options)
    if spec.budget.dry_run:
        raise ConfigError("a dry run returns estimates, not a run: call courtroom.estimate(...)")
    _stop.note_flags(spec.runtime_flags())
    config = run_config(spec) if resume is None else None
    spend = {} if (budget := _budget(spec)) is None else {"budget": budget}
    with _display(spec, progress) as display, _scoring(spec, resume):
        bar = display.track(spec.design.framework or (config.framework if config else "resume"))
        hooks: dict[str, Any] = {"progress": lambda r, res: bar.result(res), "on_start": lambda r, n: bar.start(n)}
        if resume is not None:
            overrides = resume_overrides(spec)
            if is_repeat_group(resume):
                return _tracked(spec, resume_repeats(resume, lms=lms, **hooks, **overrides, **spend))
            outcome = resume_run(
                resume, lms=lms, progress=bar.result, on_start=bar.start, retry_failed=retry_failed, **overrides,
                **spend,
            )  # fmt: skip
        else:
            assert config is not None
            if spec.execution.repeats > 1:
                return _tracked(spec, run_repeats(config, spec.execution.repeats, lms=lms, **hooks, **spend))
            outcome = run_once(config, progress=bar.result, on_start=bar.start, lms=lms, **spend)
    from courtroom.analysis.flips import run_flips

    flips = run_flips(outcome.run_dir, outcome.results)
    if flips is not None:
        outcome.analyses["flips"] = flips  # what the trial changed, as ``compare`` reports it
    if spec.output.ambiguity_k:
        from courtroom.analysis.ambiguity import run_ambiguity

        outcome.analyses["ambiguity"] = run_ambiguity(
            outcome.run_dir, spec.output.ambiguity_k, spec.output.theta, lms=lms, api_base=spec.models.api_base
        ).to_dict("records")
    return _tracked(spec, outcome)


def estimate(
    framework: str | None = None,
    *,
    command: str = "run",
    spec: Experiment | None = None,
    config: str | Path | Mapping[str, Any] | None = None,
    program: str | Path | None = None,
    **options: Unpack[EstimateOptions],
) -> tuple[dict[str, Estimate], list[str]]:
    """Every command's dry run: (row -> :class:`~courtroom.cost.estimate.Estimate`, notes); nothing is sent.

    ``command`` is ``run``, ``compare``, ``compile``, ``study`` or ``score`` (``spec.command`` when a
    spec is given); calls, tokens and dollars are exact for fixed structures and maxima where data
    decides. ``config`` is a compile's recipe (as in :func:`compile`), ``program`` the program a
    score scores (as in :func:`score`).
    """
    from courtroom.cost import dry_run

    command = spec.command if spec else command
    if framework and command == "compare":
        options["frameworks"] = framework
    spec = experiment(command, spec, framework=None if command == "compare" else framework, **options)
    if spec.execution.batch and spec.command != "compile":  # refused now, not only when the real run starts
        _check_batchable(spec)
    if spec.command == "run":
        planned = run_config(spec)
        return dry_run.estimate_runs({planned.framework: planned}, repeats=spec.execution.repeats), []
    if spec.command == "compare":
        from courtroom.comparison.options import compare_options
        from courtroom.comparison.plan import comparison_configs

        out: dict[str, Any] = {}
        for task, rows in compared(spec).items():
            fws = list(dict.fromkeys(fw for fw, _, _ in rows.values())) if rows else None
            opts = compare_options(spec.updated(task=task) if task else spec, fws)
            row_plan = {k: opts.pop(k) for k in ("repeats", "matched_baselines", "baseline", "match")}
            for k in ("ambiguity_k", "theta", "spec"):
                opts.pop(k, None)
            names = list(rows) if rows else spec.design.frameworks
            configs = comparison_configs(opts.pop("task"), names, rows=rows, **opts)
            import dataclasses

            if spec.execution.batch:  # the configs' batch mode comes from the spec popped above
                configs = {k: dataclasses.replace(c, batch=True) for k, c in configs.items()}
            found = dry_run.estimate_comparison(configs, **row_plan)
            out |= {f"{task}: {k}" if len(compared(spec)) > 1 else k: v for k, v in found.items()}
        return out, []
    if spec.command == "compile":
        spec, models = with_recipe(spec, config)
        est, note = compile_estimate(spec, models)
        return {str(spec.design.framework): est}, [note]
    if spec.command == "study":
        from courtroom.optimize.study.pipeline import study_estimates

        return study_estimates(spec)
    if spec.command == "score":
        if program is None:
            raise ConfigError("the dry run of a score needs the program: estimate(program=PATH, command='score')")
        return score_estimate(spec, program), []
    raise ConfigError(f"no dry run for {spec.command}: use run, compare, compile, study or score")


def _check_batchable(spec: Experiment) -> None:
    """``--batch``: a model without a batch API (or two batch APIs in one run) refused in one line."""
    import os

    from courtroom.models.batch import check_names
    from courtroom.models.panels import split_models

    m = spec.models
    named = [*(m.lm or [os.environ.get("COURTROOM_LM", "local")]), *m.roles.values()]
    check_names([x for value in named for x in split_models(str(value))], m.api_base, keys=False)


def compare(
    frameworks: str | Sequence[str] | None = None,
    *,
    spec: Experiment | None = None,
    resume: str | Path | None = None,
    progress: bool = True,
    lms: Any = None,
    **options: Unpack[CompareOptions],
) -> Comparison:
    """Run every framework on the same examples; write the comparison folder (``courtroom compare``).

    ``frameworks`` is a list or a comma-separated string; options are the spec's (``task`` or
    ``dataset``, ``limit``, ``repeats``, ``lm``, ``roles``, ``knobs`` as ``{"KEY": v, "FRAMEWORK.KEY": v}``,
    ``out``, ``matched_baselines``, ``baseline``, ``match``, ``debias``, ...). The result's ``table``
    is the comparison as a pandas DataFrame; ``out_dir`` the folder. ``resume=COMPARISON_DIR``
    finishes an interrupted comparison: options given with it must match the comparison's, except
    ``api_base``, ``timeout``, ``concurrency``, ``prices`` and ``fail_on_error``.
    """
    from courtroom.comparison.compare import compare as run_compare
    from courtroom.comparison.options import compare_options, given_options

    if frameworks is None:
        spec = experiment("compare", spec, **options)
    else:
        spec = experiment("compare", spec, frameworks=frameworks, **options)
    if spec.budget.dry_run:
        raise ConfigError("a dry run returns estimates, not a comparison: call courtroom.estimate(...)")
    if resume is None and not spec.design.frameworks:
        raise ConfigError("pass frameworks (e.g. --frameworks jot,cot), or resume a comparison folder")
    _stop.note_flags(spec.runtime_flags())
    with _display(spec, progress) as display:
        hooks = row_hooks(display) | {"budget": _budget(spec), "lms": lms}
        if resume is not None:
            from courtroom.comparison.resume import resume_comparison

            with _scoring(spec, resume):
                return _tracked(spec, resume_comparison(resume, **hooks, **given_options(spec)))
        opts = compare_options(spec)
        return _tracked(spec, run_compare(opts.pop("task"), spec.design.frameworks, **hooks, **opts))


def compare_suite(spec: Experiment, *, progress: bool = True, lms: Any = None) -> tuple[pd.DataFrame, dict[str, Any]]:
    """A paper's comparison table (``compare --suite``): (paper vs measured, task -> comparison)."""
    from courtroom.comparison.suites import run_suite

    def one(task: str, names: list[str], **kw: Any) -> Any:
        from courtroom.comparison.compare import compare as run_compare
        from courtroom.comparison.options import compare_options

        each = spec.updated(task=task, frameworks=names)
        rows = kw.get("rows") or {}
        opts = compare_options(each, list(dict.fromkeys(fw for fw, _, _ in rows.values())) or None)
        opts.pop("task")
        with _display(each, progress) as display:
            found = run_compare(task, names, lms=lms, budget=_budget(spec), **row_hooks(display), **opts, **kw)
        return _tracked(each, found)

    _stop.note_flags(spec.runtime_flags())
    assert spec.design.suite is not None
    return run_suite(spec.design.suite, tasks=spec.design.suite_tasks or None, compare_fn=one)


def compile(  # noqa: A001 - the command's name
    framework: str | None = None,
    *,
    spec: Experiment | None = None,
    config: str | Path | Mapping[str, Any] | None = None,
    progress: bool = True,
    **options: Unpack[CompileOptions],
) -> CompileResult:
    """Compile a framework with a DSPy optimizer and save the program (``courtroom compile``).

    ``config`` is a recipe from ``courtroom study --export-best`` (a path or its dict): its
    framework, task, knobs and models per role are used unless given here (``lm`` replaces all of
    its models, ``roles`` some). Options are the spec's (``optimizer``, ``settings``, ``train_limit``,
    ``dev_limit``, ``test_limit``, ``keep_better``, ``dataset``, ``split_sizes``, ``prompt_lm``, ``out``;
    ``out=None`` saves nothing). The result (:class:`~courtroom.optimize.proof.CompileResult`) holds the
    ``program`` kept, ``before``/``after`` dev scores, the comparisons on ``dev`` and on the held-out
    ``test`` split (:class:`~courtroom.optimize.proof.Gain`: intervals, McNemar's p, ``sentence()``),
    ``worse_on_dev``, ``kept``, ``metadata``, ``path`` and the ``run_dirs`` written. With
    ``max_calls``/``max_cost`` it starts only if its dry-run bound fits, else
    :class:`~courtroom.cost.budget.BudgetExhausted` is raised before any request.
    """
    from courtroom.optimize.compile import compile_spec

    save = "out" not in options or options["out"] is not None
    spec = experiment("compile", spec, framework=framework, **options)
    if spec.budget.dry_run:
        raise ConfigError("a dry run returns estimates, not a program: call courtroom.estimate(...)")
    spec, recipe_models = with_recipe(spec, config)
    if save:
        from courtroom._files import check_output

        check_output(spec.output.out or "program.json", "out", [config if isinstance(config, str | Path) else None])
    if spec.budget.max_calls is not None or spec.budget.max_cost is not None:
        from courtroom.cost.budget import check_compile

        est, _ = compile_estimate(spec, recipe_models)
        check_compile(est, str(spec.design.optimizer), spec.budget.max_calls, spec.budget.max_cost)
    _stop.note_flags(spec.runtime_flags())
    from courtroom.cost.budget import compiling

    with _display(spec, progress) as display, compiling(_budget(spec)):
        result = compile_spec(spec, recipe_models, display=display)
    if save:
        import dataclasses

        from courtroom.saving import save_program

        out = Path(spec.output.out or "program.json")
        metadata = result.metadata | {"preset": spec.design.preset, "spec": spec.to_dict()}
        result = dataclasses.replace(result, metadata=metadata, path=save_program(result.program, out, metadata))
        with _scoring(spec):  # the run folders' summaries name the metric their accuracy is the mean of
            result = dataclasses.replace(result, run_dirs=write_score_runs(result, out, spec))
    return _tracked(spec, result)


def study(
    framework: str | None = None,
    *,
    spec: Experiment | None = None,
    progress: bool = True,
    lms: Any = None,
    model_objects: Mapping[str, Any] | None = None,
    **options: Unpack[StudyOptions],
) -> StudyOutcome:
    """Run an Optuna study over a framework's knobs, or over several designs (``courtroom study``).

    Options are the spec's: ``task`` or ``dataset``, ``trials``, ``dev_limit``, ``train_limit``,
    ``storage``, ``study_name``, ``space``, ``lm`` (one model, or a list to choose from per role),
    ``roles``, ``frameworks`` (a study across designs), ``compile`` (an optimizer compiling each
    trial), ``cost_objective``, ``fail_on_error``, ``max_calls``, ... Continuing a study under a
    spec that changes answers is refused, naming the fields that differ (or, without an explicit
    ``study_name``, starts a new study). Writes the report folder (``out``: default
    ``studies/NAME``) and, with ``export_best``, the recipe for :func:`compile` (with ``compile``,
    the best program). The outcome holds the Optuna ``study``, ``best`` trials, ``report_dir`` and
    ``table`` (the trials).
    """
    from courtroom.optimize.study.pipeline import run_spec_study

    spec = experiment("study", spec, framework=framework, **options)
    if spec.budget.dry_run:
        raise ConfigError("a dry run returns estimates, not a study: call courtroom.estimate(...)")
    _stop.note_flags(spec.runtime_flags())
    try:
        with _tracing(spec), _scoring(spec):
            outcome = run_spec_study(
                spec, progress=progress, lms=lms, model_objects=model_objects, budget=_budget(spec)
            )
    except Exception as exc:
        from courtroom.optimize.study._storage import is_journal, journal_path, storage_failure

        journal = is_journal(spec.study.storage or "")
        if isinstance(exc, AssertionError) and journal:  # Optuna's journal read back no trace of its own write
            raise ConfigError(
                f"cannot write the study journal {journal_path(spec.study.storage or '')}: a write did not land "
                "(is the disk full?); free some space, then run the command again"
            ) from exc
        if type(exc).__name__ != "StorageInternalError":  # Optuna's: the database refused a write or a read
            raise
        raise ConfigError(storage_failure(spec.study.storage, exc)) from exc
    return _tracked(spec, outcome)


def score(
    program: str | Path,
    *,
    spec: Experiment | None = None,
    progress: bool = True,
    lms: Any = None,
    **options: Unpack[ScoreOptions],
) -> ScoreOutcome:
    """Score a saved program on labelled data beside the majority vote at its calls (``courtroom score``).

    ``program`` is a file written by :func:`compile`. Options are the spec's: the data as for
    :func:`run` (``task`` or ``dataset`` with ``text_field``, ``label_field``, ``labels``; ``split``,
    ``limit``, ``split_sizes``, ...; none: the program's own test split; another ``dataset``: every
    row), ``lm``/``roles`` replacing the saved models, ``api_base``, ``out`` (``runs``),
    ``matched_baselines``, ``baseline``, ``match``, ``max_calls``/``max_cost``. ``lms`` (a ready role
    map, e.g. fakes) replaces every model. Returns a :class:`ScoreOutcome` (``accuracy``,
    ``interval``, ``matched_vote``, ``table``, ``run_dir``, ``out_dir``). At a budget the folder is
    left resumable (``courtroom compare --resume``) and :class:`~courtroom.cost.budget.BudgetExhausted` is raised.
    """
    spec = experiment("score", spec, **options)
    if spec.budget.dry_run:
        raise ConfigError("a dry run returns estimates, not a score: call courtroom.estimate(..., program=...)")
    _stop.note_flags(spec.runtime_flags())
    with _display(spec, progress) as display:
        outcome = run_score(spec, program, lms=lms, budget=_budget(spec), hooks=row_hooks(display))
    return _tracked(spec, outcome)


def predict(
    program: CourtroomProgram | str | Path,
    cases: str | Mapping[str, Any] | Sequence[str | Mapping[str, Any]],
    *,
    concurrency: int = 4,
    lm: str | None = None,
    roles: Mapping[str, str] | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    n_sampling: bool | None = None,
    prompt_layout: str | None = None,
    progress: bool = False,
) -> list[Verdict]:
    """Verdicts for ``cases`` (strings, or dicts with ``case`` and optionally ``id``) from a program.

    ``program`` is a loaded program or the path of a program file (``courtroom compile``). ``lm``
    (every role), ``roles`` (some) and ``api_base``/``timeout`` (the server its models are served
    from; ``api_base`` alone keeps the program's models) and ``n_sampling``/``prompt_layout`` (how
    requests go) apply alike to both, as
    :func:`courtroom.load` applies them; a loaded program is copied, never changed. Cases run
    ``concurrency`` at a time; a case that fails has ``label`` None and its ``error``. Returns one
    :class:`Verdict` per case, in order.
    """
    import dspy

    from courtroom._env import check_environment
    from courtroom.eval.harness import evaluate
    from courtroom.models.cache import configure_cache

    check_environment()
    items = [cases] if isinstance(cases, str | Mapping) else list(cases)
    rows = []
    for n, item in enumerate(items, 1):
        row = {"case": item} if isinstance(item, str) else dict(item)
        if not isinstance(row.get("case"), str) or not row["case"].strip():
            raise ConfigError(f"case {n} is empty: pass a non-empty text, or a dict with a 'case' text")
        rows.append(row)
    configure_cache()
    if isinstance(program, str | Path):
        from courtroom.saving import load_program

        program = load_program(program, lm=lm, roles=dict(roles) if roles else None, api_base=api_base,
                               timeout=timeout, n_sampling=n_sampling, prompt_layout=prompt_layout)  # fmt: skip
    elif lm or roles or any(v is not None for v in (api_base, timeout, n_sampling, prompt_layout)):
        from courtroom.saving import with_models

        program = with_models(program, lm=lm, roles=dict(roles) if roles else None, api_base=api_base,
                              timeout=timeout, n_sampling=n_sampling, prompt_layout=prompt_layout)  # fmt: skip
    _check_keys(program)
    examples = [
        dspy.Example(case=r["case"], label="", id=str(r.get("id", n))).with_inputs("case")
        for n, r in enumerate(rows, 1)
    ]
    from courtroom.models.context import check_context

    check_context(program.lms.models(), ((ex.id, ex.case) for ex in examples))
    results = evaluate(program, examples, concurrency=concurrency)
    return [Verdict(id=r.id, label=r.prediction, error=r.error, transcript=list(r.transcript)) for r in results]


def _check_keys(program: Any) -> None:
    """A model whose provider needs a key that the environment lacks: one line before any case runs."""
    from courtroom.models.lms import check_keys

    check_keys(program.lms)


def report(source: str | Path, out: str | Path = "report.html") -> Path:
    """The self-contained HTML report of a run, repeat group, comparison or study folder (``courtroom report``)."""
    from courtroom._files import check_output
    from courtroom.reporting.html import write_report

    check_output(out, "out", [source])
    return write_report(source, out)


def runs(folder: str | Path | Sequence[str | Path] = ("runs", "comparisons")) -> pd.DataFrame:
    """Past runs, repeat groups and comparisons under ``folder``, newest first (``courtroom runs``)."""
    from courtroom.runner.history import list_runs

    return list_runs(folder)
