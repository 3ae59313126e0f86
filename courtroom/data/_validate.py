"""Check a data file before ``datasets`` reads it, so a bad one is named by line or row and what is wrong.

``datasets`` answers a malformed CSV or JSONL, or a JSON file that is not a list of rows, with
``DatasetGenerationError: An error occurred while generating the dataset`` after log lines of its
own; these checks say where the file breaks instead.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from courtroom.errors import DataError

ROWS = 'rows: objects with your fields, e.g. [{"text": "...", "label": "..."}]'


def check_file(path: Path, fmt: str, text: str) -> dict[str, Any]:
    """Raise :class:`DataError` naming the line or row of ``path`` that cannot be a row.

    Returns the extra ``load_dataset`` keywords the file's shape needs.
    """
    if fmt == "json" and path.suffix.lower() == ".jsonl":
        fmt = "jsonl"
    if fmt == "csv":
        _check_csv(path, text)
        return {}
    if path.suffix.lower() == ".json":
        return _check_json(path, text)
    _check_jsonl(path, text)
    return {}


def _kind(value: Any) -> str:
    names: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}
    return names.get(type(value), type(value).__name__)


def _check_json(path: Path, text: str) -> dict[str, Any]:
    try:
        top = json.loads(text)
    except json.JSONDecodeError as exc:
        if exc.msg == "Extra data":  # several objects, one per line: that is JSONL
            raise DataError(
                f"cannot read {path}: line {exc.lineno} starts a second JSON value; a .json file holds one list "
                "of rows (one object per line is a .jsonl file: rename it)"
            ) from None
        where = f"line {exc.lineno} column {exc.colno}"
        raise DataError(f"cannot read {path}: not valid JSON at {where} ({exc.msg})") from None
    kwargs: dict[str, Any] = {}
    rows = top
    if isinstance(top, dict) and "examples" in top:
        kwargs["field"] = "examples"  # the BBH file shape {"examples": [{"input", "target"}]}
        rows = top["examples"]
    if not isinstance(rows, list):
        raise DataError(f"cannot read {path}: it holds {_kind(rows)}, not a list of {ROWS}")
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise DataError(
                f"cannot read {path}: row {i} is {_kind(row)}, not an object; a .json file is a list of {ROWS}"
            )
    return kwargs


def _check_jsonl(path: Path, text: str) -> None:
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(
                f"cannot read {path}: line {n} is not JSON ({exc.msg}, column {exc.colno}); "
                "write one JSON object per line"
            ) from None
        if not isinstance(row, dict):
            raise DataError(f"cannot read {path}: line {n} is {_kind(row)}, not an object with your fields")


def _check_csv(path: Path, text: str) -> None:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader, None)
        if not header or not any(h.strip() for h in header):
            raise DataError(f"cannot read {path}: line 1 must name the columns (a header row)")
        for row in reader:
            if row and len(row) != len(header):
                raise DataError(
                    f"cannot read {path}: line {reader.line_num} has {len(row)} field(s), the header has "
                    f"{len(header)}; quote fields that contain commas, and close every quote"
                )
    except csv.Error as exc:
        raise DataError(f"cannot read {path}: line {reader.line_num}: {exc}; check the quotes") from None


@contextlib.contextmanager
def quiet_datasets() -> Iterator[None]:
    """No ``datasets`` log lines while inside (the one-line errors above say what matters)."""
    log = logging.getLogger("datasets")
    level = log.level
    log.setLevel(logging.ERROR + 10)
    try:
        yield
    finally:
        log.setLevel(level)
