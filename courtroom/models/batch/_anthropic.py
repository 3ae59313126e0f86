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
has no metadata field, so the round number is not sent. The base URL and key live only in memory.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from courtroom.errors import ModelError
from courtroom.models.batch._openai import Status

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


class AnthropicBatches:
    """Submit, poll, read and cancel Message Batches at ``base_url`` (ending in ``/v1``)."""

    provider = "anthropic"

    def __init__(self, base_url: str, api_key: str, timeout: float = 60.0) -> None:  # noqa: D107
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._timeout = timeout
        self._client: httpx.Client | None = None
        self.reach = (type(self).__name__, self._base, api_key)
        """Which API this client reaches (in memory only): two clients with the same reach are one API."""

    def __repr__(self) -> str:  # never the base URL or the key
        return f"{type(self).__name__}()"

    def _http(self) -> httpx.Client:
        if self._client is None:
            headers = {"x-api-key": self._key, "anthropic-version": VERSION}
            self._client = httpx.Client(timeout=self._timeout, headers=headers)
        return self._client

    def _call(self, method: str, url: str, what: str, **kwargs: Any) -> httpx.Response:
        try:
            response = self._http().request(method, url, **kwargs)
        except httpx.HTTPError as exc:
            raise ModelError(f"batch API: {method} {what} failed ({type(exc).__name__}): is the server up?") from exc
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            raise ModelError(f"batch API: {method} {what} answered {response.status_code}: {message}")
        return response

    def submit(self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str]) -> Status:
        """Create one batch of ``(custom_id, params)`` lines (``metadata`` is dropped: the API has no such field)."""
        requests = [{"custom_id": cid, "params": dict(params)} for cid, params in lines]
        path = "/messages/batches"
        return _status(self._call("POST", self._base + path, path, json={"requests": requests}).json())

    def status(self, batch_id: str) -> Status:
        """The batch as it is now."""
        path = f"/messages/batches/{batch_id}"
        return _status(self._call("GET", self._base + path, path).json())

    def results(self, status: Status) -> dict[str, dict[str, Any]]:
        """custom_id -> its line in the collector's terms (module docstring)."""
        if not status.results_url:
            return {}
        text = self._call("GET", status.results_url, f"/messages/batches/{status.id}/results").text
        out: dict[str, dict[str, Any]] = {}
        for raw in text.splitlines():
            if raw.strip():
                item = json.loads(raw)
                out[str(item.get("custom_id"))] = _line(item.get("result") or {})
        return out

    def cancel(self, batch_id: str) -> Status:
        """Ask Anthropic to cancel the batch; the batch as it is after (``canceling`` until it has ended)."""
        path = f"/messages/batches/{batch_id}/cancel"
        cancelled = _status(self._call("POST", self._base + path, path).json())
        return cancelled if cancelled.done else self.status(batch_id)

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()


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
