"""OpenAI's Files and Batches endpoints for :class:`~courtroom.testing.FakeServer`, as OpenAI documents them.

* ``POST /v1/files`` (multipart: ``purpose=batch`` and the JSONL ``file``), ``GET /v1/files/{id}``,
  ``GET /v1/files/{id}/content``;
* ``POST /v1/batches`` (``input_file_id``, ``endpoint``, ``completion_window``),
  ``GET /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel``.

Each input line is ``{"custom_id", "method": "POST", "url": "/v1/chat/completions", "body"}``; each
output line ``{"id", "custom_id", "response": {"status_code", "request_id", "body"}, "error"}``.
Answered lines go to ``output_file_id``, failed ones (a 4xx/5xx answer, or a line left unanswered by
an expired or cancelled batch) to ``error_file_id``. A batch is ``validating`` when created, then
``in_progress``; once ``turnaround`` seconds have passed, the next look at it answers every line
through the server's chat logic (:meth:`FakeServer.reply`: same responder, faults and counts) and
it becomes ``completed``, or ``expired`` (only its first half answered) if it is one of ``expire``,
or ends as ``end(n)`` says for the n-th batch created (:data:`ENDINGS`).
``GET /v1/batches`` lists the batches, newest first, with their metadata. :meth:`Batches.run_all`
answers every batch whose turnaround has passed, looked at or not, as a provider runs them.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Collection
from email.parser import BytesParser
from email.policy import HTTP
from typing import Any

Answer = tuple[int, Any, str]
"""HTTP status, body (JSON-ready, or bytes), content type."""

ENDPOINT = "/v1/chat/completions"

ENDINGS = ("expired", "cancelled", "missing", "failed")
"""How ``end(n)`` may end a batch besides completing: half answered then expired, cancelled with no
line answered, completed with no line in its output, or failed at the provider (no line answered)."""


def _error(status: int, message: str) -> Answer:
    return status, {"error": {"message": message, "type": "invalid_request_error"}}, "application/json"


def _multipart(content_type: str, raw: bytes) -> dict[str, bytes]:
    """The fields of a ``multipart/form-data`` body, by name."""
    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    fields: dict[str, bytes] = {}
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        if name:
            payload = part.get_payload(decode=True)
            fields[str(name)] = payload if isinstance(payload, bytes) else b""
    return fields


class Batches:
    """The files and batches one fake server holds, and what it did with them.

    Args:
        reply: answers one chat request body (``FakeServer.reply``).
        turnaround: seconds from a batch's creation until it is done.
        expire: the batches (1 for the first created, ...) that expire instead of completing.

    ``created`` lists every batch accepted, in order, as ``(id, number of lines)``; ``lines``
    counts each request (its message list as JSON) sent in any batch line, so a test can assert
    that every request was sent exactly once; ``cancelled`` lists the batches cancelled.
    """

    def __init__(self, reply: Callable[[dict[str, Any]], tuple[int, Any, Any]], turnaround: float,
                 expire: Collection[int], end: Callable[[int], str | None] | None = None) -> None:  # fmt: skip
        self.reply = reply
        self.arriving: Callable[[], Any] | None = None
        """``FakeServer.arriving``: a batch's lines are processed together, so each reads only what
        was cached before the batch ran, never another line's writes."""
        self.turnaround = turnaround
        self.expire = set(expire)
        self.end = end or (lambda n: None)
        self.files: dict[str, dict[str, Any]] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.created: list[tuple[str, int]] = []
        self.lines: Counter[str] = Counter()
        self.cancelled: list[str] = []
        self._lock = threading.RLock()

    # ----- files

    def _file(self, content: bytes, purpose: str, name: str) -> dict[str, Any]:
        file_id = f"file-{uuid.uuid4().hex[:24]}"
        record = {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                  "filename": name, "purpose": purpose, "status": "processed"}  # fmt: skip
        with self._lock:
            self.files[file_id] = record
            self.contents[file_id] = content
        return record

    def post(self, path: str, content_type: str, raw: bytes) -> Answer:
        """``POST`` to a files or batches path."""
        parts = path.partition("?")[0].rstrip("/").split("/")  # ['', 'v1', 'batches', id, 'cancel']
        if parts[2:] == ["files"]:
            if "multipart/form-data" not in content_type:
                return _error(400, "upload the file as multipart/form-data")
            fields = _multipart(content_type, raw)
            if fields.get("purpose", b"").decode() != "batch" or "file" not in fields:
                return _error(400, "expected purpose=batch and a file")
            return 200, self._file(fields["file"], "batch", "batch.jsonl"), "application/json"
        if parts[2:] == ["batches"]:
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                return _error(400, "the body is not JSON")
            return self._create(body)
        if len(parts) == 5 and parts[2] == "batches" and parts[4] == "cancel":
            return self._cancel(parts[3])
        return _error(404, f"no route {path}")

    def get(self, path: str) -> Answer:
        """``GET`` a file, its content, or a batch."""
        path, _, query = path.partition("?")
        parts = path.rstrip("/").split("/")
        with self._lock:
            if parts[2:] == ["batches"]:
                listed = [self._public(b) for b in reversed(self.batches.values())]
                return 200, {"object": "list", "data": listed, "has_more": False}, "application/json"
            if len(parts) == 4 and parts[2] == "files" and parts[3] in self.files:
                return 200, self.files[parts[3]], "application/json"
            if len(parts) == 5 and parts[2] == "files" and parts[4] == "content" and parts[3] in self.contents:
                return 200, self.contents[parts[3]], "application/jsonl"
            if len(parts) == 4 and parts[2] == "batches" and parts[3] in self.batches:
                return 200, self._advance(parts[3]), "application/json"
        return _error(404, f"no such object: {path}")

    # ----- batches

    def _create(self, body: dict[str, Any]) -> Answer:
        file_id = str(body.get("input_file_id") or "")
        if body.get("endpoint") != ENDPOINT:
            return _error(400, f"endpoint must be {ENDPOINT}")
        with self._lock:
            if file_id not in self.contents:
                return _error(400, f"no such file {file_id!r}")
            lines = [line for line in self.contents[file_id].decode().splitlines() if line.strip()]
            batch_id = f"batch_{uuid.uuid4().hex[:24]}"
            now = int(time.time())
            batch = {
                "id": batch_id, "object": "batch", "endpoint": ENDPOINT, "errors": None,
                "input_file_id": file_id, "completion_window": body.get("completion_window", "24h"),
                "status": "validating", "output_file_id": None, "error_file_id": None, "created_at": now,
                "in_progress_at": None, "expires_at": now + 86400, "finalizing_at": None, "completed_at": None,
                "failed_at": None, "expired_at": None, "cancelling_at": None, "cancelled_at": None,
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
                "metadata": body.get("metadata"),
            }  # fmt: skip
            errors = self._validate(lines)
            if errors:
                batch.update(status="failed", failed_at=now, errors={"object": "list", "data": errors})
            self.batches[batch_id] = batch
            self.created.append((batch_id, len(lines)))
            batch["_number"] = len(self.created)
            batch["_started"] = time.monotonic()
            return 200, self._public(batch), "application/json"

    @staticmethod
    def _validate(lines: list[str]) -> list[dict[str, Any]]:
        errors: list[dict[str, Any]] = []
        seen: set[str] = set()
        for n, line in enumerate(lines, 1):
            try:
                item = json.loads(line)
            except ValueError:
                errors.append({"code": "invalid_json_line", "message": "not JSON", "line": n})
                continue
            custom_id = item.get("custom_id")
            if not custom_id or custom_id in seen:
                errors.append({"code": "duplicate_custom_id", "message": "custom_id missing or repeated", "line": n})
            elif item.get("url") != ENDPOINT or item.get("method") != "POST" or not isinstance(item.get("body"), dict):
                errors.append(
                    {"code": "invalid_request", "message": f"expected POST {ENDPOINT} with a body", "line": n}
                )
            seen.add(str(custom_id))
        return errors

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _advance(self, batch_id: str) -> dict[str, Any]:
        """The batch as it is now: answered (once) when its turnaround has passed."""
        batch = self.batches[batch_id]
        if batch["status"] == "validating":
            batch.update(status="in_progress", in_progress_at=int(time.time()))
        if batch["status"] == "in_progress" and time.monotonic() - batch["_started"] >= self.turnaround:
            ending = "expired" if batch["_number"] in self.expire else self.end(batch["_number"])
            if ending == "failed":
                errors = [{"code": "injected", "message": "the batch failed (injected)", "line": None}]
                batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": errors})
            else:
                self._answer(batch, expire=ending == "expired", cancel=ending == "cancelled",
                             missing=ending == "missing")  # fmt: skip
        return self._public(batch)

    def _answer(self, batch: dict[str, Any], *, expire: bool = False, cancel: bool = False,
                missing: bool = False) -> None:  # fmt: skip
        lines = [json.loads(line) for line in self.contents[batch["input_file_id"]].decode().splitlines() if line]
        if missing:
            now = int(time.time())
            batch.update(status="completed", finalizing_at=now, completed_at=now,
                         request_counts={"total": len(lines), "completed": 0, "failed": 0})  # fmt: skip
            return
        answered = 0 if cancel else (len(lines) // 2 if expire else len(lines))
        with self.arriving() if self.arriving else contextlib.nullcontext():  # the lines run together
            self._answer_lines(batch, lines, answered, cancel=cancel, expire=expire)

    def _answer_lines(
        self, batch: dict[str, Any], lines: list[dict[str, Any]], answered: int, *, cancel: bool, expire: bool
    ) -> None:
        out: list[dict[str, Any]] = []
        err: list[dict[str, Any]] = []
        for n, item in enumerate(lines):
            record: dict[str, Any] = {"id": f"batch_req_{uuid.uuid4().hex[:16]}", "custom_id": item["custom_id"]}
            if n >= answered:
                code = "batch_cancelled" if cancel else "batch_expired"
                err.append({**record, "response": None, "error": {"code": code, "message": f"the batch {code[6:]}"}})
                continue
            self.lines[json.dumps(item["body"].get("messages") or [], sort_keys=True)] += 1
            status, body, _ = self.reply(item["body"])
            record["response"] = {"status_code": status, "request_id": f"req_{uuid.uuid4().hex[:12]}", "body": body}
            record["error"] = None
            (out if status == 200 else err).append(record)
        now = int(time.time())
        batch["request_counts"] = {"total": len(lines), "completed": len(out), "failed": len(err)}
        if out:
            batch["output_file_id"] = self._file(_jsonl(out), "batch_output", "output.jsonl")["id"]
        if err:
            batch["error_file_id"] = self._file(_jsonl(err), "batch_output", "errors.jsonl")["id"]
        if cancel:
            batch.update(status="cancelled", cancelled_at=now)
        elif expire:
            batch.update(status="expired", expired_at=now)
        else:
            batch.update(status="completed", finalizing_at=now, completed_at=now)

    def run_all(self) -> None:
        """Look at every batch once (answered if its turnaround has passed), followed by a client or not.

        A provider runs, and bills, every batch it accepted, whether or not anyone looks at it; the
        fake answers a batch only when it is looked at. After this, ``lines`` and the server's
        ``sent`` count what a provider would have billed (a batch no one followed included).
        """
        with self._lock:
            for batch_id in list(self.batches):
                self._advance(batch_id)

    def _cancel(self, batch_id: str) -> Answer:
        with self._lock:
            batch = self.batches.get(batch_id)
            if batch is None:
                return _error(404, f"no such batch {batch_id!r}")
            if batch["status"] in ("validating", "in_progress"):
                batch.update(cancelling_at=int(time.time()))
                self._answer(batch, cancel=True)
                self.cancelled.append(batch_id)
            return 200, self._public(batch), "application/json"


def _jsonl(records: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()
