"""Task registry and loaders (SPEC §5).

Data comes from a seeded generator, the Hugging Face Hub (through ``datasets``), or a local
JSON/JSONL/CSV/Parquet file. Any other dataset becomes a task with :func:`custom_task`
(``--dataset ID_OR_PATH --text-field ... --label-field ... --labels a,b,c``). Every example gets
a stable id, recorded by each run. The user's own dataset (custom tasks, task files, local files)
is read by :mod:`courtroom.data.custom`; its public names are re-exported here.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dspy

from courtroom.data._hub import load_hub
from courtroom.data.catalog import BUILTIN_TASKS, Record, Task, canonical_label
from courtroom.data.custom import (
    FILE_FORMATS,
    custom_task,
    from_task_file,
    is_local_path,
    read_file,
    read_task_file,
    split_source,
)
from courtroom.data.generators import GENERATORS
from courtroom.errors import ConfigError, DataError

logger = logging.getLogger(__name__)
_WARNED: set[str] = set()

SPLITS = ("train", "dev", "test")
FRACTIONS = {"train": 0.2, "dev": 0.2, "test": 0.6}
GENERATED_POOL = 500

TASKS: dict[str, Task] = {t.name: t for t in BUILTIN_TASKS}


def register(task: Task) -> Task:
    """Add a task to the registry (replacing one of the same name)."""
    TASKS[task.name] = task
    return task


def get_task(name: str) -> Task:
    """The registered task called ``name`` (an installed package's too)."""
    if name not in TASKS:
        load_plugins()  # a package put on the path since this module was imported
    if name not in TASKS:
        raise ConfigError(f"unknown task {name!r}: valid tasks are {', '.join(sorted(TASKS))}")
    return TASKS[name]


def _add_plugin(name: str, obj: Any) -> None:
    from courtroom._plugins import named

    register(named(obj, Task, name, "task"))


def load_plugins() -> None:
    """Add the tasks installed packages name in ``courtroom.tasks`` (:mod:`courtroom._plugins`)."""
    from courtroom import _plugins

    _plugins.load("tasks", _add_plugin)


@dataclass
class TaskData:
    """Examples of one split, with where they came from."""

    task: Task
    split: str
    examples: list[dspy.Example]
    source: str
    seed: int
    seen: dict[str, int] | None = None
    """With a program's train and dev cases to check against (``courtroom score``): how many of the
    examples are also in its ``train`` and ``dev`` split, and how many such cases were ``left_out``."""


def _read_hub(task: Task) -> list[dict[str, Any]]:
    if task.hub is None:
        raise ConfigError(f"task {task.name} has no Hub dataset: pass --data PATH (json, jsonl, csv or parquet)")
    path, config, split = task.hub
    ds = load_hub(path, config, split, task=task.name, has_generator=task.has_generator)
    return [dict(r) for r in ds]


@functools.lru_cache(maxsize=16)
def _generated(name: str, pool: int, seed: int) -> tuple[dict[str, Any], ...]:
    # Generated once per process and seed: each command (a study's every trial) used to build its pool again.
    return tuple(GENERATORS[name](pool, seed))


def load_records(
    task: Task, data: str = "auto", *, seed: int = 0, pool: int = GENERATED_POOL
) -> tuple[list[dict[str, Any]], str]:
    """Raw records and a description of their source.

    ``data`` is ``auto`` (the generator if the task has one, else the Hub), ``generate``, ``hub``
    or a file path.
    """
    if data == "auto":
        data = "generate" if task.has_generator else "hub"
    if data == "generate":
        if not task.has_generator:
            raise ConfigError(f"task {task.name} has no generator: use --data hub or --data PATH")
        return [dict(r) for r in _generated(task.name, pool, seed)], f"generated (seed {seed}, pool {pool})"
    if data == "hub":
        return _read_hub(task), f"hub {task.source}"
    return read_file(Path(data).expanduser()), f"file {data}"


def _check_fields(task: Task, records: Sequence[Record]) -> None:
    available = sorted(records[0].keys())
    for i, r in enumerate(records):
        missing = [f for f in task.fields if f not in r]
        if missing:
            where = "" if i == 0 else f" (row {i})"
            raise DataError(
                f"{task.name}: missing field {', '.join(repr(m) for m in missing)}{where}; available fields: "
                f"{', '.join(available)}; map yours with --text-field/--label-field"
            )


def to_examples(task: Task, records: Sequence[Record], id_prefix: str) -> list[dspy.Example]:
    """Validate records and turn them into ``dspy.Example(case, label, id)``.

    Ids are ``{prefix}-{row}`` with the row index in the source, so they survive filtering.
    """
    if not records:
        raise DataError(f"{task.name}: the dataset is empty; pass a file with at least one row")
    _check_fields(task, records)
    kept = [(i, r) for i, r in enumerate(records) if task.keep is None or task.keep(r)]
    if not kept:
        raise DataError(
            f"{task.name}: no rows left after filtering {len(records)} rows; check the data matches the task"
        )
    examples, bad = [], []
    for i, r in kept:
        raw = task.label(r)
        label = canonical_label(raw, task.labels)
        if label is None:
            bad.append(f"row {i} ({raw!r})")
            continue
        text = task.text(r)
        if not text:
            bad.append(f"row {i} (empty text)")
            continue
        example = dspy.Example(case=text, label=label, id=f"{id_prefix}-{i}")
        example._input_keys = {"case"}  # what .with_inputs("case") sets, on a copy it makes first
        examples.append(example)
    if bad:
        shown = ", ".join(bad[:5]) + (f" and {len(bad) - 5} more" if len(bad) > 5 else "")
        raise DataError(f"{task.name}: labels outside {list(task.labels)} in {shown}; fix the rows or --labels")
    return examples


def split_examples(
    examples: Sequence[dspy.Example],
    seed: int,
    sizes: Sequence[float] | None = None,
    splits: Sequence[str] = SPLITS,
) -> dict[str, list[dspy.Example]]:
    """Seeded split into ``splits`` (default train/dev/test at 20/20/60).

    ``sizes`` (TRAIN, DEV, TEST) are fractions or counts (``--split-sizes``). Splitting into fewer
    splits (the others given as their own files) shares the examples among those in proportion.
    """
    order = list(examples)
    random.Random(f"split-{seed}").shuffle(order)
    want = list(sizes) if sizes else [FRACTIONS[s] for s in SPLITS]
    mine = [want[SPLITS.index(s)] for s in splits]
    counts = all(float(x) == int(x) for x in want) and any(x > 1 for x in want)
    n = len(order)
    if counts:
        need = int(sum(mine))
        if need > n:
            asked = ",".join(f"{int(x)}" for x in want)
            raise DataError(
                f"--split-sizes {asked} needs {need} examples but the data has {n}: "
                f"lower the counts or use fractions (e.g. --split-sizes 0.6,0.2,0.2)"
            )
        cut = [int(x) for x in mine]
    else:
        total = sum(mine) if len(splits) < len(SPLITS) or sum(mine) > 1 else 1.0
        cut = [int(n * x / total) for x in mine[:-1]]
        rest = n - sum(cut)
        cut.append(rest if abs(sum(mine) / total - 1) < 1e-9 else min(rest, int(n * mine[-1] / total)))
    out, start = {}, 0
    for name, k in zip(splits, cut, strict=True):
        out[name] = order[start : start + k]
        start += k
    for name in SPLITS:
        out.setdefault(name, [])
    return out


def case_key(text: Any) -> str:
    """A case's text as duplicates and overlaps are found by: whitespace runs as one space, ends trimmed.

    Two rows whose texts differ only in spacing are one case; case and punctuation still count.
    """
    return " ".join(str(text).split())


def case_digest(text: Any) -> str:
    """A short digest of :func:`case_key`: how a compiled program records its train and dev cases."""
    return hashlib.sha256(case_key(text).encode()).hexdigest()[:16]


def unique_cases(
    examples: Sequence[dspy.Example], limit: int | None = None, leave_out: Collection[str] = ()
) -> tuple[list[dspy.Example], int, int]:
    """The first ``limit`` examples (all: None) with distinct case texts; the repeats and the left out passed over.

    A text repeated within a split would count as several independent cases: it inflates ``n``,
    narrows every interval and adds to McNemar's evidence what one case cannot give. Each text is
    kept once, its first row. ``leave_out`` holds :func:`case_digest` values of texts not to keep
    at all. The counts are of the cases passed over before the ``limit``-th case kept.
    """
    seen: set[str] = set()
    kept: list[dspy.Example] = []
    repeats = left = 0
    for ex in examples:
        if limit is not None and len(kept) >= limit:
            break
        key = case_key(ex.get("case"))
        if key in seen:
            repeats += 1
            continue
        seen.add(key)
        if leave_out and case_digest(key) in leave_out:
            left += 1
            continue
        kept.append(ex)
    return kept, repeats, left


def _resolve(name: str | Task, dataset: Mapping[str, Any] | None, data: str) -> tuple[Task, str]:
    if dataset:
        args = from_task_file(dataset["task_file"]) if "task_file" in dataset else dict(dataset)
        return custom_task(**args)
    return (name if isinstance(name, Task) else get_task(name)), data


def load_splits(
    name: str | Task,
    *,
    data: str = "auto",
    seed: int = 0,
    dataset: Mapping[str, Any] | None = None,
    splits: Mapping[str, Any] | None = None,
) -> tuple[Task, dict[str, list[dspy.Example]], str]:
    """(task, every split, source description).

    ``dataset`` holds :func:`custom_task` arguments (or ``{"task_file": PATH}``); ``splits`` holds
    ``sizes`` (``--split-sizes``) and ``files`` (split -> its own file or Hub split name,
    ``--train-data``/``--dev-data``/``--test-data``). A case text repeated within a split is kept
    once, its first row (:func:`unique_cases`; :func:`load_task` says how many were left out).
    """
    task, parts, source = _raw_splits(name, data=data, seed=seed, dataset=dataset, splits=splits)
    return task, {s: unique_cases(examples)[0] for s, examples in parts.items()}, source


def _raw_splits(
    name: str | Task,
    *,
    data: str,
    seed: int,
    dataset: Mapping[str, Any] | None,
    splits: Mapping[str, Any] | None,
) -> tuple[Task, dict[str, list[dspy.Example]], str]:
    """Every split as read and cut, repeated case texts included."""
    task, data = _resolve(name, dataset, data)
    files = dict((splits or {}).get("files") or {})
    sizes = (splits or {}).get("sizes")
    records, source = load_records(task, data, seed=seed)
    own = {s: split_source(task, str(v)) for s, v in files.items()}
    every = [*records, *(r for rows, _, _ in own.values() for r in rows)]
    if every:
        _check_fields(task, every)
        task = task.with_labels_from(every)
    local = data not in ("auto", "generate", "hub")
    prefix = Path(data).stem if local else task.name
    rest = [s for s in SPLITS if s not in own]
    out = split_examples(to_examples(task, records, prefix), seed, sizes, rest) if rest else {}
    for s, (rows, where, stem) in own.items():
        out[s] = to_examples(task, rows, stem)
        source += f"; {s}: {where}"
    return task, {s: out.get(s, []) for s in SPLITS}, source


def load_task(
    name: str | Task,
    *,
    data: str = "auto",
    split: str = "test",
    limit: int | None = None,
    seed: int = 0,
    dataset: Mapping[str, Any] | None = None,
    splits: Mapping[str, Any] | None = None,
    limit_flag: str | None = None,
    short: str = "error",
) -> TaskData:
    """Load one split of a task, optionally the first ``limit`` examples (no more than it has).

    With ``limit_flag`` (the option that set ``limit``), a split smaller than ``limit`` is an
    error that says how many examples it has (``short="warn"`` logs it and uses the whole split,
    for options whose default may exceed a small dataset); without, the split is simply used whole.
    A case text repeated within the split is kept once (a warning says how many were passed over).
    ``splits["seen"]`` (split -> :func:`case_digest` values: a compiled program's train and dev
    cases, ``courtroom score``) counts the examples the program saw into :attr:`TaskData.seen`,
    with a warning; ``splits["leave_out_seen"]`` leaves them out instead (before the limit).
    """
    if split not in SPLITS:
        raise ConfigError(f"unknown split {split!r}: use one of {', '.join(SPLITS)}")
    if limit is not None and limit < 1:
        raise ConfigError(f"{limit_flag or '--limit'} must be >= 1, got {limit}")
    task, parts, source = _raw_splits(name, data=data, seed=seed, dataset=dataset, splits=splits)
    known = {s: set(v) for s, v in ((splits or {}).get("seen") or {}).items()}
    leave_out = set().union(*known.values()) if known and (splits or {}).get("leave_out_seen") else set()
    examples, repeats, left = unique_cases(parts[split], limit, leave_out)
    if repeats:
        _warn_once(
            f"the {split} split of {task.name}: {repeats} case(s) repeat the text of an earlier one: "
            f"each text is kept once (its first row), {len(examples)} case(s) used"
        )
    seen = _seen(examples, known, left) if known else None
    if seen and left:
        _warn_once(
            f"the {split} split of {task.name}: {left} case(s) also in the program's train or dev split left out "
            f"(--exclude-seen), {len(examples)} case(s) used"
        )
    elif seen and (seen["train"] or seen["dev"]):
        _warn_once(
            f"the {split} split of {task.name}: {seen['train']} case(s) are also in the program's train split and "
            f"{seen['dev']} in its dev split: its score on them is not a held-out score "
            "(--exclude-seen leaves them out)"
        )
    if limit_flag and limit is not None and limit > len(examples):
        if short == "warn":
            _warn_once(
                f"{limit_flag} {limit} but the {split} split of {task.name} has {len(examples)} examples: using all"
            )
        else:
            raise DataError(
                f"{limit_flag} {limit} but the {split} split of {task.name} has {len(examples)} examples: "
                f"pass {limit_flag} {len(examples)} or less, or leave it out"
            )
    if not examples:
        raise DataError(f"{task.name}: the {split} split is empty; use a larger dataset or another split")
    return TaskData(task, split, examples, source, seed, seen)


def _warn_once(said: str) -> None:
    if said not in _WARNED:  # once: a dry run and the budget's bound load the same split again
        _WARNED.add(said)
        logger.warning(said)


def _seen(examples: Sequence[dspy.Example], known: Mapping[str, set[str]], left: int) -> dict[str, int]:
    """How many ``examples`` a program saw while compiling, per split (``known``: digests), and ``left_out``."""
    digests = [case_digest(ex.get("case")) for ex in examples]
    return {s: sum(d in known.get(s, set()) for d in digests) for s in ("train", "dev")} | {"left_out": left}


def load_sized(
    name: str,
    split: str,
    limit: int | None,
    *,
    data: str = "auto",
    seed: int = 0,
    dataset: Mapping[str, Any] | None = None,
    splits: Mapping[str, Any] | None = None,
) -> TaskData:
    """The train or dev split cut to ``--train-limit``/``--dev-limit`` (compile and studies).

    Their defaults may exceed a small dataset, so a smaller split is used whole, with a warning.
    """
    flag = {"train": "--train-limit", "dev": "--dev-limit"}[split]
    return load_task(
        name,
        data=data,
        split=split,
        limit=limit,
        seed=seed,
        dataset=dataset,
        splits=splits,
        limit_flag=flag,
        short="warn",
    )


__all__ = [
    "FILE_FORMATS",
    "FRACTIONS",
    "SPLITS",
    "TASKS",
    "Task",
    "TaskData",
    "case_digest",
    "case_key",
    "custom_task",
    "get_task",
    "is_local_path",
    "load_records",
    "load_sized",
    "load_splits",
    "load_plugins",
    "load_task",
    "read_task_file",
    "register",
    "split_examples",
    "to_examples",
    "unique_cases",
]
