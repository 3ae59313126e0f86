"""Task registry and loaders: name -> hub id, text builder, label space, positions (SPEC §5).

Data comes from a seeded generator, the Hugging Face Hub (through ``datasets``), or a local
JSON/JSONL/CSV/Parquet file. Every example gets a stable id, recorded by each run.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import dspy

from courtroom.errors import ConfigError, DataError
from courtroom.eval.generators import GENERATORS

Record = Mapping[str, Any]
SPLITS = ("train", "dev", "test")
FRACTIONS = {"train": 0.2, "dev": 0.2, "test": 0.6}
GENERATED_POOL = 500
FILE_FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def field_text(name: str) -> Callable[[Record], str]:
    """A text or label builder that reads one field."""
    return lambda r: str(r[name]).strip()


@dataclass(frozen=True)
class Task:
    """A decision task: where its data lives, how to build the case text, and its label space."""

    name: str
    labels: tuple[str, ...]
    positions: tuple[str, ...] | None = None
    """What binary advocates argue (default: the labels)."""
    hub: tuple[str, str | None, str] | None = None
    """(path, config, split) for ``datasets.load_dataset``."""
    fields: tuple[str, ...] = ("input", "target")
    """Raw fields the builders read."""
    text: Callable[[Record], str] = field(default=field_text("input"))
    label: Callable[[Record], str] = field(default=field_text("target"))
    description: str = ""

    @property
    def has_generator(self) -> bool:
        """Whether offline generated data exists for this task."""
        return self.name in GENERATORS


TASKS: dict[str, Task] = {}


def register(task: Task) -> Task:
    """Add a task to the registry."""
    TASKS[task.name] = task
    return task


register(Task(
    "boolean_expressions", ("True", "False"),
    hub=("lukaemon/bbh", "boolean_expressions", "test"),
    description="BBH: evaluate a Boolean expression (True/False).",
))


def get_task(name: str) -> Task:
    """The registered task called ``name``."""
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}: valid tasks are {', '.join(sorted(TASKS))}")
    return TASKS[name]


@dataclass
class TaskData:
    """Examples of one split, with where they came from."""

    task: Task
    split: str
    examples: list[dspy.Example]
    source: str
    seed: int


def _read_file(path: Path) -> list[dict[str, Any]]:
    import datasets

    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(f"cannot read {path}: use a .json, .jsonl, .csv or .parquet file")
    if not path.is_file():
        raise DataError(f"cannot read {path}: no such file")
    kwargs: dict[str, Any] = {}
    if path.suffix.lower() == ".json":
        try:
            top = json.loads(path.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise DataError(f"cannot read {path}: not valid JSON ({exc})") from exc
        if isinstance(top, dict) and "examples" in top:
            kwargs["field"] = "examples"  # the BBH file shape {"examples": [{"input", "target"}]}
    try:
        ds = datasets.load_dataset(fmt, data_files=str(path), split="train", **kwargs)
    except Exception as exc:  # datasets raises many types for unreadable files
        raise DataError(f"cannot read {path}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc
    return [dict(r) for r in ds]


def _read_hub(task: Task) -> list[dict[str, Any]]:
    import datasets

    if task.hub is None:
        raise ConfigError(f"task {task.name} has no Hub dataset: pass --data PATH")
    path, config, split = task.hub
    try:
        ds = datasets.load_dataset(path, config, split=split)
    except Exception as exc:
        raise DataError(
            f"cannot load {path} ({config}) from the Hub: {str(exc).splitlines()[0][:160]}; "
            "without internet use --data generate or --data PATH"
        ) from exc
    return [dict(r) for r in ds]


def load_records(task: Task, data: str = "auto", *, seed: int = 0, pool: int = GENERATED_POOL) -> tuple[list[dict[str, Any]], str]:
    """Raw records and a description of their source.

    ``data`` is ``auto`` (the generator if the task has one, else the Hub), ``generate``, ``hub``
    or a file path.
    """
    if data == "auto":
        data = "generate" if task.has_generator else "hub"
    if data == "generate":
        if not task.has_generator:
            raise ConfigError(f"task {task.name} has no generator: use --data hub or --data PATH")
        return GENERATORS[task.name](pool, seed), f"generated (seed {seed}, pool {pool})"
    if data == "hub":
        return _read_hub(task), f"hub {task.hub[0]}/{task.hub[1]}" if task.hub else "hub"
    return _read_file(Path(data).expanduser()), f"file {data}"


def to_examples(task: Task, records: Sequence[Record], id_prefix: str) -> list[dspy.Example]:
    """Validate records and turn them into ``dspy.Example(case, label, id)``."""
    if not records:
        raise DataError(f"{task.name}: the dataset is empty")
    available = sorted(records[0].keys())
    missing = [f for f in task.fields if f not in records[0]]
    if missing:
        raise DataError(
            f"{task.name}: missing field {', '.join(missing)}; available fields: {', '.join(available)}"
        )
    examples, bad = [], []
    for i, r in enumerate(records):
        label = task.label(r)
        if label not in task.labels:
            bad.append(f"row {i} ({label!r})")
            continue
        examples.append(dspy.Example(case=task.text(r), label=label, id=f"{id_prefix}-{i}").with_inputs("case"))
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise DataError(f"{task.name}: labels outside {list(task.labels)} in {shown}")
    return examples


def split_examples(examples: Sequence[dspy.Example], seed: int) -> dict[str, list[dspy.Example]]:
    """Seeded train/dev/test split (20/20/60)."""
    order = list(examples)
    random.Random(f"split-{seed}").shuffle(order)
    n_train = int(len(order) * FRACTIONS["train"])
    n_dev = int(len(order) * FRACTIONS["dev"])
    return {"train": order[:n_train], "dev": order[n_train:n_train + n_dev], "test": order[n_train + n_dev:]}


def load_task(
    name: str, *, data: str = "auto", split: str = "test", limit: int | None = None, seed: int = 0
) -> TaskData:
    """Load one split of a registered task, optionally the first ``limit`` examples."""
    task = get_task(name)
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    records, source = load_records(task, data, seed=seed)
    prefix = task.name if data in ("auto", "generate", "hub") else Path(data).stem
    examples = split_examples(to_examples(task, records, prefix), seed)[split]
    if limit is not None:
        if limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {limit}")
        examples = examples[:limit]
    if not examples:
        raise DataError(f"{task.name}: the {split} split is empty; use a larger dataset or another split")
    return TaskData(task, split, examples, source, seed)
