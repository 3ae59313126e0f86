"""``batches.jsonl`` of a run folder: every batch the provider accepted, written the moment it was.

One line per event: ``submitted`` (provider, model, batch id, round, and ``lines``: custom_id ->
request key) and ``ended`` (its final status). A resume follows every batch submitted and not
ended; the base URL and the key are never written.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from courtroom._files import JsonLines, read_jsonl

FILE = "batches.jsonl"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


class BatchLog:
    """The one writer of a folder's ``batches.jsonl`` (each record synced to disk before going on)."""

    def __init__(self, folder: str | Path) -> None:  # noqa: D107
        self.path = Path(folder) / FILE
        self._lock = threading.Lock()

    def _append(self, record: Mapping[str, Any]) -> None:
        with self._lock, JsonLines(self.path) as log:
            log.append(record)
            log.sync()

    def check(self) -> None:
        """Raise if a batch could not be recorded now (the run folder is gone): checked before each submit."""
        if not self.path.parent.is_dir():
            raise FileNotFoundError(f"{self.path.parent} is gone: no batch is submitted that could not be recorded")

    def submitted(self, batch_id: str, provider: str, model: str, round_: int, lines: Mapping[str, str]) -> None:
        """Record an accepted batch: which request key each custom_id is."""
        self._append({"event": "submitted", "id": batch_id, "provider": provider, "model": model,
                      "round": round_, "lines": dict(lines), "at": _now()})  # fmt: skip

    def ended(self, batch_id: str, status: str) -> None:
        """Record that a batch ended (completed, failed, expired or cancelled) and its answers were read."""
        self._append({"event": "ended", "id": batch_id, "status": status, "at": _now()})


def recorded(folder: str | Path) -> list[dict[str, Any]]:
    """Every batch submitted from ``folder``, in order, each with ``status`` (None: not seen to end)."""
    rows, _ = read_jsonl(Path(folder) / FILE)
    batches: dict[str, dict[str, Any]] = {}
    for row in rows:
        if not isinstance(row, dict) or "id" not in row:
            continue
        if row.get("event") == "submitted" and isinstance(row.get("lines"), dict):
            batches[row["id"]] = {**row, "status": None}
        elif row.get("event") == "ended" and row["id"] in batches:
            batches[row["id"]]["status"] = row.get("status")
    return list(batches.values())
