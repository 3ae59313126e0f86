"""Anthropic's Message Batches API over plain HTTP: Anthropic itself, or a server at ``--api-base`` that serves it.

``POST {base}/messages/batches`` with ``{"requests": [{"custom_id", "params"}]}`` (each ``params``
a Messages API body), ``GET {base}/messages/batches/{id}`` (``processing_status`` in_progress,
canceling or ended; ``request_counts``; ``results_url`` once ended), ``POST .../{id}/cancel``, and
the results as JSONL at ``results_url``, one ``{"custom_id", "result"}`` per request, whose
``type`` is succeeded (with the ``message``), errored, canceled or expired.

The client speaks to the collector in OpenAI's terms (:class:`~courtroom.models.batch._openai.Status`
and output lines), so the collector needs no second code path: a succeeded line is a
``response`` with status 200 and the message as ``body``; an errored one a ``response`` with the
HTTP status of its error type (retried as a failed line); canceled and expired lines the
``batch_cancelled`` / ``batch_expired`` errors the collector sends again. Anthropic's create body
has no metadata field, so the round number is not sent, and a create whose answer was lost (a 5xx
other than 503/529, or a connection broken after the body went out) cannot be looked up (a listed
batch has no metadata, and its custom_ids show only in its results, after it ends): it is not
tried again, and the warning says what to look for (:func:`_cannot_look`). So is a batch whose
process was killed between the create and its record: a resume cannot find it, withholds its lines
once and says what to look for (:meth:`AnthropicBatches.cannot_find`). The base URL and key live only in memory.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from typing import Any

from courtroom.models.batch._openai import BatchAPIError, HttpBatches, Status

VERSION = "2023-06-01"
"""The ``anthropic-version`` header."""

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status Anthropic answers each error type with (its errors page)."""

_UNANSWERED = {"canceled": "batch_cancelled", "expired": "batch_expired"}


class AnthropicBatches(HttpBatches):
    """Submit, poll, read and cancel Message Batches at ``base_url`` (ending in ``/v1``)."""

    provider = "anthropic"

    def _headers(self) -> dict[str, str]:
        return {"x-api-key": self._key, "anthropic-version": VERSION}

    def submit(
        self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str], token: str | None = None
    ) -> Status:
        """Create one batch of ``(custom_id, params)`` lines (``metadata`` and ``token`` are dropped: no such field)."""
        requests = [{"custom_id": cid, "params": dict(params)} for cid, params in lines]
        path, at = "/messages/batches", _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return _status(self._create(lambda: self._call("POST", path, json={"requests": requests}, retries=0),
                                    lambda: _cannot_look(len(requests), at)))  # fmt: skip

    def cannot_find(self, n: int, at: str) -> str:
        """What to look for: a batch of ``n`` requests created at about ``at`` may exist (none can be found)."""
        return _look_for(n, at)

    def status(self, batch_id: str) -> Status:
        """The batch as it is now."""
        path = f"/messages/batches/{batch_id}"
        return _status(self._call("GET", path).json())

    def results(self, status: Status) -> dict[str, dict[str, Any]]:
        """custom_id -> its line in the collector's terms (module docstring)."""
        if not status.results_url:
            return {}
        text = self._call("GET", f"/messages/batches/{status.id}/results", url=status.results_url).text
        out: dict[str, dict[str, Any]] = {}
        for raw in text.splitlines():
            if raw.strip():
                item = json.loads(raw)
                out[str(item.get("custom_id"))] = _line(item.get("result") or {})
        return out

    def cancel(self, batch_id: str) -> Status:
        """Ask Anthropic to cancel the batch; the batch as it is after (``canceling`` until it has ended)."""
        path = f"/messages/batches/{batch_id}/cancel"
        cancelled = _status(self._call("POST", path).json())
        return cancelled if cancelled.done else self.status(batch_id)


def _cannot_look(n: int, at: str) -> None:
    """A create whose answer was lost: nothing finds the batch it may have made.

    The create body holds only the requests; a listed batch shows its id, times and counts, no
    metadata; its custom_ids are readable only in its results, once it has ended. Matching by
    size and time could adopt another process's batch, so the user is told what to look for.
    """
    raise BatchAPIError(
        f"batch API: POST /messages/batches: the answer was lost and {_look_for(n, at)} (its lines are not sent again)",
        maybe_created=True,
    )


def _look_for(n: int, at: str) -> str:
    return (
        f"a batch of {n} requests created at about {at} may exist (Message Batches carry no metadata to find it "
        "by): look for it in the Console or GET /v1/messages/batches, and cancel it before a --retry-failed"
    )


def _line(result: Mapping[str, Any]) -> dict[str, Any]:
    kind = str(result.get("type") or "")
    if kind == "succeeded":
        return {"response": {"status_code": 200, "body": result.get("message") or {}}, "error": None}
    if kind in _UNANSWERED:
        return {"response": None, "error": {"code": _UNANSWERED[kind], "message": f"the line was {kind}"}}
    envelope = result.get("error") or {}
    inner = envelope.get("error")
    error: Mapping[str, Any] = inner if isinstance(inner, dict) else envelope
    status = ERROR_STATUS.get(str(error.get("type")), 500)
    body = {"error": {"code": error.get("type") or kind, "message": error.get("message") or f"result type {kind!r}"}}
    return {"response": {"status_code": status, "body": body}, "error": None}


def _status(body: Mapping[str, Any]) -> Status:
    """Anthropic's batch object as a :class:`Status`: ended becomes completed, expired or cancelled."""
    counts = {k: int(v or 0) for k, v in (body.get("request_counts") or {}).items()}
    processing = str(body.get("processing_status"))
    status = {"in_progress": "in_progress", "canceling": "cancelling"}.get(processing, processing)
    if processing == "ended":
        status = "cancelled" if counts.get("canceled") else "expired" if counts.get("expired") else "completed"
    failed = counts.get("errored", 0) + counts.get("canceled", 0) + counts.get("expired", 0)
    return Status(
        id=str(body["id"]),
        status=status,
        total=sum(counts.values()),
        completed=counts.get("succeeded", 0),
        failed=failed,
        output_file_id=None,
        error_file_id=None,
        results_url=body.get("results_url"),
    )
