"""Past runs, repeat groups and comparisons in a folder, newest first (``courtroom runs``).

Each row is read from the files a folder already holds (``meta.json`` and ``summary.json`` of
a run, ``group.json`` and ``repeats.json`` of a repeat group, ``comparison.json`` and
``table.csv`` of a comparison). A ``courtroom score`` folder (a comparison folder too) is listed
as a ``score``, at its program's row. A folder that is none of these, or is half written, is skipped.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.runner._records import comparison_problem, meta_problem

COLUMNS = ("created", "kind", "framework", "task", "models", "n", "accuracy", "cost", "path")


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):  # missing, not UTF-8 or not JSON: the folder is skipped
        return None


def _models(config: dict[str, Any], models: dict[str, str] | None = None) -> str:
    """``lawyer=a, judge=b`` for a run's models (one name when every role shares it)."""
    names = dict(models or {})
    names.pop("default", None)
    if not names:
        names = {"default": config.get("lm") or "local"} | dict(config.get("roles") or {})
    if len(set(names.values())) == 1:
        return next(iter(names.values()))
    return ", ".join(f"{r}={m}" for r, m in names.items())


def _created(path: Path, stamp: str | None = None) -> str:
    if stamp:
        return stamp.replace("T", " ")
    return _dt.datetime.fromtimestamp(path.stat().st_mtime).isoformat(sep=" ", timespec="seconds")


def _run_row(path: Path) -> dict[str, Any] | None:
    meta = _read(path / "meta.json")
    if meta_problem(meta):
        return None
    summary = _read(path / "summary.json") or {}
    config = meta.get("config") or {}
    return {
        "created": _created(path, meta.get("created")),
        "kind": "run" if summary else "run (unfinished)",
        "framework": config.get("framework"),
        "task": (meta.get("task") or {}).get("name"),
        "models": _models(config, meta.get("models")),
        "n": summary.get("n", len(meta.get("example_ids") or [])),
        "accuracy": summary.get("accuracy"),
        "cost": summary.get("cost"),
        "path": str(path),
    }


def _group_row(path: Path) -> dict[str, Any] | None:
    info = _read(path / "group.json")
    if not isinstance(info, dict):
        return None
    first = _run_row(path / "repeat-0") or {}
    stats = (_read(path / "repeats.json") or {}).get("stats") or {}
    config = info.get("config") or {}
    return first | {
        "created": first.get("created") or _created(path),
        "kind": f"{info.get('repeats')} repeats" if stats else f"{info.get('repeats')} repeats (unfinished)",
        "framework": config.get("framework"),
        "accuracy": (stats.get("accuracy") or {}).get("mean"),
        "cost": (stats.get("cost") or {}).get("mean"),
        "path": str(path),
    }


def _comparison_row(path: Path) -> dict[str, Any] | None:
    info = _read(path / "comparison.json")
    unfinished = comparison_problem(info) is not None
    if unfinished:  # interrupted before its table: plan.json names what it runs
        info = _read(path / "plan.json")
        if not isinstance(info, dict):
            return None
    config = info.get("config") or info.get("options") or {}
    scored = (info.get("spec") or {}).get("command") == "score"
    kind = "score" if scored else "comparison"
    row: dict[str, Any] = {
        "created": _created(path),
        "kind": f"{kind} (unfinished)" if unfinished else kind,
        "framework": ",".join(info.get("frameworks") or []),
        "task": info.get("task"),
        "models": _models(config),
        "n": None,
        "accuracy": None,
        "cost": None,
        "path": str(path),
    }
    runs = info.get("runs") or {}
    inner = None
    if runs:
        first = path / next(iter(runs.values()))
        inner = _group_row(first) if (first / "group.json").is_file() else _run_row(first)
        row["n"] = (inner or {}).get("n")
        row["created"] = (inner or {}).get("created") or row["created"]
    program = (info.get("frameworks") or [None])[0] if scored else None
    if scored:
        # A score folder is one program beside its matched vote: the program's own row, not the best of the two.
        framework = (inner or {}).get("framework")
        row["framework"] = f"{framework} ({program})" if framework and program else program or framework
        row["models"] = (inner or {}).get("models") or row["models"]
    try:
        table = pd.read_csv(path / "table.csv", index_col=0)
        accuracy = table["accuracy"]
        row["accuracy"] = float(accuracy[program] if program in accuracy.index else accuracy.max())
        row["cost"] = float(table["cost"].sum()) if table["cost"].notna().any() else None
    except (OSError, KeyError, ValueError, IndexError, pd.errors.ParserError):
        pass
    return row


def list_runs(folders: str | Path | Sequence[str | Path] = ("runs", "comparisons")) -> pd.DataFrame:
    """One row per run, repeat group and comparison directly under ``folders``, newest first.

    Columns: created, kind, framework, task, models, n, accuracy (a comparison: its best
    framework's; a score: the program's own, not its matched vote's), cost (a comparison or a
    score: the sum of its rows), path.
    """
    roots = [folders] if isinstance(folders, str | Path) else list(folders)
    rows = []
    for root in map(Path, roots):
        if not root.is_dir():
            continue
        for child in root.iterdir():
            if not child.is_dir():
                continue
            if (child / "comparison.json").is_file() or (child / "plan.json").is_file():
                row = _comparison_row(child)
            elif (child / "group.json").is_file():
                row = _group_row(child)
            else:
                row = _run_row(child)
            if row:
                rows.append(row)
    table = pd.DataFrame(rows, columns=list(COLUMNS))
    return table.sort_values("created", ascending=False, kind="stable").reset_index(drop=True)
