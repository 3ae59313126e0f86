"""Can this ``--track`` URI name a tracking store? Checked before the first request, without MLflow.

Imported by the spec's own checks (:mod:`courtroom.spec._sections`), so it depends on nothing of
the tracking that runs after a command.
"""

from __future__ import annotations

from pathlib import Path

from courtroom._secrets import without_password
from courtroom.errors import ConfigError

SERVERS = ("http", "https")
DATABASES = ("sqlite", "postgresql", "mysql", "mssql")
"""SQLAlchemy stores MLflow takes (``postgresql+psycopg2://`` names a driver too)."""
OTHERS = ("file", "databricks", "databricks-uc", "uc")
SQLITE_MAGIC = b"SQLite format 3\x00"
_FIX = "use http(s)://HOST:PORT, sqlite:///FILE.db, another database URL, or a folder"


def check_uri(uri: str, flag: str = "--track") -> None:
    """Refuse, without importing MLflow or sending anything, a tracking URI that cannot name a store.

    Whether a server is up is not checked here: a server down costs one warning after the run.
    """
    shown = without_password(uri)
    from urllib.parse import urlsplit

    url = urlsplit(uri)
    scheme = url.scheme.lower()
    if "://" not in uri:  # a folder of runs (MLflow's file store)
        path = Path(uri).expanduser()
        if path.suffix in (".db", ".sqlite", ".sqlite3") and not path.is_dir():
            raise ConfigError(f"{flag} {shown}: a bare file name is read as a folder of runs; "
                              f"for a SQLite store write sqlite:///{uri}")  # fmt: skip
        if path.exists() and not path.is_dir():
            raise ConfigError(f"{flag} {shown} is a file, not a folder of runs: {_FIX}")
        return
    if scheme.split("+")[0] not in (*SERVERS, *DATABASES, *OTHERS):
        raise ConfigError(f"{flag} {shown}: unknown scheme {scheme}://: {_FIX}")
    if scheme in SERVERS or scheme.split("+")[0] in DATABASES[1:]:
        try:
            url.port  # noqa: B018 - raises on a port out of range
        except ValueError:
            raise ConfigError(f"{flag} {shown}: the port is not a number from 0 to 65535") from None
        if not url.hostname:
            raise ConfigError(f"{flag} {shown} names no host: e.g. http://127.0.0.1:5000")
    if scheme.split("+")[0] == "sqlite":
        _check_sqlite(uri.split(":///", 1)[1] if ":///" in uri else "", flag, shown)
    if scheme == "file" and Path(url.path).exists() and not Path(url.path).is_dir():
        raise ConfigError(f"{flag} {shown} is a file, not a folder of runs: {_FIX}")


def _check_sqlite(name: str, flag: str, shown: str) -> None:
    if not name:
        raise ConfigError(f"{flag} {shown} names no database file: e.g. sqlite:///mlflow.db")
    path = Path(name.split("?")[0]).expanduser()
    if path.is_dir():
        raise ConfigError(
            f"{flag} {shown} is a folder: name a database file in it, e.g. sqlite:///{name.rstrip('/')}/mlflow.db"
        )
    if path.exists():
        try:
            with path.open("rb") as f:
                head = f.read(16)
        except OSError as exc:
            raise ConfigError(f"{flag} {shown}: cannot read it ({exc.strerror or exc})") from None
        if head and head != SQLITE_MAGIC:
            raise ConfigError(f"{flag} {shown} is not a SQLite database: name a new file or an MLflow store")
    elif not path.parent.is_dir():
        raise ConfigError(f"{flag} {shown}: folder {path.parent} does not exist")
