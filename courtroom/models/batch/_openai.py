"""OpenAI's Files and Batches API over plain HTTP: OpenAI itself, or any server at ``--api-base`` that serves it.

One JSONL file of ``{"custom_id", "method", "url", "body"}`` lines is uploaded (``purpose=batch``),
a batch is created on it, polled until it ends, and its output and error files are read back.
The base URL and key live only in memory: what is written to disk is the batch id.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from courtroom.errors import ModelError

ENDPOINT = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")
"""Statuses after which a batch's lines are all in its output or error file."""


@dataclass
class Status:
    """A batch as the provider reports it."""

    id: str
    status: str
    total: int
    completed: int
    failed: int
    output_file_id: str | None
    error_file_id: str | None
    errors: Any = None
    results_url: str | None = None
    """Where the results are (Anthropic's Message Batches; in memory only, never written)."""

    @property
    def done(self) -> bool:
        """Whether the batch has ended (every line answered, failed, expired or cancelled)."""
        return self.status in TERMINAL


class BatchClient(Protocol):
    """What the collector needs of a provider's batch API (:class:`OpenAIBatches`, ``AnthropicBatches``)."""

    provider: str
    reach: tuple[str, str, str]

    def submit(self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str]) -> Status: ...
    def status(self, batch_id: str) -> Status: ...
    def results(self, status: Status) -> dict[str, dict[str, Any]]: ...
    def cancel(self, batch_id: str) -> Status: ...
    def close(self) -> None: ...


NO_BATCH_API = (
    "the server is up but has no batch API (OpenAI's /files and /batches: llama.cpp, Ollama and vLLM's "
    "servers have none); drop --batch to send the requests live"
)


class HttpBatches:
    """What every batch client shares: base URL and key in memory only, one pooled HTTP client, one-line errors."""

    provider = "batch API"

    def __init__(self, base_url: str, api_key: str, timeout: float = 60.0) -> None:  # noqa: D107
        self._base = base_url.rstrip("/")
        self._key = api_key
        self._timeout = timeout
        self._client: httpx.Client | None = None
        self.reach = (type(self).__name__, self._base, api_key)
        """Which API this client reaches (in memory only): two clients with the same reach are one API."""

    def __repr__(self) -> str:  # never the base URL (it can hold a user and password) or the key
        return f"{type(self).__name__}()"

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._key}"}

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self._timeout, headers=self._headers())
        return self._client

    def _call(self, method: str, path: str, *, url: str | None = None, **kwargs: Any) -> httpx.Response:
        """``method`` on ``base + path`` (or on ``url``, named by ``path`` in errors)."""
        try:
            response = self._http().request(method, url or f"{self._base}{path}", **kwargs)
        except httpx.HTTPError as exc:
            if not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) and self._answers():
                raise ModelError(f"batch API: {method} {path} failed ({type(exc).__name__}): {NO_BATCH_API}") from exc
            raise ModelError(f"batch API: {method} {path} failed ({type(exc).__name__}): is the server up?") from exc
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            if response.status_code in (404, 405, 501) and url is None:
                message = f"{message}; {NO_BATCH_API}" if message.strip() else NO_BATCH_API
            raise ModelError(f"batch API: {method} {path} answered {response.status_code}: {message}")
        return response

    def _answers(self) -> bool:
        """The server answers a plain request (``GET /models``): it is up, only its batch routes failed."""
        try:
            self._http().get(f"{self._base}/models", timeout=min(self._timeout, 5.0))
        except httpx.HTTPError:
            return False
        return True

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()


class OpenAIBatches(HttpBatches):
    """Submit, poll, read and cancel batches of chat requests at ``base_url`` (ending in ``/v1``)."""

    provider = "openai-compatible"

    def submit(self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str]) -> Status:
        """Upload ``(custom_id, body)`` lines as one file and create a batch on it."""
        text = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": dict(body)}) + "\n"
            for cid, body in lines
        )
        upload = self._call(
            "POST",
            "/files",
            data={"purpose": "batch"},
            files={"file": ("batch.jsonl", text.encode(), "application/jsonl")},
        ).json()
        created = self._call(
            "POST",
            "/batches",
            json={"input_file_id": upload["id"], "endpoint": ENDPOINT, "completion_window": "24h",
                  "metadata": dict(metadata)},
        ).json()  # fmt: skip
        return _status(created)

    def status(self, batch_id: str) -> Status:
        """The batch as it is now."""
        return _status(self._call("GET", f"/batches/{batch_id}").json())

    def results(self, status: Status) -> dict[str, dict[str, Any]]:
        """custom_id -> its output line (``response`` with ``status_code`` and ``body``, or ``error``)."""
        out: dict[str, dict[str, Any]] = {}
        for file_id in (status.output_file_id, status.error_file_id):
            if not file_id:
                continue
            for line in self._call("GET", f"/files/{file_id}/content").text.splitlines():
                if line.strip():
                    item = json.loads(line)
                    out[str(item.get("custom_id"))] = item
        return out

    def cancel(self, batch_id: str) -> Status:
        """Ask the provider to cancel the batch (lines already answered stay answered)."""
        return _status(self._call("POST", f"/batches/{batch_id}/cancel").json())


def _status(body: Mapping[str, Any]) -> Status:
    counts = body.get("request_counts") or {}
    return Status(
        id=str(body["id"]),
        status=str(body.get("status")),
        total=int(counts.get("total") or 0),
        completed=int(counts.get("completed") or 0),
        failed=int(counts.get("failed") or 0),
        output_file_id=body.get("output_file_id"),
        error_file_id=body.get("error_file_id"),
        errors=body.get("errors"),
    )
