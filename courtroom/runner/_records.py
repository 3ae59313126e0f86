"""Typed records of run and comparison folders, checked as they are read.

Valid JSON of the wrong shape (``{"id": "x"}`` appended to ``results.jsonl``, a list in
``meta.json``) once ended ``show``, ``report`` and every resume with a bare ``KeyError``: the run
could never be finished. Each reader checks its records here. A line of a JSONL file that is not
its record is skipped and counted like a torn or damaged line (one warning names the file and the
lines; a resume runs the example again); a ``meta.json`` or ``comparison.json`` of the wrong shape
is named with its fix.

A result line is an :class:`~courtroom.eval.harness.ExampleResult`, validated by pydantic; a
session line is ``{"start": TIME, "line": N}`` or ``{"end": TIME, "usage": {...}}``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from numbers import Real
from typing import Any


@functools.cache
def _result_adapter() -> Any:
    from pydantic import TypeAdapter

    from courtroom.eval.harness import ExampleResult

    return TypeAdapter(ExampleResult)


def result_problem(row: Any) -> str | None:
    """What makes ``row`` no result line (None: it is one)."""
    from pydantic import ValidationError

    if not isinstance(row, Mapping):
        return f"a {type(row).__name__}, not a result"
    try:
        _result_adapter().validate_python(dict(row))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first.get("loc", ())) or "the record"
        return f"{where}: {first.get('msg', 'invalid')}"
    return usage_problem(row.get("usage", {}))


def usage_problem(usage: Any) -> str | None:
    """What makes ``usage`` no usage record, None: it is one.

    A record holds counts, and ``by_model`` and ``cached_by_model``: model -> counts.
    """
    if not isinstance(usage, Mapping):
        return "usage is not an object"
    per_model = ("by_model", "cached_by_model")
    for key, value in usage.items():
        if key not in per_model and value is not None and not _number(value):
            return f"usage.{key} is not a number"
    for key in per_model:
        by_model = usage.get(key, {})
        if not isinstance(by_model, Mapping) or not all(
            isinstance(c, Mapping) and all(_number(v) for v in c.values()) for c in by_model.values()
        ):
            return f"usage.{key} is not an object of counts per model"
    return None


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool)


def session_problem(event: Any) -> str | None:
    """What makes ``event`` no ``sessions.jsonl`` line (None: it is one)."""
    if not isinstance(event, Mapping):
        return f"a {type(event).__name__}, not a session event"
    if "start" in event:
        line = event.get("line", 0)
        if not _number(event["start"]) or not isinstance(line, int) or isinstance(line, bool) or line < 0:
            return "start needs a time and a line number >= 0"
        return None
    if "end" in event:
        if not _number(event["end"]) or usage_problem(event.get("usage", {})) is not None:
            return "end needs a time (and usage, if any, an object of counts)"
        return None
    return "neither a start nor an end"


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(x, str) for x in value)


def meta_problem(meta: Any) -> str | None:
    """What makes ``meta`` no run's ``meta.json`` (None: it is one)."""
    if not isinstance(meta, Mapping):
        return "not a JSON object"
    if not isinstance(meta.get("config"), Mapping):
        return "config is not an object"
    wrong = config_problem(meta["config"])
    if wrong:
        return wrong
    if not _strings(meta.get("example_ids", [])):
        return "example_ids is not a list of ids"
    for key in ("framework_config", "models", "task", "temperatures"):
        if meta.get(key) is not None and not isinstance(meta[key], Mapping):
            return f"{key} is not an object"
    return None


_KINDS: dict[str, tuple[type, ...]] = {"str": (str,), "int": (int,), "float": (int, float), "bool": (bool,)}


def config_problem(config: Mapping[str, Any]) -> str | None:
    """The first value of a recorded run config whose type is not its field's (:class:`RunConfig`)."""
    from dataclasses import fields

    from courtroom.runner.config import RunConfig

    for f in fields(RunConfig):
        if f.name not in config:
            continue
        value, kinds = config[f.name], str(f.type).replace(" ", "").split("|")
        if value is None and "None" in kinds:
            continue
        ok = False
        for kind in kinds:
            base = kind.split("[")[0]
            if base == "dict":
                ok = ok or isinstance(value, Mapping)
            elif base in _KINDS:
                # a bool is no number here, and a number is no bool
                ok = ok or (isinstance(value, _KINDS[base]) and (base == "bool") == isinstance(value, bool))
            elif base == "Any":
                ok = True
        if not ok:
            return f"config.{f.name} is {json_type(value)}, not {' or '.join(kinds)}"
    return None


def json_type(value: Any) -> str:
    """How a JSON value is named in a message."""
    return (
        "null"
        if value is None
        else {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(type(value), "a number")
    )


def comparison_problem(info: Any) -> str | None:
    """What makes ``info`` no ``comparison.json`` (None: it is one)."""
    if not isinstance(info, Mapping):
        return "not a JSON object"
    if not isinstance(info.get("task"), str):
        return "task is not a name"
    if not _strings(info.get("frameworks")):
        return "frameworks is not a list of names"
    runs = info.get("runs")
    if not isinstance(runs, Mapping) or not all(isinstance(v, str) for v in runs.values()):
        return "runs is not an object of folder names"
    for key in ("config", "matched_baselines"):
        if info.get(key) is not None and not isinstance(info[key], Mapping):
            return f"{key} is not an object"
    return None
