"""The one description of an experiment (SPEC §12): :class:`Experiment`.

Every command describes the same thing: the data, the models per role, the design (framework,
knobs, preset, or several designs), how it executes, its budget and where it writes. That is one
typed object, built once (from the command line's flags, a ``--config`` file, or Python keywords
with :meth:`Experiment.build`), validated once before anything heavy is imported, and passed
whole to run, compare, compile, study, the design study, predict and the dry run.

Its answer-changing part (:meth:`Experiment.identity`) is the identity of a run folder, a
comparison and a study: continuing one under a different spec is refused, naming the fields that
differ (:func:`differences`). Hints (resume, retry, export) are rendered from it
(:meth:`Experiment.command`). It is recorded in every artefact by :meth:`Experiment.to_dict`.

This module imports nothing heavy: it is read by ``courtroom --help`` and by every bad-input error.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from courtroom.errors import ConfigError

__all__ = [
    "Budget",
    "Data",
    "Design",
    "Execution",
    "Experiment",
    "Models",
    "Output",
    "StudySettings",
    "differences",
]

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
    """Study: score the chosen trial(s) on the first N test examples, beside the dev score (None: not)."""

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

    def validate(self) -> None:
        """One-line errors naming the fix, before anything is loaded."""
        if self.split not in SPLITS:
            raise ConfigError(f"unknown split {self.split!r}: use one of {', '.join(SPLITS)}")
        for flag, value in (
            ("--limit", self.limit),
            ("--train-limit", self.train_limit),
            ("--dev-limit", self.dev_limit),
            ("--test-limit", self.test_limit),
        ):
            if value is not None and value < 1:
                raise ConfigError(f"{flag} must be >= 1, got {value}")
        if self.dataset and self.task:
            raise ConfigError("give --task or --dataset, not both (--dataset names your own data)")
        if self.dataset and not _is_task_file(self.dataset):
            missing = [f for f, v in (("--text-field", self.text_field), ("--label-field", self.label_field),
                                      ("--labels", self.labels)) if not v]  # fmt: skip
            if missing:
                raise ConfigError(
                    f"--dataset needs {', '.join(missing)}: e.g. --text-field question,passage "
                    "--label-field answer --labels yes,no (or put them in a task file: --dataset task.yaml)"
                )
        elif not self.dataset and (self.text_field or self.label_field or self.labels):
            raise ConfigError("--text-field, --label-field and --labels go with --dataset FILE_OR_HUB_ID")
        if self.split_sizes is not None:
            check_sizes(self.split_sizes)


def check_sizes(sizes: Sequence[float]) -> None:
    """``--split-sizes``: three fractions summing to at most 1, or three whole counts."""
    example = "e.g. --split-sizes 0.6,0.2,0.2 or --split-sizes 24,8,8"
    if len(sizes) != 3 or any(s < 0 for s in sizes):
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
        if self.timeout is not None and self.timeout <= 0:
            raise ConfigError(f"--timeout must be a positive number of seconds, got {self.timeout:g}")
        check_url(self.api_base)


def check_url(value: str | None) -> None:
    """``--api-base`` must be an http(s) URL with a host."""
    if value is None:
        return
    url = urlsplit(value)
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
    matched_baselines: bool = True
    """compare: a majority-vote row per framework at the same calls (or tokens) per example."""
    baseline: str = "self-consistency"
    match: str = "calls"

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


@dataclass
class Execution:
    """How it runs: concurrency, failures tolerated, repeats, and a study's trials and workers."""

    concurrency: int | None = None
    """LM requests in flight in all (None: 4; on resume, the run's)."""
    fail_on_error: float | None = None
    """Fail when more than this fraction of examples failed (None: 0.1)."""
    repeats: int = 1
    workers: int = 1

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
        if self.max_cost is not None and self.max_cost <= 0:
            raise ConfigError(f"--max-cost must be a positive number of dollars, got {self.max_cost:g}")
        if isinstance(self.prices, str | Path) and not Path(self.prices).is_file():
            raise ConfigError(f"--prices {self.prices}: no such file; pass a JSON or CSV price table")

    def table(self) -> dict[str, list[float]] | None:
        """The price table as a mapping (the file read once)."""
        if self.prices is None:
            return None
        if isinstance(self.prices, Mapping):
            return {k: [float(x) for x in v] for k, v in self.prices.items()}
        from courtroom.eval.metrics import load_prices

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

    def validate(self) -> None:
        """A known ``--format``."""
        check_format(self.format)


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

    def validate(self) -> None:
        """Known objective and cost unit."""
        if self.objective not in ("accuracy", "f1"):
            raise ConfigError(f"unknown objective {self.objective!r}: use accuracy or f1")
        if self.cost_unit not in (None, "calls", "tokens", "dollars"):
            raise ConfigError(f"unknown cost unit {self.cost_unit!r}: use calls, tokens or dollars")
        if self.trials < 0:
            raise ConfigError(f"--trials must be >= 0, got {self.trials}")


SECTIONS = {
    "data": Data,
    "models": Models,
    "design": Design,
    "execution": Execution,
    "budget": Budget,
    "output": Output,
    "study": StudySettings,
}

IDENTITY = {
    "data": ("task", "source", "dataset", "text_field", "label_field", "labels", "dataset_config", "hub_split",
             "train_data", "dev_data", "test_data", "split_sizes", "seed", "split", "limit", "train_limit",
             "dev_limit"),
    "models": ("lm", "roles", "temperature", "max_tokens", "prompt_lm"),
    "design": ("framework", "frameworks", "knobs", "presets", "debias", "optimizer", "optimizer_settings",
               "matched_baselines", "baseline", "match"),
    "study": ("objective", "cost_objective", "cost_unit", "space", "search_temperature"),
    "execution": ("repeats",),
}  # fmt: skip
"""The fields that change answers: a run, comparison or study continued under other values is refused."""

FLAGS = {"source": "--data", "presets": "--preset", "optimizer_settings": "--opt", "knobs": "--set",
         "roles": "--role", "prune": "--no-prune", "lm": "--lm"}  # fmt: skip
"""Field -> its flag where the two names differ (else ``--field-name``)."""


def flag_of(name: str) -> str:
    """The command-line flag of a spec field."""
    return FLAGS.get(name, "--" + name.replace("_", "-"))


@dataclass
class Experiment:
    """One experiment, whole: data, models, design, execution, budget, output and study settings.

    Build it from Python keywords with :meth:`build` (the flat names the CLI's flags use:
    ``Experiment.build(framework="jot", dataset="reviews.csv", text_field="text", ...)``).
    """

    command: str = "run"
    data: Data = field(default_factory=Data)
    models: Models = field(default_factory=Models)
    design: Design = field(default_factory=Design)
    execution: Execution = field(default_factory=Execution)
    budget: Budget = field(default_factory=Budget)
    output: Output = field(default_factory=Output)
    study: StudySettings = field(default_factory=StudySettings)
    given: frozenset[str] = frozenset()
    """The flat names given explicitly (flags, ``--config`` or keywords): what a resume must match."""

    @classmethod
    def build(cls, command: str = "run", **values: Any) -> Experiment:
        """The spec from flat keywords (``limit=5``, ``api_base=...``, ``roles={...}``); unknown ones refused."""
        spec = cls(command=command)
        spec.given = frozenset(spec._apply(values))
        return spec

    def updated(self, **values: Any) -> Experiment:
        """A copy with flat keywords applied as :meth:`build` applies them (they count as given)."""
        new = self.replace()
        new.given = self.given | frozenset(new._apply(values))
        return new

    def _apply(self, values: dict[str, Any]) -> set[str]:
        where = _fields()
        values = dict(values)
        if isinstance(values.get("dataset"), Mapping):  # custom_task's arguments, as a mapping
            custom = dict(values.pop("dataset"))
            values |= {"dataset": custom.get("dataset"), "text_field": custom.get("text_fields"),
                       "label_field": custom.get("label_field"), "labels": custom.get("labels"),
                       "dataset_config": custom.get("config"),
                       "hub_split": custom.get("hub_split") or "train"}  # fmt: skip
        unknown = sorted(k for k in values if k not in where and k not in ALIASES)
        if unknown:
            raise ConfigError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} for {self.command}: "
                f"see `courtroom {self.command} --help` (Python keywords are the flags' names)"
            )
        given = set()
        for key, value in values.items():
            key, value = ALIASES[key](value) if key in ALIASES else (key, value)
            section = getattr(self, where[key])
            setattr(
                section,
                key,
                [value] if key == "lm" and isinstance(value, str) else _coerce(getattr(section, key), value),
            )
            if value is not None:
                given.add(key)
        return given

    def validate(self) -> Experiment:
        """Every section's cheap checks (no heavy import); returns itself."""
        self.data.validate()
        self.models.validate()
        self.design.validate(self.command)
        self.execution.validate()
        self.budget.validate()
        self.output.validate()
        self.study.validate()
        return self

    def replace(self, **values: Any) -> Experiment:
        """A copy with flat fields replaced (``spec.replace(framework="cot", limit=3)``)."""
        new = dataclasses.replace(self, **{s: dataclasses.replace(getattr(self, s)) for s in SECTIONS})
        where = _fields()
        for key, value in values.items():
            setattr(getattr(new, where[key]), key, value)
        return new

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready sections, for every artefact; never the base URL or a key."""
        out: dict[str, Any] = {"command": self.command}
        for name in SECTIONS:
            out[name] = dataclasses.asdict(getattr(self, name))
        out["models"].pop("api_base")  # a server URL may carry credentials; never on disk
        if isinstance(out["budget"]["prices"], Path):
            out["budget"]["prices"] = str(out["budget"]["prices"])
        return json.loads(json.dumps(out, default=str))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Experiment:
        """The spec recorded by :meth:`to_dict` (unknown fields of newer versions ignored)."""
        spec = cls(command=str(data.get("command", "run")))
        for name, section_cls in SECTIONS.items():
            names = {f.name for f in dataclasses.fields(section_cls)}
            values = {k: v for k, v in dict(data.get(name) or {}).items() if k in names}
            setattr(spec, name, section_cls(**values))
        return spec

    def identity(self) -> dict[str, Any]:
        """The answer-changing fields, flat: ``{"data.dev_limit": 20, "models.lm": [...], ...}``."""
        return {f"{s}.{k}": _plain(getattr(getattr(self, s), k)) for s, keys in IDENTITY.items() for k in keys}

    def runtime_flags(self) -> list[str]:
        """The options a resume or retry needs again because no artefact records them.

        A run folder, comparison or study records its answer-changing spec, so a hint adds only
        what it cannot read back: the server's URL (never written to disk) and, when given, the
        timeout, the concurrency and the price table.
        """
        m, b = self.models, self.budget
        out: list[str] = []
        for name, value in (("api_base", m.api_base), ("timeout", m.timeout),
                            ("concurrency", self.execution.concurrency),
                            ("prices", b.prices if isinstance(b.prices, str | Path) else None)):  # fmt: skip
            if value is not None and (name == "api_base" or name in self.given):
                out += [flag_of(name), _without_password(_shown(value))]
        return out

    def command_line(self, *args: str) -> str:
        """``courtroom COMMAND ARGS`` plus :meth:`runtime_flags`, quoted for a shell."""
        return " ".join(["courtroom", self.command, *(shlex.quote(a) for a in [*args, *self.runtime_flags()])])

    def describe(self) -> str:
        """One line for plot subtitles and report headers: task, models, sizes."""
        d, m = self.data, self.models
        bits = [d.task_name]
        if m.lm or m.roles:
            bits.append("models " + ", ".join([*m.lm, *(f"{r}={v}" for r, v in sorted(m.roles.items()))]))
        sizes = [f"{k} {v}" for k, v in (("n", d.limit), ("train", d.train_limit), ("dev", d.dev_limit)) if v]
        return "; ".join(bits + sizes)


def _fields() -> dict[str, str]:
    """Flat field name -> its section."""
    out = {}
    for section, cls in SECTIONS.items():
        for f in dataclasses.fields(cls):
            out[f.name] = section
    return out


def _split_list(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    return [str(v).strip() for v in value if str(v).strip()]


ALIASES: dict[str, Any] = {
    "preset": lambda v: ("presets", [] if v is None else [v] if isinstance(v, str) else list(v)),
    "sets": lambda v: ("knobs", v),
    "data_source": lambda v: ("source", v),
    "data": lambda v: ("source", v),
    "text_fields": lambda v: ("text_field", v),
    "settings": lambda v: ("optimizer_settings", v),
    "compile": lambda v: ("optimizer", v),
    "compile_settings": lambda v: ("optimizer_settings", v),
    "report": lambda v: ("out", v),
    "output": lambda v: ("out", v),
    "dev": lambda v: ("dev_limit", v),
    "models": lambda v: ("lm", v),
    "train": lambda v: ("train_limit", v),
}
"""Python keyword spellings of earlier releases -> the field they set (the CLI has one name per option)."""


def _coerce(current: Any, value: Any) -> Any:
    """``value`` in the shape of the field it replaces (lists from comma text, dicts from mappings)."""
    if value is None:
        return None if not isinstance(current, list | dict) else type(current)()
    if isinstance(current, list):
        if isinstance(value, str):
            return _split_list(value) if "," in value else [value]
        return list(value)
    if isinstance(current, dict):
        return dict(value)
    return value


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str, sort_keys=True))


def _without_password(text: str) -> str:
    """A URL's password as the placeholder PASSWORD: a hint is printed, and never shows a secret."""
    url = urlsplit(text)
    if not url.password:
        return text
    return text.replace(f":{url.password}@", ":PASSWORD@", 1)


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def parse_value(text: str) -> Any:
    """JSON scalars where they parse (3, 0.5, true), strings otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def typed_value(key: str, text: str, default: Any, flag: str = "--set") -> Any:
    """``text`` parsed strictly as the type of ``default``; one line naming the valid values if not.

    A bool takes true or false; an int a whole number (2.5 is refused); a float any number; a
    string any text. A setting whose default is None takes none, true/false, a number or text.
    """
    low = text.strip().lower()
    if isinstance(default, bool):
        if low in ("true", "false"):
            return low == "true"
        raise ConfigError(f"{flag} {key}={text!r}: {key} is true or false")
    if isinstance(default, int):
        try:
            return int(low)
        except ValueError:
            raise ConfigError(f"{flag} {key}={text!r}: {key} is a whole number, e.g. {key}={default}") from None
    if isinstance(default, float):
        try:
            return float(low)
        except ValueError:
            raise ConfigError(f"{flag} {key}={text!r}: {key} is a number, e.g. {key}={default}") from None
    if isinstance(default, str):
        # Optimizer settings such as mipro's auto take none (no budget); framework knobs do not.
        return None if flag == "--opt" and low in ("none", "null") else text.strip()
    if default is None and low in ("none", "null"):
        return None
    return parse_value(text.strip())


def typed_knobs(values: Mapping[str, Any], defaults: Mapping[str, Any], flag: str = "--set") -> dict[str, Any]:
    """Knob (or optimizer setting) values typed by their defaults: texts from flags are parsed strictly.

    A value that already has a type (from Python or a config file) is kept; a text given for a
    setting whose default is not text is parsed as the default's type (one line if it cannot be).
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        default = defaults.get(key.rpartition(".")[2] if key not in defaults else key)
        if isinstance(value, str) and (key in defaults or key.rpartition(".")[2] in defaults):
            out[key] = typed_value(key, value, default, flag)
        elif isinstance(value, str):
            out[key] = parse_value(value)
        else:
            out[key] = value
    return out


def differences(recorded: Mapping[str, Any], spec: Experiment, *, given: Iterable[str] | None = None) -> list[str]:
    """The identity fields where ``spec`` differs from a ``recorded`` identity, as ``name (was X, now Y)``.

    ``given`` limits the check to the flat names given explicitly (a resume names only what it changes);
    fields missing from ``recorded`` (an artefact of an older version) are not compared.
    """
    now = spec.identity()
    wanted = None if given is None else set(given)
    out = []
    for key, value in now.items():
        if key not in recorded or (wanted is not None and key.split(".", 1)[1] not in wanted):
            continue
        if _plain(recorded[key]) != value:
            out.append(f"{flag_of(key.split('.', 1)[1])} (was {_brief(recorded[key])}, now {_brief(value)})")
    return out


def _brief(value: Any) -> str:
    if value in (None, [], {}):
        return "unset"
    return json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
