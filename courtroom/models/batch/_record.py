"""``batches.jsonl`` of a run folder: every batch about to be created, and every batch the provider accepted.

One line per event, each synced to disk before the code goes on:

* ``submitting``: written *before* the create call (a random ``token``, provider, model, round,
  and ``lines``: custom_id -> request key); the create carries the same token (OpenAI's batch
  ``metadata``), so a batch created by a process killed before it could record the answer is
  found again;
* ``submitted``: the provider accepted it (its batch id, the same fields and token);
* ``not_submitted``: no batch was made for the token (the create failed before the provider made
  it, or a resume looked for it and it is not there);
* ``unconfirmed``: a batch may exist for the token and cannot be found (Anthropic's Message
  Batches carry no metadata): the user was told what to look for; its lines are not withheld again;
* ``ended``: the batch's final status.

A resume follows every batch submitted and not ended (:func:`recorded`), and looks up every
intent no later event settled (:func:`unsettled`). The base URL and the key are never written.
"""

from __future__ import annotations

import datetime as _dt
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from courtroom._files import JsonLines, read_jsonl

FILE = "batches.jsonl"

SETTLED = ("submitted", "not_submitted", "unconfirmed")
"""The events after which an intent (``submitting``) needs no look-up."""


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

    def submitting(self, token: str, provider: str, model: str, round_: int, lines: Mapping[str, str]) -> None:
        """Record a batch about to be created (before the create call): which request key each custom_id is."""
        self._append({"event": "submitting", "token": token, "provider": provider, "model": model,
                      "round": round_, "lines": dict(lines), "at": _now()})  # fmt: skip

    def submitted(
        self, batch_id: str, provider: str, model: str, round_: int, lines: Mapping[str, str], token: str | None = None
    ) -> None:
        """Record an accepted batch: which request key each custom_id is (``token``: its intent's)."""
        self._append({"event": "submitted", "id": batch_id, "provider": provider, "model": model,
                      "round": round_, "lines": dict(lines), "token": token, "at": _now()})  # fmt: skip

    def settled(self, token: str, event: str) -> None:
        """Record that an intent's batch was not made (``not_submitted``) or cannot be found (``unconfirmed``)."""
        if event not in SETTLED[1:]:
            raise ValueError(f"{event!r} is not one of {SETTLED[1:]}")
        self._append({"event": event, "token": token, "at": _now()})

    def ended(self, batch_id: str, status: str) -> None:
        """Record that a batch ended (completed, failed, expired or cancelled) and its answers were read."""
        self._append({"event": "ended", "id": batch_id, "status": status, "at": _now()})


def _rows(folder: str | Path) -> list[dict[str, Any]]:
    rows, _ = read_jsonl(Path(folder) / FILE)
    return [row for row in rows if isinstance(row, dict)]


def recorded(folder: str | Path) -> list[dict[str, Any]]:
    """Every batch submitted from ``folder``, in order, each with ``status`` (None: not seen to end)."""
    batches: dict[str, dict[str, Any]] = {}
    for row in _rows(folder):
        if "id" not in row:
            continue
        if row.get("event") == "submitted" and isinstance(row.get("lines"), dict):
            batches[row["id"]] = {**row, "status": None}
        elif row.get("event") == "ended" and row["id"] in batches:
            batches[row["id"]]["status"] = row.get("status")
    return list(batches.values())


def unsettled(folder: str | Path) -> list[dict[str, Any]]:
    """Every intent (``submitting``) of ``folder`` no later event settled: a batch that may exist unrecorded."""
    intents: dict[str, dict[str, Any]] = {}
    for row in _rows(folder):
        token = row.get("token")
        if not isinstance(token, str):
            continue
        if row.get("event") == "submitting" and isinstance(row.get("lines"), dict):
            intents[token] = row
        elif row.get("event") in SETTLED:
            intents.pop(token, None)
    return list(intents.values())
