"""OpenAI's Files and Batches API over plain HTTP: OpenAI itself, or any server at ``--api-base`` that serves it.

One JSONL file of ``{"custom_id", "method", "url", "body"}`` lines is uploaded (``purpose=batch``),
a batch is created on it, polled until it ends, and its output and error files are read back.
The base URL and key live only in memory: what is written to disk is the batch id.

Every call retries what the OpenAI and Anthropic SDKs retry (a connection error, 408, 409, 429,
5xx), up to :data:`RETRIES` times, waiting the server's ``Retry-After`` or
``COURTROOM_RETRY_WAIT`` x 2^n seconds: one 500 on a status check or a download is absorbed here
and never becomes a second batch. Creating a batch is the one call that is not safe to repeat (a
500 can come after the batch was made): before trying again, the client looks for the batch it
may have made (its ``courtroom_submission`` metadata, :meth:`OpenAIBatches.submit`), and a
client that cannot look (Anthropic's API has no metadata) does not repeat it
(:class:`BatchAPIError` ``maybe_created``).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx

from courtroom import _stop
from courtroom._env import env_seconds
from courtroom.errors import ModelError

RETRIES = 3
"""Retries of one batch API call that failed in a way worth trying again (module docstring)."""

RETRY_STATUS = frozenset({408, 409, 429})
"""Statuses retried besides 5xx (the SDKs' list)."""

NOT_PROCESSED = frozenset({503, 529})
"""5xx statuses that say the request was not taken in (unavailable, Anthropic's overloaded)."""

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


class BatchAPIError(ModelError):
    """A batch API call that failed (after its retries, once it leaves the client).

    ``uncertain``: the server may have done the work (a 5xx other than 503/529, or a connection
    broken after the body was sent). ``maybe_created``: a create that failed so and could not be
    checked: the batch may exist and be paid for, so its lines must not go out again.
    """

    def __init__(  # noqa: D107
        self, message: str, *, retryable: bool = False, uncertain: bool = False, maybe_created: bool = False
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.uncertain = uncertain
        self.maybe_created = maybe_created


class BatchClient(Protocol):
    """What the collector needs of a provider's batch API (:class:`OpenAIBatches`, ``AnthropicBatches``)."""

    provider: str
    reach: tuple[str, str, str]

    def submit(self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str]) -> Status: ...
    def status(self, batch_id: str) -> Status: ...
    def results(self, status: Status) -> dict[str, dict[str, Any]]: ...
    def cancel(self, batch_id: str) -> Status: ...
    def close(self) -> None: ...


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

    def _url(self, path: str) -> str:
        """``path`` under the base URL, the base's query (a proxy's token) kept after it."""
        parts = urlsplit(self._base)
        return urlunsplit(parts._replace(path=parts.path.rstrip("/") + path))

    def _http(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(timeout=self._timeout, headers=self._headers())
        return self._client

    def _call(
        self, method: str, path: str, *, url: str | None = None, retries: int = RETRIES, **kwargs: Any
    ) -> httpx.Response:
        """``method`` on ``base + path`` (or on ``url``, named by ``path`` in errors), retried (module docstring)."""
        for attempt in range(retries + 1):
            try:
                return self._once(method, path, url=url, **kwargs)
            except BatchAPIError as exc:
                if not exc.retryable or attempt >= retries:
                    raise
                if _stop.wait(self._delay(exc, attempt)):
                    raise BatchAPIError(f"{exc} (stopped: not tried again)") from exc
        raise AssertionError("unreachable")

    def _once(self, method: str, path: str, *, url: str | None = None, **kwargs: Any) -> httpx.Response:
        """One try; a failure is a :class:`BatchAPIError` saying whether trying again may help."""
        try:
            response = self._http().request(method, url or self._url(path), **kwargs)
        except httpx.HTTPError as exc:
            # A connection never made cannot have created anything; any other break may come after.
            error = BatchAPIError(
                f"batch API: {method} {path} failed ({type(exc).__name__}): is the server up?",
                retryable=isinstance(exc, httpx.TransportError),
                uncertain=not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout),
            )
            error.retry_after = None  # type: ignore[attr-defined]
            raise error from exc
        if response.status_code >= 400:
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            code = response.status_code
            error = BatchAPIError(
                f"batch API: {method} {path} answered {code}: {message}",
                retryable=code in RETRY_STATUS or code >= 500,
                uncertain=code >= 500 and code not in NOT_PROCESSED,
            )
            error.retry_after = response.headers.get("retry-after")  # type: ignore[attr-defined]
            raise error
        return response

    @staticmethod
    def _delay(exc: BaseException, attempt: int) -> float:
        """The server's ``Retry-After`` (at most 60 s), else ``COURTROOM_RETRY_WAIT`` x 2^attempt."""
        try:
            hint = float(getattr(exc, "retry_after", None))  # type: ignore[arg-type]
            if 0 <= hint:
                return min(hint, 60.0)
        except (TypeError, ValueError):
            pass
        return min(env_seconds("COURTROOM_RETRY_WAIT", 1.0, strict=False) * 2**attempt, 60.0)

    def _create(self, create: Callable[[], httpx.Response], find: Callable[[], httpx.Response | None]) -> Any:
        """Create a batch once: after a failure that may have made it, ``find`` it before trying again.

        ``find`` returns the batch made by an earlier try (None: none was made); a client that
        cannot look passes a ``find`` that raises.
        """
        for attempt in range(RETRIES + 1):
            try:
                return create().json()
            except BatchAPIError as exc:
                if exc.uncertain:
                    made = find()  # raises (maybe_created) when it cannot look
                    if made is not None:
                        return made.json()
                if not exc.retryable or attempt >= RETRIES:
                    raise
                if _stop.wait(self._delay(exc, attempt)):
                    raise BatchAPIError(f"{exc} (stopped: not tried again)") from exc
        raise AssertionError("unreachable")

    def close(self) -> None:
        """Close the connection pool."""
        if self._client is not None:
            self._client.close()


class OpenAIBatches(HttpBatches):
    """Submit, poll, read and cancel batches of chat requests at ``base_url`` (ending in ``/v1``)."""

    provider = "openai-compatible"

    def submit(self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str]) -> Status:
        """Upload ``(custom_id, body)`` lines as one file and create a batch on it (once: module docstring).

        An upload tried again leaves at most an unused file; the create carries a
        ``courtroom_submission`` id in its metadata, by which a create whose answer was lost is found.
        """
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
        token = uuid.uuid4().hex
        body = {"input_file_id": upload["id"], "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {**metadata, "courtroom_submission": token}}  # fmt: skip
        return _status(self._create(lambda: self._call("POST", "/batches", json=body, retries=0),
                                    lambda: self._find(token)))  # fmt: skip

    def _find(self, token: str) -> httpx.Response | None:
        """The batch whose metadata carries ``token``, among the newest (None: there is none)."""
        try:
            listed = self._call("GET", "/batches", params={"limit": 100}).json()
        except BatchAPIError as exc:
            raise BatchAPIError(f"{exc} (looking for a batch whose create failed)", maybe_created=True) from exc
        for item in listed.get("data") or []:
            if (item.get("metadata") or {}).get("courtroom_submission") == token:
                return httpx.Response(200, json=item)
        return None

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
