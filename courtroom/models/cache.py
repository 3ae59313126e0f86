"""DSPy's disk cache, kept in ``$COURTROOM_CACHE_DIR`` (default: the user cache dir).

The cache never holds credentials: LiteLLM responses carry ``_hidden_params["api_base"]``, which
keeps any ``user:password@`` or query token of the URL, so it is redacted before storing.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import sqlite3
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.clients.cache import Cache
from platformdirs import user_cache_dir

from courtroom.errors import ConfigError

logger = logging.getLogger(__name__)

_configured: Path | None = None


def redact_url(url: str | None) -> str | None:
    """A URL without user, password, query or fragment (where tokens hide)."""
    if not url or not isinstance(url, str):
        return url
    parts = urlparse(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def without_base_url(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config as written to disk: never the base URL (it can hold credentials or tokens).

    ``api_base_given`` records that one was used, so a resume asks for ``--api-base`` again
    instead of sending the requests elsewhere.
    """
    out = dict(config)
    out["api_base_given"] = bool(out.get("api_base"))
    out["api_base"] = None
    return out


def require_base_url(recorded: Mapping[str, Any], api_base: str | None, where: str) -> None:
    """Refuse to resume without ``--api-base`` a run that had one (it is not on disk to reuse)."""
    if recorded.get("api_base_given") and not api_base:
        raise ConfigError(
            f"{where} ran with --api-base, which is never written to disk (it can hold credentials): "
            "pass --api-base URL again"
        )


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")


def redact_text(text: str) -> str:
    """``text`` with the user and password removed from every URL in it (for ``--debug`` output)."""
    return _USERINFO.sub(r"\g<scheme>", text)


def _scrub(value: Any) -> Any:
    hidden = getattr(value, "_hidden_params", None)
    if isinstance(hidden, dict) and hidden.get("api_base"):
        value = copy.copy(value)
        value._hidden_params = {**hidden, "api_base": redact_url(hidden["api_base"])}
    return value


def usage_tokens(usage: Any) -> int:
    """Prompt plus completion tokens of a response's usage (OpenAI or lm15 field names)."""
    if not usage:
        return 0

    def get(key: str) -> Any:
        return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)

    return int(get("prompt_tokens") or get("input_tokens") or 0) + int(
        get("completion_tokens") or get("output_tokens") or 0
    )


CACHED_TOKENS = "courtroom_cached_tokens"
"""Attribute of a response served from the cache: the tokens it cost when it was sent."""
CACHED_USAGE = "courtroom_cached_usage"
"""Attribute of a response served from the cache: its usage when it was sent, as per-model counts
(:func:`courtroom.cost.bill.response_counts`), which price what the answer would cost sent again."""


def _damaged(exc: BaseException) -> bool:
    """Whether a SQLite error says the database file itself is damaged (not busy, not full)."""
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and code & 0xFF in (11, 26):  # SQLITE_CORRUPT, SQLITE_NOTADB
        return True
    text = str(exc).lower()
    return "malformed" in text or "not a database" in text


_warned: set[str] = set()
_repair_lock = threading.Lock()


def _warn_once(key: str, line: str) -> None:
    if key not in _warned:
        _warned.add(key)
        logger.warning(line)


class RedactingCache(Cache):
    """DSPy's cache, storing responses with credentials removed from their base URL.

    A hit keeps, as :data:`CACHED_TOKENS`, the tokens the answer cost when first sent (DSPy
    clears its usage: nothing is billed), so a fully cached re-run can still say what its calls
    would cost sent again.

    A cache error is never an example's failure. A damaged database (pages overwritten, not a
    database) is named in one warning, moved aside to ``DIR.damaged-STAMP`` and replaced by a
    fresh one, and the run goes on (the lost answers are asked again); any other error reading
    or storing an answer is a miss, or an answer not kept, with one warning.
    """

    enable_disk_cache: bool

    def __init__(  # noqa: D107
        self,
        enable_disk_cache: bool,
        enable_memory_cache: bool,
        disk_cache_dir: str | None,
        disk_size_limit_bytes: int | None = DISK_CACHE_LIMIT,
        **kwargs: Any,
    ) -> None:
        # DSPy opens the 16 SQLite shards here; they are opened at the first lookup or store instead,
        # so a command that never calls a model (a dry run, a report) never creates them.
        super().__init__(False, enable_memory_cache, disk_cache_dir, disk_size_limit_bytes, **kwargs)
        if enable_disk_cache:  # what opening imports, imported now: never first in a worker thread
            import diskcache  # noqa: F401
            import dspy.clients.disk_serialization  # noqa: F401
        self.enable_disk_cache = enable_disk_cache
        self._limit = disk_size_limit_bytes
        self._disk: Any = None
        self._opening = threading.Lock()
        self._generation = 0

    @property
    def disk_cache(self) -> Any:
        """DSPy's FanoutCache, opened on first use (a damaged one is moved aside and replaced)."""
        if self._disk is None:
            with self._opening:
                if self._disk is None:
                    self._disk = self._open() if self.enable_disk_cache else {}
        return self._disk

    @disk_cache.setter
    def disk_cache(self, value: Any) -> None:
        # DSPy's constructor sets ``{}`` for a cache it was told has no disk: opened lazily instead.
        self._disk = None if isinstance(value, dict) and not value else value

    def _open(self) -> Any:
        directory = self.disk_cache_dir
        try:
            return _unmapped(Cache(True, False, directory, self._limit).disk_cache)
        except sqlite3.DatabaseError as exc:
            if not directory or not _damaged(exc):
                raise
            _move_aside(Path(directory), exc)
            return _unmapped(Cache(True, False, directory, self._limit).disk_cache)

    def get(self, request: dict[str, Any], ignored_args_for_cache_key: list[str] | None = None) -> Any:
        """DSPy's lookup; a damaged disk cache is replaced and the lookup is a miss."""
        try:
            return super().get(request, ignored_args_for_cache_key)
        except Exception as exc:  # noqa: BLE001 - a cache error is never an example's failure
            self._failed(exc, "read")
            return None

    def put(
        self,
        request: dict[str, Any],
        value: Any,
        ignored_args_for_cache_key: list[str] | None = None,
        enable_memory_cache: bool = True,
    ) -> None:
        """DSPy's store, credentials scrubbed; a disk error is named once (DSPy logs it at debug level)."""
        value = _scrub(value)
        if not (self.enable_memory_cache and enable_memory_cache) and not self.enable_disk_cache:
            return
        try:
            key = self.cache_key(request, ignored_args_for_cache_key)
        except Exception:  # noqa: BLE001 - DSPy skips such requests too
            return
        if self.enable_memory_cache and enable_memory_cache:
            with self._lock:
                self.memory_cache[key] = value
        if not self.enable_disk_cache:
            return
        try:
            self.disk_cache.set(key, value)
        except Exception as exc:  # noqa: BLE001 - an answer not kept is asked again, never a failure
            if self._failed(exc, "store"):
                try:
                    self.disk_cache.set(key, value)
                except Exception:  # noqa: BLE001, S110 - the fresh cache failed too: warned already
                    pass

    def _failed(self, exc: Exception, what: str) -> bool:
        """Handle a disk cache error; True when a damaged database was replaced by a fresh one."""
        generation = self._generation
        if isinstance(exc, sqlite3.DatabaseError) and _damaged(exc) and self.disk_cache_dir:
            with _repair_lock:
                if generation == self._generation:  # another thread may have replaced it already
                    _move_aside(Path(self.disk_cache_dir), exc)
                    self.disk_cache = _unmapped(Cache(True, False, self.disk_cache_dir, self._limit).disk_cache)
                    self._generation += 1
            return True
        _warn_once(
            f"{what}:{type(exc).__name__}",
            f"the LM cache at {self.disk_cache_dir} could not {what} an answer ({type(exc).__name__}: {exc}); "
            "it is asked again when needed",
        )
        return False

    def _prepare_cached_response(self, response: Any) -> Any:
        from courtroom.cost.bill import response_counts

        tokens = usage_tokens(getattr(response, "usage", None))
        counts = response_counts(getattr(response, "usage", None))
        out = super()._prepare_cached_response(response)
        if tokens and out is not response:
            object.__setattr__(out, CACHED_TOKENS, tokens)
            object.__setattr__(out, CACHED_USAGE, counts)
        return out


def _unmapped(disk: Any) -> Any:
    """``disk`` (DSPy's FanoutCache) with SQLite reading its files through ``read``, not a memory map.

    diskcache maps up to 64 MB of each of the 16 shards: every page a lookup touched counted in the
    process's resident memory, which so grew with the cache file, ~1 MB a shard by 3,000 answers
    (issue 44). Read into SQLite's page cache instead, the pages go when a worker reopens its
    connections (:data:`courtroom.eval.harness.REOPEN_EVERY`). The setting is kept in each shard's
    database, where every new connection reads it (written once, by the first process to open it).
    """
    if getattr(disk, "sqlite_mmap_size", 0) != 0:
        disk.reset("sqlite_mmap_size", 0)
    return disk


def _move_aside(directory: Path, exc: BaseException) -> Path:
    """Rename a damaged cache folder to ``NAME.damaged-STAMP``, make a fresh one, and say so once."""
    import datetime as _dt

    stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    aside = directory.with_name(f"{directory.name}.damaged-{stamp}")
    n = 1
    while aside.exists():
        n += 1
        aside = directory.with_name(f"{directory.name}.damaged-{stamp}-{n}")
    directory.rename(aside)
    directory.mkdir(parents=True, exist_ok=True)
    _warn_once(
        f"damaged:{directory}",
        f"the LM cache at {directory} is damaged ({exc}): moved it to {aside} and started a fresh one; "
        f"answers cached before are asked again (delete {aside} when you no longer need it)",
    )
    return aside


def close_thread_cache() -> None:
    """Close this thread's connections to the disk cache (one file per shard it touched).

    They are per thread and stay open after the thread ends: every short-lived worker (an
    example, a role call in parallel) left about one file open, until ``ulimit -n`` was reached
    and every example failed with "Too many open files".
    """
    close = getattr(getattr(dspy.cache, "disk_cache", None), "close", None)
    if close is not None:
        try:
            close()
        except Exception:  # noqa: BLE001 - closing is housekeeping: never a reason to fail a call
            logger.debug("could not close the cache's connections", exc_info=True)


def cache_dir() -> Path:
    """Where the LM response cache lives."""
    return Path(os.environ.get("COURTROOM_CACHE_DIR") or user_cache_dir("courtroom")).expanduser()


MEMORY_ENTRIES = 1_000
"""Answers kept in memory in front of the disk cache: the most recent ones. DSPy's default
(1,000,000) kept every answer of a run, about 4.4 KB per call never given back (issue 44); an
older answer is read from the disk cache, as it is in a new process."""


def configure_cache(path: str | Path | None = None, *, enabled: bool = True) -> Path:
    """Point DSPy's memory and disk cache at ``path`` (idempotent); memory holds :data:`MEMORY_ENTRIES`."""
    global _configured
    target = Path(path) if path else cache_dir()
    if _configured == target and enabled:
        return target
    target.mkdir(parents=True, exist_ok=True)
    limit = int(os.environ.get("DSPY_CACHE_LIMIT", DISK_CACHE_LIMIT))
    cache = RedactingCache(enabled, enabled, str(target), limit, memory_max_entries=MEMORY_ENTRIES)
    with dspy._cache_lock:
        dspy.cache = cache
    _configured = target if enabled else None
    return target
