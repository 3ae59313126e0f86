"""Results where researchers already look: every run, comparison, score, compile and study logged to MLflow.

With ``--track URI`` (``track=`` in Python; ``env``: ``$MLFLOW_TRACKING_URI``), each command, once
finished, logs what its folder holds to that MLflow tracking server or store (:func:`record`): a
run is one MLflow run; a comparison (or a score) a parent with a child per row; a compile one run
with its before/after scores, optimizer settings and the saved program; a study a parent with a
child per trial. What is logged is built in :mod:`courtroom.tracking._content` (no secrets: the
folder's recorded spec, never a base URL or a key) and written in :mod:`courtroom.tracking._mlflow`.

A URI that cannot name a tracking store (an unknown scheme, a port over 65535, a SQLite store
that is a folder or not a database, a bare ``mlflow.db``) is refused in one line before the first
request (:func:`check_uri`). Tracking never breaks a run: a server that is down, slow or failing
costs one warning line on stderr, and the results stay in their folder. A resumed run (or a
continued study) finds its MLflow run again by its ``courtroom.id`` tag, so none is logged twice.
MLflow (``pip install courtroom[mlflow]``) is imported only here, only when tracking.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtroom._secrets import without_password
from courtroom.tracking._uri import check_uri

if TYPE_CHECKING:
    from courtroom.spec import Experiment
    from courtroom.tracking._content import Entry

__all__ = ["check_uri", "logged", "record", "tracing", "tracking_uri", "written_to"]

logger = logging.getLogger(__name__)
_UNREACHED: set[str] = set()
"""Tracking URIs :func:`tracing` could not reach in the command running (its :func:`record` stays quiet)."""
URL = re.compile(r"[a-z][a-z0-9+.-]*://[^\s'\"()]+", re.IGNORECASE)
"""A URL in an error's text (MLflow's name the server with its password): redacted before it is printed."""


def tracking_uri(spec: Experiment) -> str | None:
    """The tracking URI ``spec`` names (``env``: ``$MLFLOW_TRACKING_URI``); None when not tracking."""
    track = spec.output.track
    if track == "env":
        return os.environ.get("MLFLOW_TRACKING_URI", "").strip() or None
    return track


def record(spec: Experiment, outcome: Any) -> str | None:
    """Log a command's ``outcome`` to the spec's tracking URI; its MLflow run id (None when not tracked).

    Never raises: a failure is one warning line (``tracking: ...; the results stay in FOLDER``).
    """
    uri = tracking_uri(spec)
    if uri is None:
        return None
    if uri in _UNREACHED:  # --trace found it down and said so: one warning per command
        _UNREACHED.discard(uri)
        return None
    try:
        entry = _entry(spec, outcome)
    except Exception as exc:  # noqa: BLE001 - tracking never breaks a finished run
        _warn(uri, exc, outcome)
        return None
    from courtroom.tracking._mlflow import check_reachable, quiet, write

    try:
        check_reachable(uri)
        with quiet():
            run_id = write(uri, entry)
            line = _where(uri, run_id)
    except Exception as exc:  # noqa: BLE001
        _warn(uri, exc, outcome)
        return None
    _LOGGED.append(line)
    return run_id


_LOGGED: list[str] = []
"""Where this process's commands logged, one line each, until :func:`logged` hands them over."""


def _where(uri: str, run_id: str) -> str:
    """``tracked: MLflow run ID at URL`` (a server: the run's page; a store: the store, for ``mlflow ui``)."""
    from courtroom.tracking._mlflow import run_url

    try:
        url = run_url(uri, run_id)
    except Exception:  # noqa: BLE001 - the run is logged; only its page's address is unknown
        url = None
    if url is not None:
        return f"tracked: MLflow run {run_id} at {url}"
    return f"tracked: MLflow run {run_id} in {without_password(uri)}"


def logged() -> list[str]:
    """The ``tracked: MLflow run ...`` lines of the runs logged since the last call (the CLI prints them on stderr)."""
    lines = list(_LOGGED)
    _LOGGED.clear()
    return lines


def _warn(uri: str, exc: BaseException, outcome: Any) -> None:
    text = URL.sub(lambda m: without_password(m.group(0)), " ".join(str(exc).split()))[:300] or type(exc).__name__
    folder = written_to(outcome)
    where = f"; the results stay in {folder}" if folder else ""
    logger.warning("tracking to %s failed: %s%s", without_password(uri), text, where)


def written_to(outcome: Any) -> Path | None:
    """The folder a command's ``outcome`` was written to (None: none, e.g. an unsaved compile)."""
    for name in ("run_dir", "group_dir", "out_dir", "report_dir", "path"):
        value = getattr(outcome, name, None)
        if value is not None:
            return Path(value)
    return None


def _entry(spec: Experiment, outcome: Any) -> Entry:
    """The :class:`Entry` of a command's outcome, by what the command returned."""
    from courtroom.tracking import _content

    kind = type(outcome).__name__
    if kind == "RunOutcome":
        return _content.run_entry(outcome.run_dir)
    if kind == "RepeatOutcome":
        return _content.run_entry(outcome.group_dir)
    if kind == "Comparison":
        return _content.comparison_entry(outcome.out_dir, outcome.table, outcome.runs)
    if kind == "ScoreOutcome":
        c = outcome.comparison
        return _content.comparison_entry(c.out_dir, c.table, c.runs, command="score")
    if kind == "CompileResult":
        recorded = dict(outcome.metadata.get("spec") or spec.to_dict())
        key = f"compile:{outcome.path or 'unsaved'}:{time.time_ns()}"
        return _content.compile_entry(outcome, recorded, key)
    if kind == "StudyOutcome":
        config = outcome.config
        storage = without_password(str(getattr(config, "storage", "") or ""))
        key = f"study:{storage}:{outcome.study.study_name}"
        return _content.study_entry(outcome, dict(getattr(config, "spec", None) or spec.to_dict()), key)
    raise TypeError(f"nothing to track in a {kind}")


@contextmanager
def tracing(spec: Experiment) -> Iterator[None]:
    """With ``--trace``: MLflow's DSPy autolog on for the duration, its traces sent to the tracking URI.

    Each top-level module call (one case) is a trace whose spans are the roles' module and LM calls,
    prompts and answers. A tracker that cannot be reached is one warning and no traces; MLflow's own
    lines stay quiet while it runs (a trace it cannot send is dropped, never an error of the run).
    """
    uri = tracking_uri(spec)
    if not spec.output.trace or uri is None:
        yield
        return
    from courtroom.tracking._mlflow import check_reachable, experiment_name, quiet

    _UNREACHED.discard(uri)
    with quiet():
        try:
            import mlflow
            import mlflow.dspy

            check_reachable(uri)
            mlflow.set_tracking_uri(uri)
            mlflow.set_experiment(experiment_name())
            mlflow.dspy.autolog(silent=True)
        except Exception as exc:  # noqa: BLE001 - tracing never breaks a run
            _warn(uri, exc, None)
            _UNREACHED.add(uri)
            yield
            return
        try:
            yield
        finally:
            with suppress(Exception):
                mlflow.dspy.autolog(disable=True, silent=True)
                mlflow.flush_trace_async_logging()  # the traces are in the store when the command returns
            # Its exporter would say at exit that it flushes (nothing is left to flush).
            logging.getLogger("mlflow.tracing.export.async_export_queue").setLevel(logging.WARNING)
