"""The keywords of each command function, typed: one ``TypedDict`` per command.

``courtroom.run(..., **options: Unpack[RunOptions])`` and so on: a misspelt keyword or a value of
the wrong type is a type checker's error, not a run-time one. The keys are the spec's fields
(:mod:`courtroom.spec`) that the command's flags set (the one option table,
:data:`courtroom.cli._options.OPTIONS`), named as :meth:`courtroom.spec.Experiment.build` takes
them; a few take the flag's name where it differs from the field's (:data:`KEYWORDS`). Their
types are the fields' types, widened only where the spec takes more: a list field also takes a
comma-separated text or any sequence, a dict field any mapping, a file's field a path
(:data:`PATHS`). ``tests/test_api_options.py`` checks keys and types against the spec and the
option table, so the three cannot drift.

Not keywords: the framework(s) (the functions' first argument), ``--show`` and ``--format`` (what
a command prints) and ``--dry-run`` (:func:`courtroom.estimate`). Nothing here is imported at run
time by anything but type checkers and that test.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any, TypedDict

__all__ = [
    "COMMAND_OPTIONS",
    "KEYWORDS",
    "PATHS",
    "CompareOptions",
    "CompileOptions",
    "EstimateOptions",
    "ExperimentOptions",
    "LoadOptions",
    "RunOptions",
    "ScoreOptions",
    "StudyOptions",
]

KEYWORDS = {"source": "data", "presets": "preset", "optimizer_settings": "settings"}
"""Spec field -> its Python keyword where the two differ (the flag's name: ``--data``, ``--preset``;
``--opt`` is ``settings``). A study's ``optimizer`` is ``compile`` (its flag, ``--compile``)."""

PATHS = ("dataset", "train_data", "dev_data", "test_data", "prices", "out", "export_best")
"""The fields naming a file or folder: their keywords also take a ``pathlib.Path`` (held as its text)."""


class _DataOptions(TypedDict, total=False):
    """Which examples (every experiment command)."""

    task: str | None
    """A registered task (``courtroom tasks``); default ``boolean_expressions``."""
    data: str
    """``--data``: where a registered task's rows come from (auto, generate, hub or a path)."""
    dataset: str | PathLike[str] | None
    """Your own data: a CSV, JSONL, JSON or Parquet file, a Hub id, or a task file (YAML)."""
    text_field: str | Sequence[str]
    """The field(s) that make the case text (a list, or comma-separated)."""
    label_field: str | None
    labels: str | Sequence[str]
    """The label space (a list, or comma-separated)."""
    dataset_config: str | None
    hub_split: str
    train_data: str | PathLike[str] | None
    dev_data: str | PathLike[str] | None
    test_data: str | PathLike[str] | None
    split_sizes: Sequence[float] | None
    """TRAIN, DEV, TEST: fractions or counts."""
    seed: int


class _ModelOptions(TypedDict, total=False):
    """Models per role and how they are called (every experiment command)."""

    lm: str | Sequence[str]
    """The default model for every role (a study: several to choose from)."""
    roles: Mapping[str, str]
    """Role -> model (``--role ROLE=MODEL``)."""
    temperature: float | None
    max_tokens: int | None
    api_base: str | None
    """Base URL of an OpenAI-compatible server."""
    timeout: float | None
    n_sampling: bool | None
    """k samples of one prompt as one request with ``n`` where the model takes it (None: ``$COURTROOM_N_SAMPLING``)."""
    prompt_layout: str | None
    """classic | cache | auto: how prompts are laid out for a provider's cache (None: ``$COURTROOM_PROMPT_LAYOUT``)."""
    concurrency: int | None
    fail_on_error: float | None
    batch: bool
    """Send requests through the provider's batch API (about half price; compile's optimizers stay live)."""


class _DesignOptions(TypedDict, total=False):
    """The design's preset and knobs, what it may spend, where results go (every experiment command)."""

    preset: str | Sequence[str]
    """A paper's configuration (compare: one per framework)."""
    knobs: Mapping[str, Any]
    """Framework knobs (``--set KEY=VALUE``; compare also ``FRAMEWORK.KEY``)."""
    max_calls: int | None
    max_cost: float | None
    prices: str | PathLike[str] | Mapping[str, list[float]] | None
    """A price table file, or model -> [input, output] dollars per 1M tokens."""
    out: str | PathLike[str] | None
    """Where results go (compile: the program file; ``None`` saves nothing)."""
    track: str | None
    """An MLflow tracking URI the results are also logged to (``"env"``: ``$MLFLOW_TRACKING_URI``)."""
    trace: bool
    """With ``track``: every module and LM call recorded as an MLflow trace."""


class _CommonOptions(_DataOptions, _ModelOptions, _DesignOptions, total=False):
    """The options of every experiment command."""

    train_limit: int | None
    metric: str | None
    """What each case scores (``--metric``): ``accuracy``, an installed metric's name, or ``module:function``."""


class RunOptions(_CommonOptions, total=False):
    """The keywords of :func:`courtroom.run` (the flags of ``courtroom run``)."""

    cancel_batches: bool
    """With a resume: cancel the batches the folder has in flight."""
    split: str
    limit: int | None
    debias: str | None
    repeats: int
    ambiguity_k: int
    theta: float


class CompareOptions(RunOptions, total=False):
    """The keywords of :func:`courtroom.compare` (the flags of ``courtroom compare``): run's, and these."""

    suite: str | None
    suite_tasks: str | Sequence[str]
    matched_baselines: bool
    baseline: str
    match: str


class CompileOptions(_CommonOptions, total=False):
    """The keywords of :func:`courtroom.compile` (the flags of ``courtroom compile``)."""

    dev_limit: int | None
    optimizer: str | None
    settings: Mapping[str, Any]
    """Optimizer settings (``--opt KEY=VALUE``)."""
    prompt_lm: str | None
    test_limit: int | None
    """Held-out test examples scored before and after (default 50; 0: none)."""
    keep_better: bool
    """Keep the starting program when the optimized one is worse on dev."""


class StudyOptions(_CommonOptions, total=False):
    """The keywords of :func:`courtroom.study` (the flags of ``courtroom study``)."""

    dev_limit: int | None
    test_limit: int | None
    frameworks: str | Sequence[str]
    """A study across designs (a list, comma-separated, or ``all``)."""
    compile: str | None
    """The optimizer compiling each trial (``--compile``)."""
    settings: Mapping[str, Any]
    search_temperature: bool
    space: Mapping[str, str]
    """Parameter -> ``LOW:HIGH`` or ``a,b`` (``--space``)."""
    objective: str
    cost_objective: bool
    cost_unit: str | None
    trials: int
    storage: str | None
    study_name: str | None
    workers: int
    prune: bool
    pruner: str
    """How a trial stops early: ``race`` (the default) or ``median`` (``--pruner``)."""
    prefer: str | None
    """Which configuration tied with the best is exported and tested: ``best`` or ``cheapest`` (``--prefer``)."""
    race_calls: int | None
    """A cap on the LM requests the study's trials and the race's extra dev cases send together (``--race-calls``)."""
    show_repeats: bool
    export_best: str | PathLike[str] | None


class ScoreOptions(_DataOptions, _ModelOptions, total=False):
    """The keywords of :func:`courtroom.score` (the flags of ``courtroom score``)."""

    split: str
    limit: int | None
    repeats: int
    matched_baselines: bool
    baseline: str
    match: str
    max_calls: int | None
    max_cost: float | None
    prices: str | PathLike[str] | Mapping[str, list[float]] | None
    out: str | PathLike[str] | None
    """The folder that receives the score folder (default ``runs``)."""
    exclude_seen: bool
    """Leave out the cases the program was compiled or chosen on (``--exclude-seen``)."""
    track: str | None
    trace: bool
    metric: str | None
    """What each case scores (``--metric``): ``accuracy``, an installed metric's name, or ``module:function``."""


class LoadOptions(TypedDict, total=False):
    """The model options of :func:`courtroom.load` (and of a program's models given by name)."""

    temperature: float | None
    max_tokens: int | None
    api_base: str | None
    """Base URL of an OpenAI-compatible server the models are served from."""
    timeout: float | None
    """Seconds per request."""
    n_sampling: bool | None
    """k samples of one prompt as one request with ``n`` where the model takes it (None: ``$COURTROOM_N_SAMPLING``)."""
    prompt_layout: str | None
    """classic | cache | auto (None: ``$COURTROOM_PROMPT_LAYOUT``)."""


class EstimateOptions(RunOptions, CompareOptions, CompileOptions, StudyOptions, total=False):
    """Every command's keywords, for :func:`courtroom.estimate` (whose first argument is the framework)."""


class ExperimentOptions(EstimateOptions, total=False):
    """Every field of the spec, for :func:`courtroom.experiment` and :meth:`courtroom.Experiment.build`."""

    framework: str | None
    show: int | None
    format: str
    dry_run: bool
    exclude_seen: bool
    """:func:`courtroom.score`: leave out the cases also in the program's train or dev split."""


COMMAND_OPTIONS: dict[str, type] = {
    "run": RunOptions,
    "compare": CompareOptions,
    "compile": CompileOptions,
    "study": StudyOptions,
    "score": ScoreOptions,
}
"""Command -> its keywords, as the test checks them against the option table."""
