"""The user's own dataset (SPEC §5): custom tasks, task files and local files.

:func:`custom_task` turns any Hub or local dataset into a task (``--dataset ID_OR_PATH --text-field ...
--label-field ... --labels a,b,c``), :func:`read_task_file` reads the same from a YAML task file, and
:func:`read_file` reads a local JSON/JSONL/CSV/Parquet file. :func:`split_source` reads a split given on
its own (``--train-data``/``--dev-data``/``--test-data``). :mod:`courtroom.data.tasks` loads and splits them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom.data._hub import load_hub
from courtroom.data._validate import check_file, quiet_datasets
from courtroom.data.catalog import Task, field_text, fields_text
from courtroom.errors import ConfigError, DataError

FILE_FORMATS = {".json": "json", ".jsonl": "json", ".csv": "csv", ".parquet": "parquet"}


def is_local_path(dataset: str) -> bool:
    """Whether ``dataset`` names a local file rather than a Hub id."""
    return Path(dataset).expanduser().exists() or Path(dataset).suffix.lower() in FILE_FORMATS


def custom_task(
    dataset: str,
    *,
    text_fields: Sequence[str],
    label_field: str,
    labels: Sequence[str],
    positions: Sequence[str] | None = None,
    config: str | None = None,
    hub_split: str = "train",
) -> tuple[Task, str]:
    """A task for any Hub or local dataset, and the ``data`` argument that loads it.

    Several text fields are joined as ``Field: value`` lines. Integer labels index ``labels``.
    """
    labels = tuple(str(x).strip() for x in labels if str(x).strip())
    if len(labels) < 2:
        raise ConfigError(f"--labels needs at least two labels, got {list(labels)}: e.g. --labels yes,no")
    text_fields = [f.strip() for f in text_fields if f.strip()]
    if not text_fields or not label_field.strip():
        raise ConfigError("--dataset needs --text-field FIELD[,FIELD...] and --label-field FIELD")
    local = is_local_path(dataset)
    name = f"custom:{Path(dataset).stem if local else dataset}"
    task = Task(
        name,
        labels,
        tuple(positions) if positions else None,
        hub=None if local else (dataset, config, hub_split),
        fields=(*text_fields, label_field.strip()),
        text=fields_text(text_fields),
        label=field_text(label_field.strip()),
        description=f"custom dataset {dataset}",
    )
    return task, (dataset if local else "hub")


def read_file(path: Path) -> list[dict[str, Any]]:
    """The rows of a local JSON/JSONL/CSV/Parquet file (Parquet through ``datasets``)."""
    fmt = FILE_FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise DataError(f"cannot read {path}: use a .json, .jsonl, .csv or .parquet file")
    if not path.is_file():
        raise DataError(f"cannot read {path}: no such file")
    kwargs: dict[str, Any] = {}
    if fmt != "parquet":
        raw = path.read_bytes()
        if not raw.strip():
            raise DataError(f"cannot read {path}: the file is empty; put at least one row in it")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise DataError(
                f"cannot read {path}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
                "save it as UTF-8"
            ) from None
        kwargs = check_file(path, fmt, text)  # names the line or row that breaks, before datasets does
        if fmt == "json":  # checked line by line above: the rows are what json reads
            return _filled(path, _json_rows(path, text, kwargs))
    try:
        if fmt == "csv":
            return _filled(path, _csv_rows(text))
        import datasets

        with quiet_datasets():
            ds = datasets.load_dataset(fmt, data_files=str(path), split="train", **kwargs)
    except Exception as exc:  # pandas and datasets raise many types for unreadable files
        if "corresponds to no data" in str(exc) or "No columns to parse" in str(exc):
            raise DataError(f"cannot read {path}: it has no rows; put at least one row in it") from exc
        raise DataError(f"cannot read {path}: {type(exc).__name__}: {str(exc).splitlines()[0][:200]}") from exc
    return [dict(r) for r in ds]


def _json_rows(path: Path, text: str, kwargs: Mapping[str, Any]) -> list[dict[str, Any]]:
    if path.suffix.lower() == ".jsonl":
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    top = json.loads(text)
    return top[kwargs["field"]] if "field" in kwargs else top


def _filled(path: Path, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row with every field any row has (None where it is missing), as ``datasets`` reads them."""
    if not rows:
        raise DataError(f"cannot read {path}: it has no rows; put at least one row in it")
    names = list(dict.fromkeys(name for row in rows for name in row))
    return [{name: row.get(name) for name in names} for row in rows]


def _csv_rows(text: str) -> list[dict[str, Any]]:
    """The rows of a CSV file, typed as ``datasets`` types them (it reads CSV through pandas too).

    Read here with pandas rather than through ``datasets.load_dataset``, whose import and Arrow
    cache cost about 2 s of every command's start-up: an empty field is None, a whole-number
    column gives ints (so integer labels index ``--labels``). A plain file (:func:`_plain_csv_rows`)
    is read without pandas, whose import is a fifth of a run's start-up (issue 44).
    """
    plain = _plain_csv_rows(text)
    if plain is not None:
        return plain
    import io

    import pandas as pd

    frame = pd.read_csv(io.StringIO(text))
    return [
        {str(k): None if _missing(v) else v.item() if hasattr(v, "item") else v for k, v in row.items()}
        for row in frame.to_dict("records")
    ]


_INT = re.compile(r"[+-]?[0-9]{1,18}")
"""A whole number pandas reads as an int64 (longer ones it keeps as text or floats: its to read)."""
_PANDAS_NA = {"#N/A", "#N/A N/A", "#NA", "-1.#IND", "-1.#QNAN", "-NaN", "-nan", "1.#IND", "1.#QNAN", "<NA>", "N/A"}
_PANDAS_NA |= {"NA", "NULL", "NaN", "None", "n/a", "nan", "null"}


def _plain_csv_rows(text: str) -> list[dict[str, Any]] | None:
    """The rows as pandas types them, for a file whose every column pandas leaves alone; else None.

    A column is plain when every field is a whole number (no field empty: ints), or none looks
    like a number, a boolean or one of pandas' missing-value spellings (strings; an empty field
    is None). Anything else (floats, booleans, ``NA``, odd headers or row lengths) is pandas' to read.
    """
    import csv
    import io

    lines = [row for row in csv.reader(io.StringIO(text, newline="")) if row]
    if not lines:
        return None
    header, body = lines[0], lines[1:]
    if len(set(header)) != len(header) or any(not name or name != name.strip() for name in header):
        return None
    if any(len(row) != len(header) for row in body):
        return None
    columns: list[Any] = []
    for i in range(len(header)):
        values = [row[i] for row in body]
        if values and all(_INT.fullmatch(v) for v in values):
            columns.append([int(v) for v in values])
        elif all(v == "" or _plain_text(v) for v in values):
            columns.append([v if v != "" else None for v in values])
        else:
            return None
    return [dict(zip(header, row, strict=True)) for row in zip(*columns, strict=True)] if body else None


def _plain_text(value: str) -> bool:
    if value in _PANDAS_NA or value.strip().lower() in ("true", "false") or value != value.strip() or "\r" in value:
        return False
    try:
        float(value)
    except ValueError:
        return not re.fullmatch(r"[+-]?[0-9,_]+", value)
    return False


def _missing(value: Any) -> bool:
    return isinstance(value, float) and value != value  # NaN


def read_task_file(path: str | Path) -> dict[str, Any]:
    """A task file (YAML) naming the user's dataset, its fields and labels.

    Keys: ``dataset``, ``text_field``, ``label_field``, ``labels`` and optional ``positions``,
    ``dataset_config``, ``hub_split``; a relative ``dataset`` path is read from the file's folder.
    Every value is read as text, as written: YAML 1.1 would turn ``labels: [Yes, No]`` into two
    booleans (and ``1.0`` into a number), which no row's label equals.
    """
    import yaml

    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=yaml.BaseLoader)  # noqa: S506 - BaseLoader builds only str, list, dict
    except OSError as exc:
        raise ConfigError(f"cannot read task file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot parse task file {path}: {str(exc).splitlines()[0]}") from None
    if not isinstance(data, Mapping) or "dataset" not in data:
        raise ConfigError(
            f"task file {path}: write a mapping with dataset, text_field, label_field and labels, "
            "e.g. dataset: reviews.csv"
        )
    known = {"dataset", "text_field", "label_field", "labels", "positions", "dataset_config", "hub_split"}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(
            f"task file {path}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(sorted(known))}"
        )
    out: dict[str, Any] = {k: (None if v in ("", "~", "null", "Null", "NULL") else v) for k, v in data.items()}
    value = str(out["dataset"])
    if not Path(value).is_absolute() and (path.parent / value).exists():
        out["dataset"] = str(path.parent / value)
    for key in ("text_field", "labels", "positions"):
        if isinstance(text := out.get(key), str):
            out[key] = [x.strip() for x in text.split(",") if x.strip()]
    return out


def from_task_file(path: str) -> dict[str, Any]:
    """The :func:`custom_task` arguments a task file gives (``text_field``, ``label_field`` and ``labels`` required)."""
    data = read_task_file(path)
    missing = [k for k in ("text_field", "label_field", "labels") if not data.get(k)]
    if missing:
        raise ConfigError(f"task file {path}: missing {', '.join(missing)}")
    return {
        "dataset": str(data["dataset"]),
        "text_fields": list(data["text_field"]),
        "label_field": str(data["label_field"]),
        "labels": list(data["labels"]),
        "positions": data.get("positions"),
        "config": data.get("dataset_config"),
        "hub_split": data.get("hub_split") or "train",
    }


def split_source(task: Task, value: str) -> tuple[list[dict[str, Any]], str, str]:
    """Records of a split given on its own: a file, or (for a Hub dataset) the name of one of its Hub splits."""
    if is_local_path(value) or task.hub is None:
        return read_file(Path(value).expanduser()), f"file {value}", Path(value).stem
    path, config, _ = task.hub
    ds = load_hub(path, config, value, task=task.name, has_generator=task.has_generator)
    return [dict(r) for r in ds], f"hub {path} split {value}", f"{task.name}-{value}"


__all__ = [
    "FILE_FORMATS",
    "custom_task",
    "from_task_file",
    "is_local_path",
    "read_file",
    "read_task_file",
    "split_source",
]
