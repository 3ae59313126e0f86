"""Optuna storages for studies: SQLite by default, a journal file, or PostgreSQL for several machines.

* ``sqlite:///path.db`` (default ``sqlite:///courtroom-studies.db``) and ``postgresql://...`` are
  RDB storages with heartbeats, so Optuna marks trials of killed workers as failed.
  ``postgresql://`` takes the driver installed (:func:`with_postgres_driver`).
* ``journal:PATH`` (or a path ending in ``.journal``/``.log``) is Optuna's journal file, safe for
  several processes on one machine; a torn last line is set aside before it is opened
  (:func:`repair_journal`). Trials of dead or silent workers: :mod:`courtroom.optimize.study._workers`.

A URL is shown or written only without its password (:func:`redact`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from courtroom._secrets import without_password
from courtroom.errors import ConfigError

DEFAULT_STORAGE = "sqlite:///courtroom-studies.db"
HEARTBEAT_SECONDS = 30
GRACE_SECONDS = 180
WAIT_SECONDS = 3600
"""How long a worker waits for another to finish creating the study (or running its queued trial)."""


def worker() -> str:
    """This process's name on a trial (``host:pid``), read when asked.

    A process forked after import (a fork server, a ``multiprocessing`` pool) is a worker of its
    own, with its own pid. (A name fixed at import gave every forked worker its parent's: a forked worker's trial was
    taken for the other's own, and a killed one's was never marked failed, its pid alive.)
    """
    return f"{socket.gethostname()}:{os.getpid()}"


def redact(url: str) -> str:
    """``url`` with any password replaced by ``PASSWORD`` (:func:`courtroom._secrets.without_password`)."""
    return without_password(url)


def is_journal(url: str) -> bool:
    """Whether ``url`` names Optuna's journal file (``journal:PATH``, or a path ending in .journal/.log)."""
    return url.startswith("journal:") or url.endswith((".journal", ".log"))


def journal_path(url: str) -> Path:
    """The file a journal storage URL names; a ConfigError when it names none (``journal:``) or a folder."""
    name = url.removeprefix("journal:").strip()
    path = Path(name).expanduser()
    if not name or not path.name or path.is_dir():
        raise ConfigError(f"--storage {url!r} names no journal file: write journal:FILE, e.g. journal:studies.journal")
    return path


def open_storage(url: str | None) -> Any:
    """An Optuna storage for ``url``; a clear ConfigError when it cannot be used or reached."""
    import optuna

    url = url or DEFAULT_STORAGE
    if is_journal(url):
        return _open_journal(journal_path(url))
    scheme = urlsplit(url).scheme.split("+")[0]
    if scheme not in ("sqlite", "postgresql", "postgres", "mysql"):
        raise ConfigError(
            f"unsupported storage {redact(url)!r}: use sqlite:///FILE.db, journal:FILE or "
            "postgresql://USER:PASSWORD@HOST/DB"
        )
    kwargs: dict[str, Any] = {}
    engine_url = url
    if scheme in ("postgresql", "postgres"):
        engine_url = with_postgres_driver(url)
        kwargs["engine_kwargs"] = {"connect_args": {"connect_timeout": 5}, "pool_pre_ping": True}
    import warnings

    warnings.filterwarnings("ignore", message=".*heartbeat_interval.*")
    for attempt in range(SCHEMA_RACE_TRIES):
        try:
            storage = optuna.storages.RDBStorage(
                engine_url,
                heartbeat_interval=HEARTBEAT_SECONDS,
                grace_period=GRACE_SECONDS,
                # Optuna checks the schema's version against Alembic's migration scripts, which it loads
                # (exec) for each storage opened: once per database and process is enough.
                skip_compatibility_check=engine_url in _schema_checked,
                **kwargs,
            )
            break
        except Exception as exc:  # SQLAlchemy raises many types for an unreachable or bad database
            if attempt + 1 < SCHEMA_RACE_TRIES and _lost_schema_race(exc):
                time.sleep(0.05 * (attempt + 1))
                continue
            raise ConfigError(storage_failure(url, exc)) from exc
    _schema_checked.add(engine_url)
    return storage


SCHEMA_RACE_TRIES = 5
"""Opens of a fresh database tried while another process creates its schema (:func:`_lost_schema_race`)."""


def _lost_schema_race(exc: BaseException) -> bool:
    """Whether opening failed because another process created the schema at the same moment.

    Optuna creates the tables and inserts the schema's version row when it opens a database; two
    processes opening one fresh database together (two workers, or a worker and ``courtroom
    studies``) race, and the loser's insert breaks the version row's key. The schema is there
    then: opening again reads it.
    """
    low = reason_of(exc).lower()
    return any(word in low for word in ("unique constraint", "duplicate key", "already exists"))


_schema_checked: set[str] = set()
"""Database URLs whose schema version this process has checked (:func:`open_storage`)."""


POSTGRES_DRIVERS = {"psycopg2": "psycopg2-binary", "psycopg": "psycopg[binary]", "pg8000": "pg8000"}
"""SQLAlchemy's PostgreSQL drivers (module -> the pip package that installs it), the preferred first:
``pip install 'courtroom[postgres]'`` installs psycopg2."""


def with_postgres_driver(url: str) -> str:
    """``url`` naming an installed driver: ``postgresql://`` becomes ``postgresql+psycopg2://`` (or psycopg).

    SQLAlchemy 2.1 reads a bare ``postgresql://`` as psycopg 3, while the ``[postgres]`` extra
    installs psycopg2; the first installed driver is taken. A driver the URL names, or none at
    all, missing: a ConfigError naming it and the package that installs it.
    """
    import importlib

    scheme, _, rest = url.partition("://")
    driver = scheme.partition("+")[2]
    for module in [driver] if driver else list(POSTGRES_DRIVERS):
        try:
            importlib.import_module(module)
        except ImportError:
            continue
        return f"postgresql+{module}://{rest}"
    if driver:
        raise ConfigError(
            f"the storage {redact(url)} needs the Python driver {driver!r}, which is not installed: "
            f"pip install {POSTGRES_DRIVERS.get(driver, driver)!r}, or write postgresql:// to use psycopg2"
        )
    raise ConfigError(
        "a PostgreSQL storage needs a driver (psycopg2 or psycopg) and none is installed: "
        "pip install 'courtroom[postgres]'"
    )


def _open_journal(path: Path) -> Any:
    """Optuna's journal storage on ``path``, a torn last line set aside first (:func:`repair_journal`)."""
    import optuna
    from optuna.storages.journal import JournalFileBackend

    repair_journal(path)
    try:
        return optuna.storages.JournalStorage(JournalFileBackend(str(path)))
    except ValueError as exc:  # json.JSONDecodeError, or Optuna's "Invalid log format"
        raise ConfigError(
            f"the study journal {path} is damaged ({reason_of(exc)}): move it aside and start the study "
            "again, or pass --storage journal:NEW.journal"
        ) from exc


def repair_journal(path: Path) -> Path | None:
    """Set a torn last line of the journal ``path`` aside (to ``PATH.torn-N``); where it went, or None.

    A full disk or a kill mid-append leaves a line without its newline; Optuna skips it when
    reading, but its next append glues a record onto it and every later read fails. The repair
    holds Optuna's own journal lock, so an append in progress in another worker is never cut.
    """
    from optuna.storages.journal import JournalFileSymlinkLock

    from courtroom._files import repair_tail

    try:
        with path.open("rb") as f:
            if f.seek(0, os.SEEK_END) == 0:
                return None
            f.seek(-1, os.SEEK_END)
            if f.read(1) == b"\n":
                return None
    except FileNotFoundError:
        return None
    lock = JournalFileSymlinkLock(str(path))
    lock.acquire()
    try:
        return repair_tail(path, lost="the change it held (a trial's record) is lost; the study goes on")
    finally:
        lock.release()


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


FULL = ("disk is full", "no space left", "file too large", "quota exceeded")
"""How SQLite, PostgreSQL and the OS say that a write did not fit."""


def storage_failure(url: str | None, exc: BaseException, resume: str | None = None) -> str:
    """One line for a storage that failed: what it is (full, damaged, read-only, unreachable) and the fix.

    ``resume``: the command that continues the study once the storage is fixed.
    """
    url = url or DEFAULT_STORAGE
    reason = reason_of(exc)
    low = reason.lower()
    where = url.removeprefix("sqlite:///") if url.startswith("sqlite:///") else redact(url)
    then = f", then resume with: {resume}" if resume else ", then run the command again"
    if any(word in low for word in FULL) or ("disk i/o error" in low and _no_room(where)):
        return f"cannot write the study storage {where} ({reason}): the disk is full; free some space{then}"
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


def _no_room(where: str) -> bool:
    """Whether a write to ``where`` could have failed for room: a file-size limit, or a nearly full disk.

    SQLite says "disk I/O error", not "disk is full", when a write starts past a file-size limit.
    """
    try:
        import resource
    except ImportError:  # not on Windows
        pass
    else:
        if resource.getrlimit(resource.RLIMIT_FSIZE)[0] != resource.RLIM_INFINITY:
            return True
    try:
        fs = os.statvfs(Path(where).resolve().parent)
    except OSError:
        return False
    return fs.f_bavail * fs.f_frsize < 1 << 20


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
