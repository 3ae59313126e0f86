"""What each command's outcome logs to MLflow: :class:`Entry` records, built from the folders it wrote.

One :class:`Entry` per MLflow run: a run (or repeat group), a comparison with a child per row (a
score is one: the program and its matched vote), a compile, a study with a child per trial. Params
are the spec the folder recorded (never a base URL, a key or a password), metrics the figures the
folder holds (``summary.json``, ``table.csv``, the compile's proof, the trials' values), artifacts
its files. Nothing here imports MLflow: :mod:`courtroom.tracking._mlflow` writes the entries.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from courtroom._secrets import without_password

MAX_PARAM = 6000
"""MLflow's longest param value (characters); longer values are cut."""
RUN_FILES = ("results.jsonl", "summary.json", "summary.md", "meta.json", "group.json", "repeats.json", "repeats.md")
"""The files of a run folder or repeat group that travel as artifacts."""
COMPARISON_FILES = ("table.csv", "table.md", "comparison.json", "analyses.json", "plan.json", "frontier.png")
SECRET_NAMES = ("KEY", "TOKEN", "SECRET", "PASSWORD")
"""Environment variables whose values never go to the tracker (API keys): a param holding one is dropped."""


@dataclass
class Entry:
    """One MLflow run: its id tag, name, params, metrics, tags, artifacts and child runs."""

    key: str
    """What the run is (a folder's name, a study's name): tagged ``courtroom.id``; a resume finds the run by it."""
    name: str
    params: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    tags: dict[str, str] = field(default_factory=dict)
    artifacts: list[tuple[Path, str | None]] = field(default_factory=list)
    """(file, artifact folder or None for the top)."""
    children: list[Entry] = field(default_factory=list)
    report: Path | None = None
    """A run, repeat group or comparison folder whose HTML report is logged as ``report.html``."""
    documents: dict[str, Any] = field(default_factory=dict)
    """Artifact file name -> JSON-ready data written as that file (a study's ``best.json``)."""


def flat_params(data: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """Nested spec sections as ``section.field`` -> text; empty values left out, secrets redacted."""
    out: dict[str, str] = {}
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping) and prefix == "":
            out |= flat_params(value, f"{name}.")
            continue
        if value is None or value == [] or value == {} or value == "":
            continue
        text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
        out[name] = _clean(text)[:MAX_PARAM]
    return {k: v for k, v in out.items() if not _holds_secret(v)}


def _clean(text: str) -> str:
    """URLs in ``text`` without their passwords."""
    if "://" not in text:
        return text
    return " ".join(without_password(word) for word in text.split(" "))


def _holds_secret(text: str) -> bool:
    secrets = [v for k, v in os.environ.items() if any(s in k.upper() for s in SECRET_NAMES) and len(v) >= 8]
    return any(s in text for s in secrets)


def numbers(data: Mapping[str, Any], prefix: str = "") -> dict[str, float]:
    """The finite numbers of ``data`` (not booleans) as metrics."""
    out = {}
    for key, value in data.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            continue
        if math.isfinite(value):
            out[f"{prefix}{key}"] = float(value)
    return out


def _interval(metrics: dict[str, float]) -> dict[str, float]:
    """``accuracy_ci_low``/``_high``: Wilson's 95% over the cases where no interval is given (repeats give one)."""
    if "accuracy" not in metrics or "n" not in metrics or "accuracy_ci_low" in metrics:
        return {}
    from courtroom.eval.metrics import wilson

    low, high = wilson(metrics["accuracy"], int(metrics["n"]))
    return {} if math.isnan(low) else {"accuracy_ci_low": low, "accuracy_ci_high": high}


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _files(folder: Path, names: Iterable[str], into: str | None = None) -> list[tuple[Path, str | None]]:
    return [(folder / n, into) for n in names if (folder / n).is_file()]


def run_entry(folder: Path, command: str = "run") -> Entry:
    """A run folder or repeat group: its spec, its summary's figures, its files and HTML report."""
    folder = Path(folder)
    group = (folder / "group.json").is_file()
    repeats = sorted(p for p in folder.iterdir() if (p / "meta.json").is_file()) if group else []
    meta = _read((repeats[0] if repeats else folder) / "meta.json")
    params = flat_params(meta.get("spec") or {})
    if meta.get("framework_config"):
        params |= {f"knob.{k}": v for k, v in flat_params(dict(meta["framework_config"]), "").items()}
    metrics = numbers(_read(folder / "summary.json"))
    metrics |= _interval(metrics)
    children = []
    if group:  # a repeat group: each metric's mean with its interval (repeats.json), a child per repeat
        stats = dict(_read(folder / "repeats.json").get("stats") or {})
        for metric, row in stats.items():
            if isinstance(row, Mapping):
                metrics |= numbers({k: v for k, v in row.items() if k != "mean"}, f"{metric}_")
                metrics |= numbers({metric: row.get("mean")})
        for sub in repeats:
            child = run_entry(sub, command)
            child.key = f"{folder.name}/{sub.name}"
            children.append(child)
    tags = {"courtroom.command": command, "courtroom.folder": folder.name}
    framework = (meta.get("config") or {}).get("framework") or (meta.get("spec") or {}).get("design", {}).get(
        "framework"
    )
    if framework:
        tags["courtroom.framework"] = str(framework)
    return Entry(folder.name, folder.name, params, metrics, tags, _files(folder, RUN_FILES), children, report=folder)


def comparison_entry(folder: Path, table: Any, runs: Mapping[str, str], command: str = "compare") -> Entry:
    """A comparison folder (or a score's): the parent, with a child per row of ``table`` (a DataFrame)."""
    folder = Path(folder)
    recorded = _read(folder / "comparison.json")
    params = flat_params(recorded.get("spec") or {})
    knobs = dict((recorded.get("config") or {}).get("knobs") or {})
    plots = (
        sorted(p.relative_to(folder) for p in (folder / "plots").glob("*.png")) if (folder / "plots").is_dir() else []
    )
    artifacts = _files(folder, COMPARISON_FILES) + [(folder / p, "plots") for p in plots]
    tags = {"courtroom.command": command, "courtroom.folder": folder.name}
    parent = Entry(folder.name, folder.name, params, {"rows": float(len(table))}, tags, artifacts, report=folder)
    rows = table.to_dict("index")
    for row, values in rows.items():
        metrics = numbers(values)
        metrics |= _interval(metrics)
        vote = values.get("matched_vote")
        child_tags = {"courtroom.command": command, "courtroom.row": str(row)}
        if isinstance(vote, str) and vote in rows:  # the majority vote at this row's calls: its figures beside
            child_tags["courtroom.matched_vote"] = vote
            metrics |= numbers({k: rows[vote].get(k) for k in ("accuracy", "macro_f1")}, "matched_vote_")
        child_params = params | {"row": str(row)}
        child_params |= {f"knob.{k}": v for k, v in flat_params(dict(knobs.get(row) or {}), "").items()}
        sub = folder / str(runs.get(row, row))
        parent.children.append(
            Entry(f"{folder.name}/{sub.name}", str(row), child_params, metrics, child_tags, _files(sub, RUN_FILES))
        )
    return parent


def compile_entry(result: Any, spec: Mapping[str, Any], key: str) -> Entry:
    """A compile: its spec and optimizer settings, before/after scores on dev and test, the saved program."""
    meta = result.metadata
    optimizer = dict(meta.get("optimizer") or {})
    params = flat_params(spec) | {"optimizer.name": str(optimizer.get("name"))}
    params |= {f"optimizer.{k}": v for k, v in flat_params(dict(optimizer.get("settings") or {}), "").items()}
    metrics: dict[str, float] = {}
    for split, gain in result.gains.items():
        for when in ("before", "after"):
            score = getattr(gain, when)
            metrics |= numbers(score.to_dict(), f"{split}_{when}_")
        metrics |= numbers(
            {k: getattr(gain, k) for k in ("difference", "ci_low", "ci_high", "p_value", "only_before", "only_after")},
            f"{split}_gain_",
        )
    metrics |= numbers({"optimizer_seconds": optimizer.get("seconds")})
    tags = {"courtroom.command": "compile", "courtroom.kept": str(result.kept)}
    if spec.get("design", {}).get("framework"):
        tags["courtroom.framework"] = str(spec["design"]["framework"])
    artifacts: list[tuple[Path, str | None]] = []
    if result.path is not None and Path(result.path).is_file():
        artifacts.append((Path(result.path), None))
    for name, folder in (result.run_dirs or {}).items():
        artifacts += _files(Path(folder), ("results.jsonl", "summary.json"), name.replace(" ", "-"))
    name = f"compile {tags.get('courtroom.framework', '')} {optimizer.get('name', '')}".strip()
    return Entry(key, name, params, metrics, tags, artifacts)


TEST_METRICS = ("accuracy", "ci_low", "ci_high", "macro_f1", "failures", "n")
"""A chosen trial's held-out test scores, logged as ``test_accuracy``, ``test_ci_low``, ..."""


def _test_metrics(scores: Mapping[str, Any]) -> dict[str, float]:
    return {f"test_{k}": float(scores[k]) for k in TEST_METRICS if isinstance(scores.get(k), int | float)}


def study_entry(outcome: Any, spec: Mapping[str, Any], key: str) -> Entry:
    """A study: its spec and best value(s), a child per trial (params, values, state, usage), the report folder."""
    study = outcome.study
    multi = len(study.directions) > 1
    best = outcome.best
    params = flat_params(spec) | {"study.name": study.study_name}
    metrics: dict[str, float] = {"trials": float(len(study.trials))}
    tested = {int(k): _test_metrics(v) for k, v in (getattr(outcome, "test", None) or {}).items()}
    if best and not multi:
        metrics |= {"best_value": float(best[0].value), "best_trial": float(best[0].number)}
        metrics |= tested.get(best[0].number, {})  # the held-out score of the trial chosen
    elif best:
        metrics["pareto_size"] = float(len(best))
    tags = {"courtroom.command": "study", "courtroom.study": study.study_name}
    report = Path(outcome.report_dir) if outcome.report_dir else None
    files = sorted(p for p in report.iterdir() if p.is_file() and not p.name.startswith(".")) if report else []
    artifacts: list[tuple[Path, str | None]] = [(p, None) for p in files]
    from courtroom.optimize.study.report import cost_unit

    names = ("score", f"{cost_unit(study.trials)}_per_example") if multi else ("value",)
    chosen = [{"number": t.number, **dict(zip(names, t.values, strict=False)), "params": t.params} for t in best]
    documents = {"pareto.json" if multi else "best.json": chosen if multi else (chosen[0] if chosen else None)}
    parent = Entry(key, f"study {study.study_name}", params, metrics, tags, artifacts, documents=documents)
    for trial in study.trials:
        values = dict(zip(names, trial.values or [], strict=False))
        usage = {k: v for k, v in trial.user_attrs.items() if k not in ("heartbeat", "duplicate_of")}
        metrics = numbers(values) | numbers(usage) | tested.get(trial.number, {})
        child_tags = {"courtroom.command": "study", "courtroom.trial": str(trial.number), "state": trial.state.name}
        if trial.user_attrs.get("duplicate_of") is not None:  # a repeated configuration: its value reused
            child_tags["courtroom.duplicate_of"] = str(trial.user_attrs["duplicate_of"])
        child_params = {k: v for k, v in flat_params(dict(trial.params), "").items()}
        parent.children.append(Entry(f"{key}/trial-{trial.number}", f"trial {trial.number}", child_params, metrics,
                                     child_tags))  # fmt: skip
    return parent
