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

Here: :class:`Experiment`, the tables of its answer-changing fields and flags (``IDENTITY``,
``FLAGS``) and :func:`differences`. Its sections (:class:`Data`, :class:`Models`, :class:`Design`,
:class:`Execution`, :class:`Budget`, :class:`Output`, :class:`StudySettings`) and their checks are
defined in :mod:`courtroom.spec._sections`, the parsing of setting values given as text
(:func:`parse_value`, :func:`typed_value`, :func:`typed_knobs`) in :mod:`courtroom.spec._values`;
all are importable from :mod:`courtroom.spec`.

This module imports nothing heavy: it is read by ``courtroom --help`` and by every bad-input error.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from courtroom._secrets import without_password
from courtroom.errors import ConfigError, did_you_mean
from courtroom.spec._sections import Budget, Data, Design, Execution, Models, Output, StudySettings, pruning_conflict

if TYPE_CHECKING:  # the keywords' types, for type checkers only (courtroom.api imports this module)
    from courtroom.api._options import ExperimentOptions

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
             "dev_limit", "exclude_seen"),
    "models": ("lm", "roles", "temperature", "max_tokens", "prompt_lm", "prompt_layout"),
    "design": ("framework", "frameworks", "knobs", "presets", "debias", "optimizer", "optimizer_settings",
               "matched_baselines", "baseline", "match", "metric"),
    "study": ("objective", "cost_objective", "cost_unit", "space", "search_temperature"),
    "execution": ("repeats",),
}  # fmt: skip
"""The fields that change answers: a run, comparison or study continued under other values is refused."""

DATA_SOURCE = ("task", "source", "dataset", "text_field", "label_field", "labels", "dataset_config", "hub_split",
               "train_data", "dev_data", "test_data", "split_sizes", "seed")  # fmt: skip
"""The data fields that name the examples and their splits (not how many are used): what travels whole
from a study to its recipe, and from a compiled program to ``courtroom score``."""

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
    def build(cls, command: str = "run", **values: Unpack[ExperimentOptions]) -> Experiment:
        """The spec from flat keywords (``limit=5``, ``api_base=...``, ``roles={...}``); unknown ones refused."""
        spec = cls(command=command)
        spec.given = frozenset(spec._apply(values))
        return spec

    def updated(self, **values: Unpack[ExperimentOptions]) -> Experiment:
        """A copy with flat keywords applied as :meth:`build` applies them (they count as given)."""
        new = self.replace()
        new.given = self.given | frozenset(new._apply(values))
        return new

    def _apply(self, values: Mapping[str, Any]) -> set[str]:
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
            named = ", ".join(k + did_you_mean(k, [*where, *ALIASES]) for k in unknown)
            raise ConfigError(
                f"unknown option{'s' if len(unknown) > 1 else ''} {named} for {self.command}: "
                f"see `courtroom {self.command} --help` (Python keywords are the flags' names)"
            )
        given = set()
        for key, value in values.items():
            key, value = ALIASES[key](value) if key in ALIASES else (key, value)
            if isinstance(value, os.PathLike):  # a file or folder given as a Path is held as its text
                value = os.fspath(value)
            section = getattr(self, where[key])
            setattr(
                section,
                key,
                [value] if key == "lm" and isinstance(value, str) else _coerce(getattr(section, key), value),
            )
            if value is not None:
                given.add(key)
        if self.design.presets and self.models.prompt_layout is None:
            # A paper preset reproduces the paper's prompts: DSPy's layout, unless --prompt-layout says otherwise.
            self.models.prompt_layout = "classic"
        return given

    def validate(self) -> Experiment:
        """Every section's cheap checks (no heavy import); returns itself."""
        self.data.validate(self.command)
        self.models.validate()
        self.design.validate(self.command)
        self.execution.validate()
        self.budget.validate()
        self.output.validate()
        self.study.validate()
        if self.command == "study":
            self._check_pruning()
        return self

    def _check_pruning(self) -> None:
        """Pruning flags that cannot all hold (:func:`~courtroom.spec._sections.pruning_conflict`): one line."""
        st, b = self.study, self.budget
        limits = [f for f, v in (("--max-calls", b.max_calls), ("--max-cost", b.max_cost)) if v is not None]
        why = pruning_conflict(
            prune=st.prune, pruner=st.pruner, objective=st.objective, race_calls=st.race_calls,
            budget=" and ".join(limits) or None, pruner_given="pruner" in self.given,
        )  # fmt: skip
        if why:
            raise ConfigError(why)

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
        if out["study"]["storage"]:  # nor a storage's password
            out["study"]["storage"] = without_password(out["study"]["storage"])
        if out["output"]["track"]:  # nor a tracking server's
            out["output"]["track"] = without_password(out["output"]["track"])
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
        timeout, the concurrency, the price table and the tracking URI.
        """
        m, b = self.models, self.budget
        out: list[str] = []
        for name, value in (("api_base", m.api_base), ("timeout", m.timeout),
                            ("concurrency", self.execution.concurrency),
                            ("prices", b.prices if isinstance(b.prices, str | Path) else None),
                            ("track", self.output.track)):  # fmt: skip
            if value is not None and (name == "api_base" or name in self.given):
                out += [flag_of(name), without_password(_shown(value))]
        return out

    def command_line(self, *args: str, identity: bool = False) -> str:
        """``courtroom COMMAND ARGS`` plus :meth:`runtime_flags`, quoted for a shell.

        With ``identity``, the answer-changing options too (:meth:`identity_flags`): the command that
        describes this experiment again (continue a study), not one that reads it back from a folder.
        """
        flags = self.identity_flags() if identity else []
        return " ".join(["courtroom", self.command, *(shlex.quote(a) for a in [*args, *flags, *self.runtime_flags()])])

    def identity_flags(self) -> list[str]:
        """The flags of every answer-changing field (:data:`IDENTITY`) set away from its default.

        The data section travels whole: ``--dataset FILE --text-field ... --labels ...`` (never a
        ``--task custom:NAME``, which names no registered task). The framework is an argument, not a flag.
        """
        out: list[str] = []
        for section, keys in IDENTITY.items():
            defaults = SECTIONS[section]()
            for key in keys:
                value = getattr(getattr(self, section), key)
                if key == "framework" or _plain(value) == _plain(getattr(defaults, key)):
                    continue
                out += _flag_values(self.command, key, value)
        return out

    def describe(self) -> str:
        """One line for plot subtitles and report headers: task, models, sizes."""
        d, m = self.data, self.models
        bits = [d.task_name]
        if m.lm or m.roles:
            bits.append("models " + ", ".join([*m.lm, *(f"{r}={v}" for r, v in sorted(m.roles.items()))]))
        sizes = [f"{k} {v}" for k, v in (("n", d.limit), ("train", d.train_limit), ("dev", d.dev_limit)) if v]
        return "; ".join(bits + sizes)


def _flag_values(command: str, key: str, value: Any) -> list[str]:
    """``[flag, text, ...]`` giving ``key`` its ``value`` (repeated flags for maps and ``--lm``)."""
    flag = "--compile" if (command, key) == ("study", "optimizer") else flag_of(key)
    if isinstance(value, bool):
        return [flag] if value else ["--no-" + flag[2:]]
    if isinstance(value, Mapping):
        return [x for k, v in value.items() for x in (flag, f"{k}={_text(v)}")]
    if isinstance(value, list | tuple):
        if key in ("lm", "presets"):
            return [x for v in value for x in (flag, _text(v))]
        return [flag, ",".join(_text(v) for v in value)]
    return [flag, _text(value)]


def _text(value: Any) -> str:
    """A value as a flag takes it: text bare, numbers short (0.2, 20), true/false/none as JSON writes them."""
    if isinstance(value, str):
        return value
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, list | tuple):  # a panel of models: a,b
        return ",".join(_text(v) for v in value)
    return json.dumps(value) if value is None or isinstance(value, bool | int) else str(value)


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


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


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
