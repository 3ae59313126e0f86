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
(:class:`BatchAPIError` ``maybe_created``). The token is the caller's: the collector records it
before the create (:mod:`courtroom.models.batch._record`), so a resume finds by it a batch whose
process died before it could record the answer (:meth:`OpenAIBatches.find`).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
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

LOOKBACK = 600.0
"""Seconds before a create that a look for its batch still reads the provider's list (clocks differ)."""

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
    findable: bool
    """Whether :meth:`find` can find a batch by its submission token (Anthropic's batches carry no metadata)."""

    def submit(
        self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str], token: str | None = None
    ) -> Status: ...
    def find(self, tokens: Collection[str], since: float) -> dict[str, Status]: ...
    def cannot_find(self, n: int, at: str) -> str: ...
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
    findable = False

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
            # It answers a plain request: it is up, and only its batch routes failed.
            up = not isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout) and self._answers()
            error = BatchAPIError(
                f"batch API: {method} {path} failed ({type(exc).__name__}): "
                + (NO_BATCH_API if up else "is the server up?"),
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
            if code in (404, 405, 501) and url is None:
                message = f"{message}; {NO_BATCH_API}" if message.strip() else NO_BATCH_API
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

    def find(self, tokens: Collection[str], since: float) -> dict[str, Status]:
        """Token -> the batch created with it, among those created since ``since`` (epoch seconds)."""
        raise BatchAPIError(f"batch API: {self.provider} batches cannot be found by a token")

    def cannot_find(self, n: int, at: str) -> str:
        """What to look for: a batch of ``n`` requests made at about ``at`` may exist, and cannot be found."""
        return (
            f"a batch of {n} requests created at about {at} may exist and cannot be found by its token: look for it "
            "in the provider's list of batches, and cancel it before a --retry-failed"
        )

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
    findable = True

    def submit(
        self, lines: Sequence[tuple[str, Mapping[str, Any]]], metadata: Mapping[str, str], token: str | None = None
    ) -> Status:
        """Upload ``(custom_id, body)`` lines as one file and create a batch on it (once: module docstring).

        An upload tried again leaves at most an unused file; the create carries ``token`` (a new
        one if None) as ``courtroom_submission`` in its metadata, by which a create whose answer
        was lost is found (:meth:`find`).
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
        token = token or uuid.uuid4().hex
        since = time.time() - LOOKBACK
        body = {"input_file_id": upload["id"], "endpoint": ENDPOINT, "completion_window": "24h",
                "metadata": {**metadata, "courtroom_submission": token}}  # fmt: skip
        return _status(self._create(lambda: self._call("POST", "/batches", json=body, retries=0),
                                    lambda: self._find(token, since)))  # fmt: skip

    def _find(self, token: str, since: float) -> httpx.Response | None:
        """The batch whose metadata carries ``token`` (None: there is none), for :meth:`_create`."""
        try:
            found = self._listed({token}, since)
        except BatchAPIError as exc:
            raise BatchAPIError(f"{exc} (looking for a batch whose create failed)", maybe_created=True) from exc
        return httpx.Response(200, json=found[token]) if token in found else None

    def find(self, tokens: Collection[str], since: float) -> dict[str, Status]:
        """Token -> the batch whose ``courtroom_submission`` metadata is that token, created since ``since``.

        The list is read newest first, page after page, until every token is found or the
        batches are older than ``since`` (less :data:`LOOKBACK`, for clocks that differ); a list
        call that fails through its retries raises (:class:`BatchAPIError`): not found is not said.
        """
        return {token: _status(item) for token, item in self._listed(tokens, since - LOOKBACK).items()}

    def _listed(self, tokens: Collection[str], since: float) -> dict[str, dict[str, Any]]:
        wanted, found = set(tokens), {}
        params: dict[str, Any] = {"limit": 100}
        while True:
            page = self._call("GET", "/batches", params=params).json()
            items = [item for item in page.get("data") or [] if isinstance(item, dict)]
            for item in items:
                token = (item.get("metadata") or {}).get("courtroom_submission")
                if token in wanted:
                    found[token] = item
            oldest = min((float(item.get("created_at") or 0) for item in items), default=0.0)
            if wanted <= found.keys() or not page.get("has_more") or not items or oldest < since:
                return found
            params = {"limit": 100, "after": items[-1]["id"]}

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
