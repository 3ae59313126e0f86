"""Anthropic's Message Batches endpoints for :class:`~courtroom.testing.FakeServer`, as Anthropic documents them.

* ``POST /v1/messages/batches`` with ``{"requests": [{"custom_id", "params"}]}`` and no other field (custom_id matching
  ``^[a-zA-Z0-9_-]{1,64}$``, unique in the batch; ``params`` a Messages body with ``model``,
  ``max_tokens`` and ``messages``), headers ``x-api-key`` and ``anthropic-version``;
* ``GET /v1/messages/batches/{id}`` (``processing_status`` in_progress, canceling or ended,
  ``request_counts``, ``results_url`` once ended), ``POST /v1/messages/batches/{id}/cancel``;
* ``GET /v1/messages/batches/{id}/results``: JSONL of ``{"custom_id", "result"}``, ``result.type``
  succeeded (with the ``message``), errored (with the ``error``), canceled or expired.

Each line is answered through the server's chat logic: its params become a chat body (the
system prompt first, each message's text blocks joined, ``output_config.format`` as a JSON-schema
``response_format``), so it gets the same responder, faults and counts as the same request sent
live or through OpenAI's batches; a 200 answer becomes a ``message`` (text block, ``usage``,
``stop_reason``) and any other an ``errored`` result. Turnaround, expiry (by creation order,
shared with OpenAI's batches), ``created``, ``lines`` and ``cancelled`` are those of the server's
:class:`~courtroom.testing._fake_batches.Batches`; ``params`` lists every line's params as sent.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import json
import re
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from courtroom.testing._fake_batches import Answer, Batches

CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
ERROR_TYPE = {400: "invalid_request_error", 429: "rate_limit_error", 500: "api_error", 504: "timeout_error"}


def _error(status: int, kind: str, message: str) -> Answer:
    return status, {"type": "error", "error": {"type": kind, "message": message}}, "application/json"


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(str(b.get("text") or "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def chat_body(params: Mapping[str, Any]) -> dict[str, Any]:
    """A Messages body as the OpenAI chat body the fake's chat logic answers."""
    system = params.get("system")
    messages = [{"role": "system", "content": _text(system)}] if system else []
    marked = isinstance(system, list) and any(isinstance(b, dict) and b.get("cache_control") for b in system)
    marks = [0] if marked else []
    for m in params.get("messages") or []:
        content = m.get("content")
        if isinstance(content, list) and any(isinstance(b, dict) and b.get("cache_control") for b in content):
            marks.append(len(messages))  # a mark on this message's block: the prefix ends with it
        messages.append({"role": m.get("role"), "content": _text(content)})
    body: dict[str, Any] = {"model": params.get("model"), "messages": messages, "_api": "anthropic"}
    schema = ((params.get("output_config") or {}).get("format") or {}).get("schema")
    if schema is not None:
        body["response_format"] = {"type": "json_schema", "json_schema": {"name": "outputs", "schema": schema}}
    if marked:
        body["cache_breakpoint"] = "system"  # a cache_control mark on the system message (Anthropic's cache)
    if marks:
        body["cache_marks"] = marks  # every marked message, by index: Anthropic caches up to each
    ttls = {
        str(b["cache_control"].get("ttl") or "5m")
        for blocks in [system, *(m.get("content") for m in params.get("messages") or [])]
        if isinstance(blocks, list)
        for b in blocks
        if isinstance(b, dict) and isinstance(b.get("cache_control"), dict)
    }
    if ttls:
        body["cache_ttl"] = "1h" if ttls == {"1h"} else "5m"  # Anthropic's 1-hour cache (its write at 2x)
    return body


def message(chat: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenAI chat answer as Anthropic's ``message``."""
    choice = chat["choices"][0]
    usage = chat.get("usage") or {}
    return {
        "id": f"msg_{uuid.uuid4().hex[:24]}",
        "type": "message",
        "role": "assistant",
        "model": chat.get("model"),
        "content": [{"type": "text", "text": choice["message"]["content"]}],
        "stop_reason": "max_tokens" if choice.get("finish_reason") == "length" else "end_turn",
        "stop_sequence": None,
        "usage": {
            # Anthropic's input_tokens leave out the prompt tokens read from or written to its cache.
            "input_tokens": usage.get("prompt_tokens", 0)
            - usage.get("cache_read_input_tokens", 0)
            - usage.get("cache_creation_input_tokens", 0),
            "output_tokens": usage.get("completion_tokens", 0),
            **{
                k: usage[k]
                for k in ("cache_read_input_tokens", "cache_creation_input_tokens", "cache_creation")
                if k in usage
            },
        },
    }


def as_anthropic(status: int, reply: Mapping[str, Any]) -> dict[str, Any]:
    """The fake's chat answer (HTTP ``status`` and body) as Anthropic answers: a ``message``, or an error."""
    if status == 200:
        return message(reply)
    text = str((reply.get("error") or {}).get("message") or status)
    return {"type": "error", "error": {"type": ERROR_TYPE.get(status, "api_error"), "message": text}}


class MessageBatches:
    """The Message Batches one fake server holds (module docstring).

    Args:
        owner: the server's OpenAI batches, whose reply, turnaround, expiry and tallies are shared.
        url: the server's base URL (``.../v1``), for ``results_url``.
    """

    def __init__(self, owner: Batches, url: Callable[[], str]) -> None:  # noqa: D107
        self.owner = owner
        self.url = url
        self.batches: dict[str, dict[str, Any]] = {}
        self.params: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        """The ``x-api-key`` and ``anthropic-version`` of every request, as sent."""

    def handle(self, method: str, path: str, headers: Any, raw: bytes) -> Answer:
        """Answer one request to ``/v1/messages/batches...`` (``headers``: the request's, read by name)."""
        self.headers.append({k: str(headers.get(k)) for k in ("x-api-key", "anthropic-version")})
        if not headers.get("x-api-key"):
            return _error(401, "authentication_error", "x-api-key header is required")
        if not headers.get("anthropic-version"):
            return _error(400, "invalid_request_error", "anthropic-version header is required")
        parts = path.split("?")[0].rstrip("/").split("/")  # ['', 'v1', 'messages', 'batches', id, 'cancel']
        rest = parts[4:]
        with self.owner._lock:
            if method == "POST" and not rest:
                try:
                    return self._create(json.loads(raw or b"{}"))
                except ValueError:
                    return _error(400, "invalid_request_error", "the body is not JSON")
            batch = self.batches.get(rest[0]) if rest else None
            if batch is None:
                return _error(404, "not_found_error", f"no such batch: {path}")
            if method == "POST" and rest[1:] == ["cancel"]:
                if batch["processing_status"] == "in_progress":
                    batch.update(processing_status="canceling", cancel_initiated_at=_now())
                    self.owner.cancelled.append(batch["id"])
                return 200, self._public(batch), "application/json"
            if method == "GET" and not rest[1:]:
                return 200, self._public(self._advance(batch)), "application/json"
            if method == "GET" and rest[1:] == ["results"] and batch["processing_status"] == "ended":
                return 200, batch["_results"], "application/binary"
        return _error(404, "not_found_error", f"no route {method} {path}")

    def _create(self, body: Mapping[str, Any]) -> Answer:
        extra = sorted(set(body) - {"requests"})
        if extra:  # Anthropic's create body has one field (no metadata: it answers 400)
            return _error(400, "invalid_request_error", f"{extra[0]}: Extra inputs are not permitted")
        requests = body.get("requests")
        if not isinstance(requests, list) or not requests:
            return _error(400, "invalid_request_error", "requests: a non-empty list is required")
        seen: set[str] = set()
        for n, item in enumerate(requests):
            cid = str(item.get("custom_id")) if isinstance(item, dict) else ""
            params = item.get("params") if isinstance(item, dict) else None
            if not CUSTOM_ID.match(cid) or cid in seen:
                return _error(400, "invalid_request_error", f"requests.{n}.custom_id: missing, malformed or repeated")
            if not isinstance(params, dict) or not {"model", "max_tokens", "messages"} <= set(params):
                return _error(400, "invalid_request_error", f"requests.{n}.params: model, max_tokens, messages")
            seen.add(cid)
        batch_id = f"msgbatch_{uuid.uuid4().hex[:24]}"
        batch = {
            "id": batch_id, "type": "message_batch", "processing_status": "in_progress",
            "request_counts": {"processing": len(requests), "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0},
            "ended_at": None, "created_at": _now(), "expires_at": None, "archived_at": None,
            "cancel_initiated_at": None, "results_url": None,
            "_requests": requests, "_started": time.monotonic(),
        }  # fmt: skip
        self.params += [dict(item["params"]) for item in requests]
        self.batches[batch_id] = batch
        self.owner.created.append((batch_id, len(requests)))
        batch["_number"] = len(self.owner.created)
        return 200, self._public(batch), "application/json"

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _advance(self, batch: dict[str, Any]) -> dict[str, Any]:
        """The batch as it is now: ended (answered once) when cancelled or its turnaround has passed."""
        if batch["processing_status"] == "canceling":
            self._answer(batch, cancel=True)
        elif batch["processing_status"] == "in_progress":
            if time.monotonic() - batch["_started"] >= self.owner.turnaround:
                ending = "expired" if batch["_number"] in self.owner.expire else self.owner.end(batch["_number"])
                self._answer(batch, expire=ending == "expired", cancel=ending == "cancelled")
                if ending == "missing":  # ended, no line in its results
                    batch["_results"] = b""
        return batch

    def _answer(self, batch: dict[str, Any], *, expire: bool = False, cancel: bool = False) -> None:
        requests = batch["_requests"]
        answered = 0 if cancel else (len(requests) // 2 if expire else len(requests))
        with self.owner.arriving() if self.owner.arriving else contextlib.nullcontext():  # the lines run together
            out, counts = self._answer_lines(batch, answered, cancel)
        batch["_results"] = "".join(json.dumps(r) + "\n" for r in out).encode()
        batch.update(processing_status="ended", request_counts=counts, ended_at=_now(),
                     results_url=f"{self.url()}/messages/batches/{batch['id']}/results")  # fmt: skip

    def _answer_lines(self, batch: dict[str, Any], answered: int, cancel: bool) -> tuple[list[Any], dict[str, int]]:
        requests = batch["_requests"]
        counts = {"processing": 0, "succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}
        out = []
        for n, item in enumerate(requests):
            if n >= answered:
                kind = "canceled" if cancel else "expired"
                result: dict[str, Any] = {"type": kind}
            else:
                chat = chat_body(item["params"])
                self.owner.lines[json.dumps(chat["messages"], sort_keys=True)] += 1
                status, reply, _ = self.owner.reply(chat)
                answer = as_anthropic(status, reply)
                if status == 200:
                    result = {"type": "succeeded", "message": answer}
                else:
                    result = {"type": "errored", "error": answer}
            counts["succeeded" if result["type"] == "succeeded" else result["type"]] += 1
            out.append({"custom_id": item["custom_id"], "result": result})
        return out, counts
