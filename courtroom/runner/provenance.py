"""What ran: models per role, seed, date, data source, n and library versions.

:func:`provenance` reads it from a run folder, repeat group or comparison folder
(:func:`study_provenance` from a study); :func:`html_block` renders it at the top of an HTML
report and :func:`subtitle` under a plot (:func:`courtroom.reporting.plots.stamp`). One builder and one
renderer each, so every report and every plot says the same thing.
"""

from __future__ import annotations

import datetime as _dt
import html
import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from courtroom._files import read_jsonl
from courtroom.errors import ConfigError, DataError
from courtroom.runner._records import comparison_problem, meta_problem

SHOWN_VERSIONS = ("courtroom", "dspy", "litellm", "optuna", "python")
"""The versions a plot subtitle names (the HTML block names them all)."""


@dataclass
class Provenance:
    """What a report or plot shows the results of."""

    kind: str
    """``run``, ``repeat group``, ``comparison`` or ``study``."""
    task: str | None = None
    models: dict[str, str] = field(default_factory=dict)
    """Role -> model name (several names joined when rows or repeats used different ones)."""
    seed: Any = None
    created: str | None = None
    """When the first run started (ISO date and time)."""
    source: str | None = None
    """Where the examples came from (the task's data source and split)."""
    n: int | None = None
    """Examples per run (per repeat, per compared row, per trial)."""
    versions: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)
    """Anything else worth naming: frameworks, repeats, trials."""
    labels: list[str] = field(default_factory=list)
    golds: dict[str, int] = field(default_factory=dict)
    """Gold label -> count over the examples (for the majority-class line)."""

    def chance(self) -> tuple[float, str] | None:
        """(rate, legend) of the accuracy to beat: the majority class when gold counts are known, else 1/labels."""
        if self.golds:
            label, count = Counter(self.golds).most_common(1)[0]
            rate = count / sum(self.golds.values())
            return rate, f"majority class ({label}): {rate:.2f}"
        if self.labels:
            return 1 / len(self.labels), f"chance (1/{len(self.labels)} labels): {1 / len(self.labels):.2f}"
        return None

    def to_dict(self) -> dict[str, Any]:
        """As JSON."""
        return asdict(self)


def _read(path: Path) -> Any:
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (OSError, ValueError):  # missing, not UTF-8 or not JSON
        return None


def _name(model: Any) -> str:
    return " + ".join(map(str, model)) if isinstance(model, list) else str(model)


def _merge_models(per_run: Mapping[str, Mapping[str, Any]]) -> dict[str, str]:
    """Role -> model over several runs; a role served by different models names each with its rows."""
    seen: dict[str, dict[str, list[str]]] = {}
    for row, models in per_run.items():
        for role, model in models.items():
            seen.setdefault(role, {}).setdefault(_name(model), []).append(row)
    return {
        role: next(iter(by)) if len(by) == 1 else "; ".join(f"{m} ({', '.join(rows)})" for m, rows in by.items())
        for role, by in seen.items()
    }


def _golds(run_dir: Path) -> Counter[str]:
    """Gold label counts of a run's results (a cut-off line is skipped; a retried example counts once)."""
    by_id = {}
    for row in read_jsonl(run_dir / "results.jsonl")[0]:
        try:
            by_id[row["id"]] = str(row["gold"])
        except (KeyError, TypeError):
            continue
    return Counter(by_id.values())


def _from_runs(kind: str, runs: Mapping[str, Path]) -> Provenance:
    """Provenance of one or more run folders (the first one's date, source, n and golds)."""
    # A meta.json of the wrong shape is named by the reader of the folder itself (load_run).
    metas = {name: m if isinstance(m := _read(path / "meta.json"), Mapping) else {} for name, path in runs.items()}
    first_name = next(iter(runs), None)
    first = metas.get(first_name, {}) if first_name else {}
    task = first.get("task") or {}
    source = task.get("source")
    if task.get("split"):
        source = f"{source or 'unknown source'}, {task['split']} split"
    golds = _golds(runs[first_name]) if first_name else Counter()
    versions = dict(first.get("versions") or {})
    differing = sorted(
        {k for m in metas.values() for k, v in (m.get("versions") or {}).items() if versions.get(k) != v}
    )
    extra = {"versions differ between runs": ", ".join(differing)} if differing else {}
    return Provenance(
        kind=kind,
        task=task.get("name"),
        models=_merge_models({n: m.get("models") or {} for n, m in metas.items()}),
        seed=first.get("seed", (first.get("config") or {}).get("seed")),
        created=first.get("created"),
        source=source,
        n=len(first.get("example_ids") or []) or sum(golds.values()) or None,
        versions=versions,
        extra=extra,
        labels=list(task.get("labels") or []),
        golds=dict(golds),
    )


def provenance(folder: str | Path) -> Provenance:
    """The provenance of a run folder, repeat group, comparison folder or study report folder."""
    src = Path(folder)
    if (src / "comparison.json").is_file():
        info = _read(src / "comparison.json")
        if comparison_problem(info):  # named where the comparison is loaded (load_comparison)
            info = {}
        runs = {}
        for name, rel in (info.get("runs") or {}).items():
            inner = src / rel
            runs[name] = inner / "repeat-0" if (inner / "group.json").is_file() else inner
        out = _from_runs("comparison", runs)
        out.task = info.get("task") or out.task
        out.seed = (info.get("config") or {}).get("seed", out.seed)
        out.extra = {"rows": ", ".join(info.get("frameworks") or [])} | out.extra
        counts = [len(list((src / rel).glob("repeat-*"))) for rel in (info.get("runs") or {}).values()]
        if any(counts):
            out.extra["repeats"] = str(max(counts))
        return out
    if (src / "group.json").is_file():
        info = _read(src / "group.json") or {}
        folders = [p for p in src.glob("repeat-*") if (p / "meta.json").is_file()]
        out = _from_runs("repeat group", {"repeat-0": src / "repeat-0"} if (src / "repeat-0").is_dir() else {})
        out.extra = {"framework": str((info.get("config") or {}).get("framework")), "repeats": str(len(folders))}
        return out
    if (src / "meta.json").is_file():
        meta = _read(src / "meta.json") or {}
        problem = meta_problem(meta)
        if problem:  # the words load_run uses
            raise DataError(f"{src / 'meta.json'} is damaged ({problem}): restore it from a copy, or start a new run")
        out = _from_runs("run", {"run": src})
        out.extra = {"framework": str((meta.get("config") or {}).get("framework"))}
        return out
    saved = (_read(src / "study.json") or {}).get("provenance")
    if saved:
        return Provenance(**saved)
    raise ConfigError(f"{src} is not a run, repeat group, comparison or study report folder")


def study_provenance(
    study: Any, config: Mapping[str, Any] | None = None, models: Mapping[str, Any] | None = None
) -> Provenance:
    """The provenance of an Optuna study: the spec recorded when it was created, else its config, and its trials.

    The recorded spec wins over the invocation's ``config``: a plot subtitle says what every trial
    ran under, not what the latest worker was given.
    """
    config = dict(config or {})
    stored = dict(study.user_attrs.get("courtroom") or {})
    recorded = stored.get("spec") or {}
    if recorded:
        data, chosen = recorded.get("data") or {}, recorded.get("models") or {}
        config |= {
            "task": stored.get("task") or config.get("task"),
            "seed": data.get("seed", config.get("seed")),
            "dev": data.get("dev_limit") or config.get("dev"),
            "models": list(chosen.get("lm") or []),
            "roles": dict(chosen.get("roles") or {}),
        }
    names = {r: _name(m) for r, m in (models or {}).items()}
    if not names:
        listed = list(config.get("models") or [])
        if len(listed) > 1:
            names["every role"] = "searched among " + ", ".join(listed)
        elif listed:
            names["default"] = listed[0]
        names |= {r: str(m) for r, m in (config.get("roles") or {}).items()}
    starts = [t.datetime_start for t in study.trials if t.datetime_start]
    sizes = [int(t.user_attrs["examples"]) for t in study.trials if t.user_attrs.get("examples")]
    task = config.get("task") or stored.get("task")
    data = config.get("data")
    frameworks = config.get("frameworks") or stored.get("frameworks")
    extra = {
        "study": str(study.study_name),
        "framework": ", ".join(frameworks) if frameworks else str(config.get("framework") or stored.get("framework")),
        "trials": str(len(study.trials)),
    }
    from courtroom._versions import versions

    return Provenance(
        kind="study",
        task=task,
        models=names or {"every role": "not recorded"},
        seed=config.get("seed"),
        created=min(starts).isoformat(timespec="seconds") if starts else None,
        source=f"{task} ({data or 'auto'} data), dev split" if task else None,
        n=min(max(sizes), config["dev"])
        if sizes and config.get("dev")
        else (max(sizes) if sizes else config.get("dev")),
        versions=versions(),
        extra=extra,
    )


def _date(created: str | None) -> str:
    if not created:
        return "unknown date"
    try:
        return _dt.datetime.fromisoformat(created).strftime("%Y-%m-%d %H:%M")
    except ValueError:
        return created


def _models_text(models: Mapping[str, str]) -> str:
    if not models:
        return "not recorded"
    if len(set(models.values())) == 1 and len(models) > 1:
        return f"{next(iter(models.values()))} (every role)"
    return ", ".join(f"{r}={m}" for r, m in models.items())


def rows(p: Provenance) -> list[tuple[str, str]]:
    """(what, value) pairs in reading order: what an HTML block or a subtitle shows."""
    out = [
        ("task", str(p.task or "unknown")),
        ("models per role", _models_text(p.models)),
        ("seed", "not recorded" if p.seed is None else str(p.seed)),
        ("date", _date(p.created)),
        ("data source", p.source or "unknown"),
        ("n", "unknown" if p.n is None else f"{p.n:,} examples"),
    ]
    out += list(p.extra.items())
    out.append(("versions", ", ".join(f"{k} {v}" for k, v in p.versions.items()) or "not recorded"))
    return out


def html_block(p: Provenance) -> str:
    """The header block of an HTML report: what ran, in one small table."""
    body = "".join(f"<tr><th>{html.escape(k)}</th><td>{html.escape(v)}</td></tr>" for k, v in rows(p))
    return f'<section id="provenance" class="provenance"><table class="provenance">{body}</table></section>'


def subtitle(p: Provenance) -> str:
    """A plot's subtitle: models, seed, date, source, n and the main library versions, on a few lines."""
    shown = {k: v for k, v in p.versions.items() if k in SHOWN_VERSIONS}
    return "\n".join(
        [
            f"{p.task or 'unknown task'} · models: {_models_text(p.models)}",
            f"seed {p.seed} · {_date(p.created)} · {p.source or 'unknown source'} · n={p.n}",
            ", ".join(f"{k} {v}" for k, v in shown.items()) or "versions not recorded",
        ]
    )
