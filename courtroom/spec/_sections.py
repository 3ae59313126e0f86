"""The sections of an experiment spec, each with its cheap checks.

:class:`Data` (which examples), :class:`Models` (models per role), :class:`Design` (what runs),
:class:`Execution` (how it runs), :class:`Budget` (what it may spend), :class:`Output` (where
results go) and :class:`StudySettings` (an Optuna study's own settings), with the checks of single
options the CLI shares (:func:`check_amount`, :func:`check_sizes`, :func:`check_url`, :func:`check_format`).

They are the parts of :class:`~courtroom.spec.Experiment`; import them from :mod:`courtroom.spec`.
This module imports nothing heavy: it is read by ``courtroom --help`` and by every bad-input error.
"""

from __future__ import annotations

import importlib.util
import math
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from courtroom.errors import ConfigError
from courtroom.models._layout_names import LAYOUTS as PROMPT_LAYOUTS

SPLITS = ("train", "dev", "test")
DEFAULT_FRACTIONS = (0.2, 0.2, 0.6)


@dataclass
class Data:
    """Which examples: a registered task or the user's own dataset, its fields, labels and splits."""

    task: str | None = None
    """Registered task (``courtroom tasks``); None: ``boolean_expressions`` unless ``dataset`` is set."""
    source: str = "auto"
    """``--data``: auto | generate | hub | PATH, where a registered task's rows come from."""
    dataset: str | None = None
    """``--dataset``: the user's own file (CSV, JSONL, JSON, Parquet), a Hub id, or a task file (YAML)."""
    text_field: list[str] = field(default_factory=list)
    label_field: str | None = None
    labels: list[str] = field(default_factory=list)
    dataset_config: str | None = None
    """Hub config name of ``dataset``."""
    hub_split: str = "train"
    """The Hub split re-split into train/dev/test when no split of its own is named."""
    train_data: str | None = None
    """The train split as its own file, or (with a Hub ``dataset``) the name of its Hub split."""
    dev_data: str | None = None
    test_data: str | None = None
    split_sizes: list[float] | None = None
    """``--split-sizes TRAIN,DEV,TEST``: fractions (summing to at most 1) or counts; default 0.2,0.2,0.6."""
    seed: int = 0
    split: str = "test"
    """The split ``run`` and ``compare`` evaluate."""
    limit: int | None = None
    train_limit: int | None = None
    """At most this many training examples (None: all for run/compare, 20 for compile/study)."""
    dev_limit: int | None = None
    """Dev examples scored before/after compiling or by each study trial (None: 20)."""
    test_limit: int | None = None
    """Held-out test examples (0: none). Compile: scores the starting and optimized program on them (None: 50).
    Study: scores the chosen trial(s) on them, beside the dev score."""
    exclude_seen: bool = False
    """``courtroom score``: leave out the cases whose text is also in the program's train or dev split
    (without it they are scored, with a warning, and counted in the summary's ``seen``)."""

    @property
    def task_name(self) -> str:
        """The registered task, or ``custom:NAME`` for the user's own dataset."""
        if self.dataset:
            stem = Path(self.dataset).stem if _looks_local(self.dataset) else self.dataset
            return f"custom:{stem}"
        return self.task or "boolean_expressions"

    def custom(self) -> dict[str, Any] | None:
        """The :func:`courtroom.data.tasks.custom_task` arguments of ``dataset`` (None for a registered task)."""
        if not self.dataset:
            return None
        if _is_task_file(self.dataset):
            return {"task_file": self.dataset}
        return {
            "dataset": self.dataset,
            "text_fields": list(self.text_field),
            "label_field": str(self.label_field),
            "labels": list(self.labels),
            "config": self.dataset_config,
            "hub_split": self.hub_split,
        }

    def splits(self) -> dict[str, Any] | None:
        """How the examples are split: sizes and the splits given as their own files (None: 20/20/60)."""
        files = {s: getattr(self, f"{s}_data") for s in SPLITS if getattr(self, f"{s}_data")}
        if not files and self.split_sizes is None:
            return None
        return {"sizes": list(self.split_sizes) if self.split_sizes else None, "files": files}

    def check_fields(self) -> None:
        """``--dataset``'s text and label fields and its labels are named (a known shape's fields are taken).

        Else one error names each missing flag with values taken from the file, quoted for the shell.
        """
        if not (self.text_field and self.label_field and self.labels):
            check_dataset_path(self.dataset or "")  # a misspelled path is no reason to ask for fields
        rows = _first_rows(self.dataset or "") if not (self.text_field and self.label_field and self.labels) else []
        fields = [str(f) for f in rows[0]] if rows else []
        known = next(((t, lab) for t, lab in KNOWN_FIELDS if t in fields and lab in fields), None)
        if known and not self.text_field and not self.label_field:  # BIG-Bench-Hard's input/target, ...
            self.text_field, self.label_field = [known[0]], known[1]
        missing = [f for f, v in (("--text-field", self.text_field), ("--label-field", self.label_field),
                                  ("--labels", self.labels)) if not v]  # fmt: skip
        if missing:
            text = ",".join(self.text_field) or (known[0] if known else ",".join(fields[:1]) or "question,passage")
            label = self.label_field or (known[1] if known else (fields[-1] if len(fields) > 1 else "answer"))
            values = sorted({str(r.get(label)) for r in rows if r.get(label) is not None})
            labels = ",".join(self.labels) or (",".join(values) if 1 < len(values) <= 10 else "yes,no")
            own = f" (its fields: {', '.join(fields)})" if fields else ""
            example = " ".join(f"{flag} {shlex.quote(value)}" for flag, value in
                               (("--text-field", text), ("--label-field", label), ("--labels", labels)))  # fmt: skip
            raise ConfigError(
                f"--dataset needs {', '.join(missing)}{own}: e.g. {example} "
                "(or put them in a task file: --dataset task.yaml)"
            )

    def validate(self, command: str = "run") -> None:
        """One-line errors naming the fix, before anything is loaded (``predict`` reads fields of ``--input``)."""
        if self.split not in SPLITS:
            raise ConfigError(f"unknown split {self.split!r}: use one of {', '.join(SPLITS)}")
        for flag, value in (
            ("--limit", self.limit),
            ("--train-limit", self.train_limit),
            ("--dev-limit", self.dev_limit),
        ):
            if value is not None and value < 1:
                raise ConfigError(f"{flag} must be >= 1, got {value}")
        if self.test_limit is not None and self.test_limit < 0:
            raise ConfigError(f"--test-limit must be >= 0 (0: no test scoring), got {self.test_limit}")
        if self.dataset and self.task:
            raise ConfigError("give --task or --dataset, not both (--dataset names your own data)")
        if self.dataset and not _is_task_file(self.dataset):
            if command != "score":  # score reads a file of its program's shape with the program's fields
                self.check_fields()
        elif command == "predict" and self.label_field and not self.text_field:
            raise ConfigError("--label-field goes with --text-field FIELD: the field(s) of --input that make the case")
        elif command != "predict" and not self.dataset and (self.text_field or self.label_field or self.labels):
            raise ConfigError("--text-field, --label-field and --labels go with --dataset FILE_OR_HUB_ID")
        if self.split_sizes is not None:
            check_sizes(self.split_sizes)


def check_amount(flag: str, value: float | None, unit: str, *, zero: bool = False) -> None:
    """``value`` must be a finite number above 0 (``zero``: at least 0); NaN and infinity switch limits off."""
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or (value == 0 and not zero):
        bound = ">= 0" if zero else "> 0"
        raise ConfigError(f"{flag} must be a finite number {bound} ({unit}), got {value:g}")


def check_sizes(sizes: Sequence[float]) -> None:
    """``--split-sizes``: three fractions summing to at most 1, or three whole counts."""
    example = "e.g. --split-sizes 0.6,0.2,0.2 or --split-sizes 24,8,8"
    if len(sizes) != 3 or not all(math.isfinite(s) and s >= 0 for s in sizes):
        raise ConfigError(f"--split-sizes takes three non-negative sizes TRAIN,DEV,TEST: {example}")
    fractions = all(s <= 1 for s in sizes) and any(0 < s < 1 for s in sizes)
    if fractions and sum(sizes) > 1 + 1e-9:
        raise ConfigError(f"--split-sizes fractions sum to {sum(sizes):g} > 1: {example}")
    if not fractions and any(float(s) != int(s) for s in sizes):
        raise ConfigError(f"--split-sizes mixes counts and fractions: {example}")


def _looks_local(name: str) -> bool:
    return Path(name).expanduser().exists() or Path(name).suffix.lower() in (
        ".json", ".jsonl", ".csv", ".parquet", ".yaml", ".yml",
    )  # fmt: skip


KNOWN_FIELDS = (("input", "target"), ("case", "label"), ("text", "label"), ("sentence", "label"),
                ("question", "answer"))  # fmt: skip
"""(text, label) field pairs taken without --text-field/--label-field when a file has them (BIG-Bench-Hard:
``input``/``target``); the first pair a file has wins."""


LOCAL_SUFFIXES = (".json", ".jsonl", ".csv", ".parquet", ".yaml", ".yml")
"""Endings that make ``--dataset`` a file, not a Hub id (``OWNER/NAME`` has none)."""


def check_dataset_path(dataset: str) -> None:
    """A ``--dataset`` that names a file (by its ending or a leading ``./``, ``/``, ``~``) must exist.

    Said before the fields are asked for: a misspelled path is no reason to name ``--text-field``.
    """
    path = Path(dataset).expanduser()
    local = path.suffix.lower() in LOCAL_SUFFIXES or dataset.startswith(("./", "../", "/", "~"))
    if not local or path.exists():
        return
    import difflib

    folder = path.parent
    try:
        names = [p.name for p in folder.iterdir()] if folder.is_dir() else []
    except OSError:
        names = []
    near = difflib.get_close_matches(path.name, names, n=1)
    hint = f"did you mean {folder / near[0] if str(folder) != '.' else near[0]}?" if near else "check the path"
    raise ConfigError(
        f"--dataset {dataset}: no such file: {hint} (a Hub dataset is named OWNER/NAME, with no file ending)"
    )


def _first_rows(dataset: str, n: int = 200) -> list[dict[str, Any]]:
    """The first rows of a local data file (none for a Hub id or a file that cannot be read: the load says why)."""
    if not Path(dataset).expanduser().is_file():
        return []
    from courtroom.data.custom import read_file

    try:
        rows = read_file(Path(dataset).expanduser())
    except Exception:  # noqa: BLE001 - reading it for real names the problem
        return []
    return [r for r in rows[:n] if isinstance(r, dict)]


def _is_task_file(name: str) -> bool:
    return Path(name).suffix.lower() in (".yaml", ".yml")


@dataclass
class Models:
    """Models per role: one default (or several for a study to choose from), overrides, and their options."""

    lm: list[str] = field(default_factory=list)
    """The default model for every role; several (a study only) let the study choose one per role."""
    roles: dict[str, str] = field(default_factory=dict)
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    """Base URL of an OpenAI-compatible server; never written to disk."""
    timeout: float | None = None
    prompt_lm: str | None = None
    """The optimizer's own model (compile; default: the judge's)."""
    n_sampling: bool | None = None
    """``--n-sampling/--no-n-sampling``: k samples of one prompt as one request with ``n`` where the model
    takes it (:mod:`courtroom.models.sampling`); None: ``$COURTROOM_N_SAMPLING``, else on. Answers do not
    depend on it."""
    prompt_layout: str | None = None
    """``--prompt-layout``: classic | cache | auto (:mod:`courtroom.models._layout`); None:
    ``$COURTROOM_PROMPT_LAYOUT``, else auto (the cheaper by the cost model); ``classic`` under a
    paper preset unless given."""

    @property
    def default(self) -> str | None:
        """The default model's name (the first ``lm``)."""
        return self.lm[0] if self.lm else None

    def validate(self) -> None:
        """Bounds and the ``--api-base`` URL."""
        if self.temperature is not None and not 0 <= self.temperature <= 2:
            raise ConfigError(f"--temperature must be in [0, 2], got {self.temperature:g}")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ConfigError(f"--max-tokens must be >= 1, got {self.max_tokens}")
        check_amount("--timeout", self.timeout, "seconds")
        check_url(self.api_base)
        if self.prompt_layout is not None and self.prompt_layout not in PROMPT_LAYOUTS:
            raise ConfigError(f"--prompt-layout {self.prompt_layout!r}: use one of {', '.join(PROMPT_LAYOUTS)}")


def check_url(value: str | None) -> None:
    """``--api-base`` must be an http(s) URL with a host."""
    if value is None:
        return
    url = urlsplit(value)
    try:
        url.port  # noqa: B018 - raises on a port out of range (http://127.0.0.1:99999/v1)
    except ValueError:
        raise ConfigError(f"--api-base {value!r}: the port must be a number from 1 to 65535") from None
    if url.scheme not in ("http", "https") or not url.hostname:
        got = "no host" if url.scheme in ("http", "https") else f"scheme {url.scheme!r}" if url.scheme else "no scheme"
        raise ConfigError(
            f"--api-base {value!r}: use an http:// or https:// URL with a host, e.g. http://localhost:8000/v1 ({got})"
        )


@dataclass
class Design:
    """What runs: one framework (or a paper preset), several (compare, design study), their knobs."""

    framework: str | None = None
    frameworks: list[str] = field(default_factory=list)
    knobs: dict[str, Any] = field(default_factory=dict)
    """``--set KEY=VALUE`` (compare: also ``FRAMEWORK.KEY=VALUE``)."""
    presets: list[str] = field(default_factory=list)
    """Paper presets (run and compile: one; compare: one per framework it names)."""
    suite: str | None = None
    suite_tasks: list[str] = field(default_factory=list)
    debias: str | None = None
    optimizer: str | None = None
    """compile: the DSPy optimizer; study: the optimizer compiling each trial (``--compile``)."""
    optimizer_settings: dict[str, Any] = field(default_factory=dict)
    """``--opt KEY=VALUE``."""
    keep_better: bool = False
    """compile: save the starting program when the optimized one scores lower on dev."""
    matched_baselines: bool = True
    """compare: a majority-vote row per framework at the same calls (or tokens) per example."""
    baseline: str = "self-consistency"
    match: str = "calls"
    metric: str | None = None
    """``--metric``: what each case scores, a DSPy metric ``metric(example, prediction, trace=None)``: a
    registered name (``accuracy``, an installed package's) or ``module:function``; None: ``accuracy``.
    Under another metric, accuracy is its mean over the cases (:mod:`courtroom.eval.metrics`)."""

    @property
    def preset(self) -> str | None:
        """The one preset of run, compile and study."""
        return self.presets[0] if self.presets else None

    def validate(self, command: str) -> None:
        """Cheap checks; names are checked against the registries once they are imported."""
        if command in ("run", "compile", "study") and len(self.presets) > 1:
            raise ConfigError(f"`courtroom {command}` takes one --preset (compare takes one per framework)")
        if self.debias not in (None, "swap", "swap-vote"):
            raise ConfigError(f"--debias {self.debias!r}: use one of swap, swap-vote")
        if self.metric is not None and not str(self.metric).strip():
            raise ConfigError("--metric needs a name or MODULE:FUNCTION, e.g. --metric accuracy")


@dataclass
class Execution:
    """How it runs: concurrency, failures tolerated, repeats, and a study's trials and workers."""

    concurrency: int | None = None
    """LM requests in flight in all (None: 4; on resume, the run's)."""
    fail_on_error: float | None = None
    """Fail when more than this fraction of examples failed (None: 0.1)."""
    repeats: int = 1
    workers: int = 1
    batch: bool = False
    """``--batch``: requests go through the provider's batch API (about half price; minutes to hours)."""
    cancel_batches: bool = False
    """``--cancel-batches`` (with ``--resume``): cancel the batches in flight that the folder records."""

    def validate(self) -> None:
        """Bounds."""
        if self.concurrency is not None and self.concurrency < 1:
            raise ConfigError(f"--concurrency must be >= 1, got {self.concurrency}")
        if self.fail_on_error is not None and not 0 <= self.fail_on_error <= 1:
            raise ConfigError(
                f"--fail-on-error must be a fraction in [0, 1] (got {self.fail_on_error:g}): "
                "e.g. 0.1, or 1 to never fail"
            )
        if self.repeats < 1 or self.workers < 1:
            raise ConfigError("--repeats and --workers must be >= 1")

    @property
    def threshold(self) -> float:
        """``fail_on_error`` with its default."""
        from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR

        return DEFAULT_FAIL_ON_ERROR if self.fail_on_error is None else float(self.fail_on_error)


@dataclass
class Budget:
    """What it may spend, and the prices that turn tokens into dollars."""

    max_calls: int | None = None
    max_cost: float | None = None
    prices: str | dict[str, list[float]] | None = None
    """A price table file (JSON or CSV) or its mapping: model -> [input, output] dollars per 1M tokens."""
    dry_run: bool = False

    def validate(self) -> None:
        """Positive limits and a readable price table."""
        if self.max_calls is not None and self.max_calls < 1:
            raise ConfigError(f"--max-calls must be >= 1, got {self.max_calls}")
        check_amount("--max-cost", self.max_cost, "dollars")
        if isinstance(self.prices, str | Path) and not Path(self.prices).is_file():
            raise ConfigError(f"--prices {self.prices}: no such file; pass a JSON or CSV price table")
        if isinstance(self.prices, Mapping):
            self.table()  # a NaN or negative price would switch --max-cost off

    def table(self) -> dict[str, list[float]] | None:
        """The price table as a mapping (the file read once)."""
        if self.prices is None:
            return None
        from courtroom.eval.metrics import load_prices, price_pair

        if isinstance(self.prices, Mapping):
            return {str(k): price_pair(k, v, "prices") for k, v in self.prices.items()}

        return load_prices(self.prices)


FORMATS = ("table", "md", "csv", "json")
"""The values of ``--format``."""


def check_format(value: str) -> str:
    """``value`` if it is one of :data:`FORMATS`."""
    if value not in FORMATS:
        raise ConfigError(f"--format {value!r}: use {', '.join(FORMATS)}")
    return value


@dataclass
class Output:
    """Where results go, and what is printed or analysed after."""

    out: str | None = None
    """run: the folder of run folders (runs); compare: comparisons; compile: the program file
    (program.json); study: the report folder (studies/NAME); predict: a JSONL file (stdout)."""
    show: int | None = None
    ambiguity_k: int = 0
    theta: float = 0.5
    export_best: str | None = None
    format: str = "table"
    """What the command prints on stdout: table (key columns at the terminal's width), md, csv or json."""
    track: str | None = None
    """``--track URI``: an MLflow tracking server or store the results are also logged to (``env``:
    ``$MLFLOW_TRACKING_URI``); :mod:`courtroom.tracking`."""
    trace: bool = False
    """``--trace``: with ``track``, MLflow's DSPy autolog records every module and LM call as a trace."""

    def validate(self) -> None:
        """A known ``--format``, a finite ``--theta`` and a ``--track`` that names a place."""
        check_format(self.format)
        check_amount("--theta", self.theta, "a D_rate threshold", zero=True)
        if self.track is not None and not self.track.strip():
            raise ConfigError("--track needs a tracking URI, e.g. --track http://127.0.0.1:5000 or --track env")
        if self.track == "env" and not os.environ.get("MLFLOW_TRACKING_URI", "").strip():
            raise ConfigError("--track env reads $MLFLOW_TRACKING_URI, which is not set: set it or give --track URI")
        if self.track is not None:
            from courtroom.tracking._uri import check_uri

            env = self.track == "env"
            check_uri(os.environ["MLFLOW_TRACKING_URI"].strip() if env else self.track,
                      "--track env: $MLFLOW_TRACKING_URI" if env else "--track")  # fmt: skip
        if self.track is not None and importlib.util.find_spec("mlflow") is None:
            raise ConfigError("--track needs MLflow: pip install 'courtroom[mlflow]'")
        if self.trace and self.track is None:
            raise ConfigError("--trace goes with --track URI: the traces are logged to that MLflow tracking server")


@dataclass
class StudySettings:
    """An Optuna study's own settings (``courtroom study``)."""

    trials: int = 20
    storage: str | None = None
    study_name: str | None = None
    objective: str = "accuracy"
    cost_objective: bool = False
    cost_unit: str | None = None
    space: dict[str, str] = field(default_factory=dict)
    search_temperature: bool = False
    prune: bool = True
    pruner: str = "race"
    prefer: str | None = None
    race_calls: int | None = None
    """``--race-calls``: a cap on the LM requests the study's trials and the race's extra dev cases send together."""
    show_repeats: bool = False

    def validate(self) -> None:
        """Known objective, cost unit, pruner and preference."""
        if self.objective not in ("accuracy", "f1"):
            raise ConfigError(f"unknown objective {self.objective!r}: use accuracy or f1")
        if self.cost_unit not in (None, "calls", "tokens", "dollars"):
            raise ConfigError(f"unknown cost unit {self.cost_unit!r}: use calls, tokens or dollars")
        if self.pruner not in ("race", "median"):
            raise ConfigError(f"unknown --pruner {self.pruner!r}: use race or median (or --no-prune)")
        if self.prefer not in (None, "best", "cheapest"):
            raise ConfigError(f"unknown --prefer {self.prefer!r}: use best or cheapest")
        if self.trials < 0:
            raise ConfigError(f"--trials must be >= 0, got {self.trials}")
        if self.race_calls is not None and self.race_calls < 1:
            raise ConfigError(f"--race-calls must be >= 1, got {self.race_calls}")
        if self.storage is not None:
            from courtroom.optimize.study._storage import is_journal, journal_path

            if is_journal(self.storage):
                journal_path(self.storage)
        if self.study_name is not None and not 0 < len(self.study_name.encode()) <= 200:
            raise ConfigError(
                f"--study-name is {len(self.study_name)} characters: use 1 to 200 (it names the folder studies/NAME)"
            )


def pruning_conflict(
    *,
    prune: bool,
    pruner: str,
    objective: str,
    race_calls: int | None,
    budget: str | None = None,
    pruner_given: bool = False,
) -> str | None:
    """Why a study's pruning flags cannot all hold (one line), or None.

    ``--race-calls`` caps a racing study (trials and the race's extra cases), so it is refused
    where nothing races: ``--no-prune``, ``--pruner median``, ``--objective f1`` (the race pairs
    right and wrong cases), or beside ``budget`` (``--max-calls``/``--max-cost``, another cap).
    ``--pruner`` given with ``--no-prune``, or ``--pruner race`` with ``--objective f1``, loses to
    the other flag: refused too, rather than one of them dropped in silence.
    """
    if pruner_given and not prune:
        return f"--pruner {pruner} and --no-prune contradict each other: keep one"
    if pruner_given and pruner == "race" and objective != "accuracy":
        return (
            f"--pruner race pairs right and wrong cases, which --objective {objective} does not score: "
            "use --pruner median (the default with it) or --objective accuracy"
        )
    if race_calls is None:
        return None
    why = (
        "--no-prune scores every trial on every case"
        if not prune
        else "--pruner median does not race"
        if pruner != "race"
        else f"--objective {objective} does not race (only accuracy does)"
        if objective != "accuracy"
        else f"{budget} caps the study already"
        if budget
        else None
    )
    if why is None:
        return None
    return f"--race-calls caps a racing study, and {why}: drop --race-calls" + (
        f" or {budget}" if budget and prune and pruner == "race" and objective == "accuracy" else ""
    )
