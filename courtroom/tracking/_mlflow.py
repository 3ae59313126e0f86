"""The MLflow side of tracking: :func:`write` logs :class:`~courtroom.tracking._content.Entry` records.

Through ``MlflowClient`` (no active-run state, safe beside a program's own MLflow use). Each entry
is one MLflow run, found again by its ``courtroom.id`` tag when it exists (a resumed run, a continued
study: no duplicate) and created otherwise; a child's run names its parent (``mlflow.parentRunId``).
Params already logged are not logged again (MLflow refuses a changed value); metrics and artifacts
are (a metric's latest value is the one shown). MLflow is imported here only, when a run is tracked.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from courtroom._secrets import without_password
from courtroom.tracking._content import Entry

EXPERIMENT = "courtroom"
"""The MLflow experiment runs go to, unless ``$MLFLOW_EXPERIMENT_NAME`` names another."""
ID_TAG = "courtroom.id"
QUIET = ("mlflow", "alembic", "urllib3")
"""Loggers that would print MLflow's own start-up lines (database migrations, retries) on stderr."""
HTTP_DEFAULTS = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "20",
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
}
"""A slow or dead server costs seconds, not MLflow's minutes of retries (unless the user set these); and
MLflow's ``View run ... at: URL`` lines stay off stdout, which holds the command's table (``--format csv``)."""


def check_reachable(uri: str, timeout: float = 3.0) -> None:
    """An http(s) tracking server must accept connections; raises :class:`OSError` naming it if not."""
    url = urlsplit(uri)
    if url.scheme not in ("http", "https"):
        return
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname or "127.0.0.1", port), timeout=timeout).close()
    except OSError as exc:
        raise OSError(f"cannot reach the MLflow server at {without_password(uri)} ({exc.strerror or exc})") from None


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """MLflow's own INFO lines and stdout lines off and its HTTP retries short, for the duration."""
    import mlflow  # noqa: F401 - MLflow sets its loggers' levels when first imported: before ours

    levels = {name: logging.getLogger(name).level for name in QUIET}
    set_here = [k for k in HTTP_DEFAULTS if k not in os.environ]
    for name in QUIET:
        logging.getLogger(name).setLevel(logging.ERROR)
    os.environ.update({k: HTTP_DEFAULTS[k] for k in set_here})
    try:
        yield
    finally:
        for name, level in levels.items():
            logging.getLogger(name).setLevel(level)
        for k in set_here:
            os.environ.pop(k, None)


def write(uri: str, entry: Entry) -> str:
    """Log ``entry`` (and its children) to the tracking server or store at ``uri``; the parent's MLflow run id."""
    from mlflow import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    experiment = _experiment(client)
    return _write(client, experiment, entry, parent=None)


def run_url(uri: str, run_id: str) -> str | None:
    """The page of run ``run_id`` on the tracking server at ``uri`` (None: a store, with no page of its own)."""
    if not uri.lower().startswith(("http://", "https://")):
        return None
    from mlflow import MlflowClient

    from courtroom._secrets import without_password

    experiment = MlflowClient(tracking_uri=uri).get_run(run_id).info.experiment_id
    return f"{without_password(uri).rstrip('/')}/#/experiments/{experiment}/runs/{run_id}"


def experiment_name() -> str:
    """``$MLFLOW_EXPERIMENT_NAME``, else ``courtroom``."""
    return os.environ.get("MLFLOW_EXPERIMENT_NAME") or EXPERIMENT


def _experiment(client: Any) -> str:
    name = experiment_name()
    found = client.get_experiment_by_name(name)
    if found is not None:
        return str(found.experiment_id)
    try:
        return str(client.create_experiment(name))
    except Exception:  # created meanwhile by another process
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return str(found.experiment_id)


def _write(client: Any, experiment: str, entry: Entry, parent: str | None) -> str:
    from mlflow.entities import Metric, Param, RunTag

    run = _find(client, experiment, entry.key)
    tags = {ID_TAG: entry.key, "mlflow.runName": entry.name, **entry.tags}
    if parent is not None:
        tags["mlflow.parentRunId"] = parent
    if run is None:
        run = client.create_run(experiment, tags=tags, run_name=entry.name)
    run_id = run.info.run_id
    logged = dict(run.data.params)
    params = [Param(k, v) for k, v in entry.params.items() if k not in logged]
    now = int(time.time() * 1000)
    metrics = [Metric(k, v, now, 0) for k, v in entry.metrics.items()]
    tag_list = [RunTag(k, v) for k, v in tags.items()]
    for start in range(0, max(len(params), len(metrics), 1), 100):  # MLflow takes 100 params per batch
        client.log_batch(run_id, metrics=metrics[start : start + 100], params=params[start : start + 100],
                         tags=tag_list if start == 0 else [])  # fmt: skip
    for path, folder in entry.artifacts:
        client.log_artifact(run_id, str(path), folder)
    for name, data in entry.documents.items():
        client.log_dict(run_id, data, name)
    if entry.report is not None:
        _log_report(client, run_id, entry.report)
    for child in entry.children:
        _write(client, experiment, child, run_id)
    client.set_terminated(run_id, "FINISHED")
    return str(run_id)


def _find(client: Any, experiment: str, key: str) -> Any:
    quoted = key.replace("'", "\\'")
    found = client.search_runs([experiment], filter_string=f"tags.`{ID_TAG}` = '{quoted}'", max_results=1)
    return found[0] if found else None


def _log_report(client: Any, run_id: str, folder: Path) -> None:
    """The folder's self-contained HTML report, as ``report.html``."""
    from courtroom.reporting.html import write_report

    with tempfile.TemporaryDirectory(prefix="courtroom-report-") as tmp:
        out = Path(tmp) / "report.html"
        write_report(folder, out)
        client.log_artifact(run_id, str(out))
