"""Resume an interrupted run in its own folder (``courtroom run --resume RUN_DIR``).

Only examples without a result run; every LM answer of the earlier session comes back from the
cache, so no successful call is sent twice. ``--retry-failed`` reruns failed examples too: their
answers that parsed come back from the cache, and only the calls that failed are sent again.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from courtroom import _stop
from courtroom._files import read_jsonl
from courtroom._lock import FolderLock
from courtroom.errors import ConfigError
from courtroom.eval.harness import ExampleResult
from courtroom.models.cache import require_base_url
from courtroom.models.lms import RoleLMs
from courtroom.programs import CourtroomProgram
from courtroom.runner.config import RunConfig
from courtroom.runner.runs import RunOutcome, RunSetup, load_run

RETRY_SALT = 10_000
"""Rollout offset of ``--retry-failed`` attempt n (n x this), for bad answers asked again; below the
bad-answer retry's offset (``RETRY_ROLLOUT``) for any attempt under 50."""

SAFE = frozenset({"api_base", "concurrency", "prices", "fail_on_error", "out", "timeout", "batch", "n_sampling"})
"""Settings a resume may change: they change how calls are made, never the answers."""


def check_same(stored: Mapping[str, Any], overrides: Mapping[str, Any], where: str | Path, what: str = "run") -> None:
    """Refuse, in one line, overrides that would change the run's answers (models aside).

    ``knobs`` may name a subset of the knobs; every other setting must equal the stored one.
    Model names are compared after the models are built (:func:`check_models`).
    """
    from courtroom.spec import typed

    differ = []
    for key, value in overrides.items():
        if value is None or value == {} or key in SAFE or key in ("lm", "roles"):
            continue
        old = stored.get(key)
        if key == "knobs":
            old = old or {}
            differ += [
                f"{typed('--set', {k: v})} (the {what} has {typed('--set', {k: old.get(k)})})"
                for k, v in value.items()
                if old.get(k) != v
            ]
        elif value != old:
            differ.append(f"{typed(key, value)} (the {what} has {typed(key, old)})")
    if differ:
        raise ConfigError(
            f"cannot resume {where} with {'; '.join(differ)}: a resume uses the {what}'s settings; "
            f"drop those options, or start a new {what}"
        )


def check_models(before: Mapping[str, Any], after: Mapping[str, Any], where: str | Path) -> None:
    """Refuse a resume whose role models differ from the run's (``meta.json`` ``models``)."""
    differ = [
        f"{role} {after.get(role)} (the run has {model})" for role, model in before.items() if after.get(role) != model
    ]
    if differ:
        raise ConfigError(
            f"cannot resume {where} with other models: {'; '.join(differ)}; drop --lm/--role, or start a new run"
        )


def resume(
    run_dir: str | Path,
    *,
    progress: Callable[[ExampleResult], None] | None = None,
    on_start: Callable[[int], None] | None = None,
    lms: RoleLMs | None = None,
    retry_failed: bool = False,
    budget: Any = None,
    **overrides: Any,
) -> RunOutcome:
    """Finish an interrupted run in its own folder: only examples without a result are run.

    Every LM answer of the earlier session is in the cache, so nothing is sent twice. Model
    settings (``lm``, ``roles``, ``api_base``, ``concurrency``, ...) may be overridden; a run that
    had an ``api_base`` needs it again (base URLs are never written to disk). With ``retry_failed``, examples
    that failed are run again too.
    """
    path = Path(run_dir)
    load_run(path)  # one line for a folder that is not a run folder, before taking its lock
    with FolderLock(path, what="run folder"), _stop.saving_to(path):
        return _resume(path, progress, on_start, lms, retry_failed, budget, overrides)


def _resume(
    path: Path,
    progress: Callable[[ExampleResult], None] | None,
    on_start: Callable[[int], None] | None,
    lms: RoleLMs | None,
    retry_failed: bool,
    budget: Any,
    overrides: Mapping[str, Any],
) -> RunOutcome:
    meta, rows, _ = load_run(path)
    known = set(RunConfig.__dataclass_fields__)
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise ConfigError(f"cannot override {', '.join(unknown)} on resume")
    config = RunConfig(**{k: v for k, v in meta["config"].items() if k in known})
    check_same(meta["config"] | {"knobs": meta.get("framework_config") or {}}, overrides, path)
    for key, value in overrides.items():
        if value is not None and value != {} and key != "knobs":
            setattr(config, key, value)
    if lms is None:
        require_base_url(meta["config"], config.api_base, str(path))
    budget = budget.for_run(config) if budget is not None else None
    setup = RunSetup.build(config, lms)
    if meta.get("models"):
        check_models(meta["models"], setup.lms.names(type(setup.program).roles), path)
    ids = [ex.id for ex in setup.examples]
    if ids != meta.get("example_ids"):
        raise ConfigError(
            f"{path}: the data no longer gives the run's examples (ids differ); resume needs the same data and seed"
        )
    keys = set(ExampleResult.__dataclass_fields__)
    done = [
        ExampleResult(**{k: v for k, v in r.items() if k in keys})
        for r in rows
        if not (retry_failed and r.get("prediction") is None)
    ]
    if setup.program.config() != meta.get("framework_config"):
        raise ConfigError(f"{path}: framework settings differ from the run's; resume with the same --set values")
    with setup.batching(path), setup.recording(path):  # batches still in flight are followed, not sent again
        if setup.learns and len(done) < len(ids):
            setup.prepare(budget)  # refits from the cache: the earlier session sent these calls
        retry = None
        if retry_failed:
            retry = _retry_program(path, config, setup, {r["id"] for r in rows if r.get("prediction") is None})
        return setup.execute(path, done, progress, on_start, retry, budget=budget)


def _retry_program(
    run_dir: Path, config: RunConfig, setup: RunSetup, failed: set[str]
) -> tuple[CourtroomProgram, set[str]] | None:
    """The program that reruns failed examples, reusing every answer that was received and parsed.

    Answers that parsed come back from the cache; a request that failed (429, 5xx, time-out) was
    never cached and is sent again; a cut-off or unparseable answer sits in the cache like a good
    one, so the program asks it again under a rollout id offset by the attempt number (sent afresh).
    """
    if not failed:
        return None
    rows = read_jsonl(run_dir / "results.jsonl")[0]
    attempts = max(sum(isinstance(r, dict) and r.get("id") == i for r in rows) for i in failed)
    # The copy keeps what prepare() fitted and the program's own role map (a role routed to another
    # role's model, e.g. Debate-Feedback's summarizer, keeps its model and so its cache keys).
    program = setup.program.deepcopy()
    program.refresh = RETRY_SALT * attempts
    return program, failed
