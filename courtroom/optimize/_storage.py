"""Optuna storages for studies: SQLite by default, a journal file, or PostgreSQL for several machines.

* ``sqlite:///path.db`` (default ``sqlite:///courtroom-studies.db``) and ``postgresql://...`` are
  RDB storages with heartbeats, so Optuna marks trials of killed workers as failed.
* ``journal:PATH`` (or a path ending in ``.journal``/``.log``) is Optuna's journal file, safe for
  several processes on one machine. It has no heartbeat: :func:`fail_stale_trials` marks a
  RUNNING trial failed when its worker process on this host is gone, or when its last heartbeat
  (a user attribute the objective refreshes) is older than the grace period.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from courtroom.errors import ConfigError

DEFAULT_STORAGE = "sqlite:///courtroom-studies.db"
HEARTBEAT_SECONDS = 30
GRACE_SECONDS = 180
WAIT_SECONDS = 3600
"""How long a worker waits for another to finish creating the study (or running its queued trial)."""
WORKER = f"{socket.gethostname()}:{os.getpid()}"


def redact(url: str) -> str:
    """``url`` with any password replaced by ``***`` (for messages and reports)."""
    parts = urlsplit(url)
    if parts.password:
        netloc = parts.netloc.replace(f":{parts.password}@", ":***@")
        return urlunsplit(parts._replace(netloc=netloc))
    return url


def open_storage(url: str | None) -> Any:
    """An Optuna storage for ``url``; a clear ConfigError when it cannot be used or reached."""
    import optuna

    url = url or DEFAULT_STORAGE
    if url.startswith("journal:") or url.endswith((".journal", ".log")):
        from optuna.storages.journal import JournalFileBackend

        path = url.removeprefix("journal:")
        return optuna.storages.JournalStorage(JournalFileBackend(path))
    scheme = urlsplit(url).scheme.split("+")[0]
    if scheme not in ("sqlite", "postgresql", "mysql"):
        raise ConfigError(
            f"unsupported storage {redact(url)!r}: use sqlite:///FILE.db, journal:FILE or "
            "postgresql://USER:PASSWORD@HOST/DB"
        )
    kwargs: dict[str, Any] = {}
    if scheme == "postgresql":
        try:
            import psycopg2  # noqa: F401
        except ImportError as exc:
            raise ConfigError("PostgreSQL storage needs a driver: pip install 'courtroom[postgres]'") from exc
        kwargs["engine_kwargs"] = {"connect_args": {"connect_timeout": 5}, "pool_pre_ping": True}
    import warnings

    warnings.filterwarnings("ignore", message=".*heartbeat_interval.*")
    try:
        return optuna.storages.RDBStorage(
            url, heartbeat_interval=HEARTBEAT_SECONDS, grace_period=GRACE_SECONDS, **kwargs
        )
    except Exception as exc:  # SQLAlchemy raises many types for an unreachable or bad database
        raise ConfigError(storage_failure(url, exc)) from exc


def reason_of(exc: BaseException) -> str:
    """The innermost message of an exception chain (Optuna wraps SQLAlchemy, which wraps the driver)."""
    seen = exc
    while True:
        inner = getattr(seen, "orig", None) or seen.__cause__ or seen.__context__
        if inner is None or inner is seen:
            break
        seen = inner
    text = str(seen).strip().splitlines()
    return text[0][:200] if text else type(seen).__name__


def storage_failure(url: str | None, exc: BaseException) -> str:
    """One line for a storage that failed: what it is (damaged, read-only, unreachable) and the fix."""
    url = url or DEFAULT_STORAGE
    reason = reason_of(exc)
    low = reason.lower()
    where = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else redact(url)
    if "malformed" in low or "not a database" in low:
        return (
            f"the study storage {where} is damaged ({reason}): move it aside and start the study again, "
            "or pass --storage NEW.db"
        )
    if "readonly" in low or "read-only" in low or "unable to open" in low or "permission" in low:
        return f"cannot write the study storage {where} ({reason}): make it writable, or pass --storage NEW.db"
    return f"cannot reach storage {redact(url)}: {reason}; check the URL and that the server runs"


def storage_file(url: str | None) -> Path | None:
    """The file of a SQLite or journal storage (default: the default storage's); None for a server."""
    url = url or DEFAULT_STORAGE
    if url.startswith("journal:") or url.endswith((".journal", ".log")):
        return Path(url.removeprefix("journal:"))
    if url.startswith("sqlite:///") and ":memory:" not in url:
        return Path(url.removeprefix("sqlite:///").split("?", 1)[0])
    return None


def creation_lock(url: str | None) -> contextlib.AbstractContextManager[Any]:
    """A lock next to a SQLite or journal file, held while a study is created (or its queue popped).

    Optuna's create-or-load is not safe when two processes start on a fresh SQLite file (one dies
    with "Cannot tell a COMPLETE trial"); a server database needs no file lock.
    """
    from courtroom._lock import FolderLock

    path = storage_file(url)
    if path is None:
        return contextlib.nullcontext()
    # Not FILE.lock: Optuna's journal backend takes that name for its own lock (a symlink), and an
    # existing file there made every journal study wait out Optuna's 30 s stale-lock grace period.
    lock = path.with_name(path.name + ".create-lock")
    return FolderLock(path.parent, what="study storage", wait=WAIT_SECONDS, lock_file=lock)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_stale_trials(study: Any, grace: float = GRACE_SECONDS) -> list[int]:
    """Mark RUNNING trials of dead workers as FAIL; returns their numbers."""
    from optuna.trial import TrialState

    host = socket.gethostname()
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        worker = str(t.user_attrs.get("worker", ""))
        w_host, _, w_pid = worker.rpartition(":")
        beat = float(t.user_attrs.get("heartbeat", 0) or 0)
        dead = w_host == host and w_pid.isdigit() and not _alive(int(w_pid))
        silent = beat and time.time() - beat > grace
        if (dead or silent) and worker != WORKER:
            try:
                study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            except RuntimeError:  # finished meanwhile
                continue
            failed.append(t.number)
    return failed
