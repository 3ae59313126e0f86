"""Run folders: ``{created}_{framework}_{task}_{id}/`` with meta.json, results.jsonl, summary.json/.md.

:func:`run` is what ``courtroom run`` calls: load the task, build the program, evaluate, and
write the folder as results arrive (one JSONL line per example, flushed).
"""

from __future__ import annotations

import datetime as _dt
import json
import platform
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from courtroom.cache import configure_cache
from courtroom.errors import ConfigError, ModelError
from courtroom.eval.harness import ExampleResult, evaluate, total_usage
from courtroom.eval.metrics import score
from courtroom.eval.tasks import load_task
from courtroom.lms import RoleLMs, resolve_roles
from courtroom.programs import FRAMEWORKS, CourtroomProgram

VERSIONED = ("courtroom", "dspy", "litellm", "optuna", "datasets", "pandas", "scikit-learn")


@dataclass
class RunConfig:
    """Everything that defines a run (stored in meta.json)."""

    framework: str
    task: str
    data: str = "auto"
    split: str = "test"
    limit: int | None = None
    seed: int = 0
    knobs: dict[str, Any] = field(default_factory=dict)
    lm: str | None = None
    roles: dict[str, str] = field(default_factory=dict)
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    concurrency: int = 4
    out: str = "runs"


@dataclass
class RunOutcome:
    """What a finished run produced."""

    run_dir: Path
    summary: dict[str, Any]
    results: list[ExampleResult]


def versions() -> dict[str, str]:
    """Installed versions of the libraries that shape results."""
    out = {"python": platform.python_version()}
    for name in VERSIONED:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out


def get_framework(name: str) -> type[CourtroomProgram]:
    """The registered program class called ``name``."""
    if name not in FRAMEWORKS:
        raise ConfigError(f"unknown framework {name!r}: valid frameworks are {', '.join(sorted(FRAMEWORKS))}")
    return FRAMEWORKS[name]


def build_program(
    name: str, labels: Any, positions: Any = None, *, knobs: Mapping[str, Any] | None = None,
    lms: RoleLMs | None = None, lm: Any = None, roles: Mapping[str, Any] | None = None,
) -> CourtroomProgram:
    """Instantiate a framework, refusing knobs it does not have."""
    cls = get_framework(name)
    valid = cls.knobs()
    unknown = sorted(set(knobs or {}) - set(valid))
    if unknown:
        raise ConfigError(
            f"{name} has no knob {', '.join(unknown)}: its knobs are "
            + (", ".join(f"{k}={v}" for k, v in valid.items()) or "(none)")
        )
    if lms is not None:
        return cls(labels, positions, roles=lms, **dict(knobs or {}))
    return cls(labels, positions, lm=lm, roles=roles, **dict(knobs or {}))


def check_reachable(lms: RoleLMs, timeout: float = 3.0) -> None:
    """Fail fast, in one line, when a model server with an ``api_base`` does not accept connections."""
    for lm in {id(v): v for v in lms.values()}.values():
        base = (getattr(lm, "kwargs", None) or {}).get("api_base")
        if not base:
            continue
        url = urlparse(base)
        host, port = url.hostname or "127.0.0.1", url.port or (443 if url.scheme == "https" else 80)
        try:
            socket.create_connection((host, port), timeout=timeout).close()
        except OSError as exc:
            raise ModelError(
                f"cannot reach the model server at {url.scheme}://{host}:{port} ({exc.strerror or exc}): "
                "start it or fix --api-base"
            ) from exc


def redact_url(url: str | None) -> str | None:
    """A URL without user, password or query (where tokens hide), for files we write."""
    if not url:
        return url
    parts = urlparse(url)
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def new_run_dir(out: str | Path, framework: str, task: str) -> Path:
    """A fresh folder named ``{created}_{framework}_{task}_{id}``."""
    created = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = Path(out) / f"{created}_{framework}_{task}_{uuid.uuid4().hex[:6]}"
    path.mkdir(parents=True, exist_ok=False)
    return path


def summarize(results: list[ExampleResult], labels: Any, wall: float, prices: Any = None) -> dict[str, Any]:
    """Scores, failures, calls, tokens, cost and wall time of a list of results."""
    usage = total_usage(results)
    summary = score([r.gold for r in results], [r.prediction for r in results], labels)
    summary.update(
        calls=usage.calls, sent=usage.sent, cached=usage.cached, prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens, tokens=usage.prompt_tokens + usage.completion_tokens,
        cost=usage.cost(prices), wall_seconds=round(wall, 3),
        failed_ids=[r.id for r in results if r.prediction is None],
    )
    return summary


def summary_markdown(summary: Mapping[str, Any], title: str) -> str:
    """The summary as a small Markdown table."""
    rows = [
        ("accuracy", f"{summary['accuracy']:.3f}"), ("macro-F1", f"{summary['macro_f1']:.3f}"),
        ("examples", summary["n"]), ("failures", summary["failures"]),
        ("LM calls", f"{summary['calls']} ({summary['sent']} sent, {summary['cached']} cached)"),
        ("tokens", summary["tokens"]),
        ("cost", "n/a" if summary["cost"] is None else f"${summary['cost']:.4f}"),
        ("wall time", f"{summary['wall_seconds']:.1f} s"),
    ]
    return f"# {title}\n\n| metric | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n"


def run(config: RunConfig, *, progress: Callable[[ExampleResult], None] | None = None,
        on_start: Callable[[int], None] | None = None) -> RunOutcome:
    """Evaluate a framework on a task and write the run folder."""
    configure_cache()
    cls = get_framework(config.framework)
    data = load_task(config.task, data=config.data, split=config.split, limit=config.limit, seed=config.seed)
    lms = resolve_roles(
        config.lm, config.roles, valid_roles=cls.roles, temperature=config.temperature,
        max_tokens=config.max_tokens, api_base=config.api_base,
    )
    program = build_program(config.framework, data.task.labels, data.task.positions, knobs=config.knobs, lms=lms)
    check_reachable(lms)
    run_dir = new_run_dir(config.out, config.framework, data.task.name)
    meta = {
        "created": _dt.datetime.now().isoformat(timespec="seconds"),
        "config": {**asdict(config), "api_base": redact_url(config.api_base)},
        "framework_config": program.config(),
        "models": lms.names(cls.roles),
        "task": {"name": data.task.name, "labels": list(data.task.labels), "positions": program.positions,
                 "split": data.split, "source": data.source},
        "seed": config.seed,
        "example_ids": [ex.id for ex in data.examples],
        "versions": versions(),
    }
    (run_dir / "meta.json").write_text(json.dumps(meta, indent=2))
    if on_start:
        on_start(len(data.examples))
    start = time.perf_counter()
    with (run_dir / "results.jsonl").open("a") as sink:

        def record(res: ExampleResult) -> None:
            sink.write(json.dumps(res.to_dict()) + "\n")
            sink.flush()
            if progress:
                progress(res)

        results = evaluate(program, data.examples, concurrency=config.concurrency, on_result=record)
    summary = summarize(results, data.task.labels, time.perf_counter() - start)
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2))
    (run_dir / "summary.md").write_text(summary_markdown(summary, f"{config.framework} on {data.task.name}"))
    return RunOutcome(run_dir, summary, results)


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(meta, results in example order, summary or None) of a run folder."""
    path = Path(run_dir)
    if not (path / "meta.json").is_file():
        raise ConfigError(f"{path} is not a run folder (no meta.json): pass a folder printed by `courtroom run`")
    meta = json.loads((path / "meta.json").read_text())
    by_id: dict[str, dict[str, Any]] = {}
    results_path = path / "results.jsonl"
    if results_path.is_file():
        for line in results_path.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                by_id[row["id"]] = row
    order = {i: n for n, i in enumerate(meta.get("example_ids", []))}
    results = sorted(by_id.values(), key=lambda r: order.get(r["id"], len(order)))
    summary_path = path / "summary.json"
    summary = json.loads(summary_path.read_text()) if summary_path.is_file() else None
    return meta, results, summary
