"""Batch mode (``--batch``): requests go through the provider's batch API at about half price.

Programs run unchanged. While batch mode is on (:func:`batching`), a request that is not answered
from the cache parks its thread on a line of the current batch (:class:`Collector`); when every
case is waiting, the lines go out as one batch, and the answers return to their cases, which go
on. A round-synchronous program thus sends one batch per stage of its critical path.

Every batch is written to the run folder's ``batches.jsonl`` before it is created (an intent
carrying the token the create carries) and at once when accepted
(:mod:`courtroom.models.batch._record`); a resume settles the intents a kill left open
(:func:`~courtroom.models.batch._settle.settle`) and follows the batches
(:meth:`Collector.reattach`), so no request is paid for twice. Which models have a batch API: :func:`check_batchable`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from courtroom._env import env_count, env_seconds
from courtroom.errors import ConfigError
from courtroom.models.batch._anthropic import AnthropicBatches
from courtroom.models.batch._collector import Batch, Collector, request_key
from courtroom.models.batch._openai import BatchClient, OpenAIBatches
from courtroom.models.batch._record import FILE, BatchLog, recorded, unsettled
from courtroom.models.batch._settle import settle

__all__ = [
    "FILE",
    "TURNAROUND_BASIS",
    "AnthropicBatches",
    "Batch",
    "BatchClient",
    "BatchLog",
    "Collector",
    "OpenAIBatches",
    "batching",
    "cancel_batches",
    "check_batchable",
    "check_names",
    "current",
    "forked",
    "listening",
    "recorded",
    "request_key",
    "turnaround",
    "unsettled",
]

logger = logging.getLogger(__name__)

_current: list[Collector] = []
_lock = threading.Lock()


def current() -> Collector | None:
    """The collector of the batch mode in force (process-wide), if any."""
    return _current[-1] if _current else None


def poll_seconds() -> float:
    """The longest wait between looks at a batch in flight (``COURTROOM_BATCH_POLL``, default 10 s).

    A batch is first looked at 0.05 s after it is submitted, then after twice as long each time.
    Every ``COURTROOM_BATCH_*`` value is checked (a bad one refused in one line, :mod:`courtroom._env`).
    """
    return max(0.01, env_seconds("COURTROOM_BATCH_POLL", 10.0))


def max_lines() -> int:
    """The most requests in one batch (``COURTROOM_BATCH_LINES``, a whole number >= 1; default 50,000, OpenAI's)."""
    return env_count("COURTROOM_BATCH_LINES", 50_000)


def max_wait() -> float:
    """Seconds a pending request waits for the other cases before its batch goes out (``COURTROOM_BATCH_WAIT``).

    Default 30: a bound on a thread that works long between its requests.
    """
    return max(0.1, env_seconds("COURTROOM_BATCH_WAIT", 30.0))


TURNAROUND_BASIS = (
    "an assumed provider turnaround: most batches come back within an hour, each may take up to the "
    "24 h window; set COURTROOM_BATCH_TURNAROUND=SECONDS"
)
"""What the dry run's expected wall time of a batch run assumes (:func:`turnaround`)."""


def turnaround() -> float:
    """Seconds one batch is assumed to take at the provider (``COURTROOM_BATCH_TURNAROUND``, default 3600)."""
    return env_seconds("COURTROOM_BATCH_TURNAROUND", 3600.0)


@contextlib.contextmanager
def batching(
    folder: str | Path | None, lms: Iterable[Any] = (), *, on_status: Callable[[Batch], None] | None = None
) -> Iterator[Collector]:
    """Batch mode while inside: every request of ``lms`` (checked first) goes into batches.

    ``folder`` (a run folder) gets ``batches.jsonl``; the batches it already records are
    followed, so a resumed run collects them instead of sending their requests again. A batch a
    kill left unrecorded (an intent with no answer) is looked up by its token and followed if it
    exists; if it cannot be looked up, its requests are withheld (they fail, unsent) and the
    warning says what to look for.
    Nested uses (a run inside a comparison) open their own collector for their own folder.
    """
    models = list(lms)
    check_batchable(models)
    log = BatchLog(folder) if folder is not None else None
    collector = Collector(
        log, poll=poll_seconds(), max_lines=max_lines(), max_wait=max_wait(), on_status=on_status or _notify
    )
    if folder is not None and log is not None:
        records, intents = recorded(folder), unsettled(folder)
        if records or intents:
            client = _one_client(folder, models)
            unknown = settle(client, log, intents)
            for why in dict.fromkeys(unknown.values()):  # said once
                logger.warning("batch: %s", why)
            for intent in intents:
                if intent["token"] in unknown:
                    collector.withhold(list(intent["lines"].values()), unknown[intent["token"]])
            collector.reattach(client, recorded(folder))
    with _lock:
        _current.append(collector)
    try:
        yield collector
    finally:
        with _lock:
            _current.remove(collector)
        collector.close()


_listeners: list[Callable[[Batch], None]] = []


@contextlib.contextmanager
def listening(listener: Callable[[Batch], None]) -> Iterator[None]:
    """While inside, ``listener`` sees every batch of every collector as it is submitted and polled.

    The progress display listens (one line per batch); a collector given its own ``on_status``
    reports there instead.
    """
    with _lock:
        _listeners.append(listener)
    try:
        yield
    finally:
        with _lock:
            _listeners.remove(listener)


def _notify(batch: Batch) -> None:
    for listener in list(_listeners):
        listener(batch)


@contextlib.contextmanager
def forked(n: int) -> Iterator[Callable[[], None]]:
    """The calling thread hands work to ``n`` threads and waits for them (a no-op outside batch mode).

    Each thread calls the yielded ``leave()`` when it returns, so the collector knows who can
    still ask (:meth:`Collector.forked`).
    """
    collector = current()
    if collector is None:
        yield lambda: None
        return
    with collector.forked(n) as leave:
        yield leave


def _one_client(folder: str | Path, models: list[Any]) -> BatchClient:
    clients = {c.reach: c for c in (_client_of(lm) for lm in models) if c is not None}
    if len(clients) != 1:
        raise ConfigError(
            f"{Path(folder) / FILE} records batches, but its models reach {len(clients)} batch APIs: "
            "resume with the run's one --api-base"
        )
    return next(iter(clients.values()))


def _client_of(lm: Any) -> BatchClient | None:
    engine = getattr(lm, "_engine_spec", None)
    batches = getattr(engine, "batches", None)
    return batches() if callable(batches) else None


OPENAI = "https://api.openai.com/v1"
"""Where ``openai/`` models go in batch mode without ``--api-base`` or ``$OPENAI_BASE_URL`` (key: $OPENAI_API_KEY)."""

ANTHROPIC = "https://api.anthropic.com/v1"
"""Where ``anthropic/`` models go in batch mode without ``--api-base`` or ``$ANTHROPIC_BASE_URL``."""

WIRE = ("openai/", "hosted_vllm/")
"""Model prefixes whose requests are OpenAI chat bodies (:data:`courtroom.models.lms.OPENAI_WIRE`)."""

_FIX = (
    "batch mode serves openai/ models (OpenAI's Batch API, or an --api-base server that speaks /v1/files and "
    "/v1/batches, like courtroom.testing.FakeServer) and anthropic/ models (Message Batches); drop --batch"
)


def check_names(names: Iterable[str], api_base: str | None, *, keys: bool = True) -> str | None:
    """Refuse, before anything is built, a model with no batch API; the base URL batch mode uses.

    One run's models reach one batch API: ``anthropic/`` models together with OpenAI-wire ones
    are refused (run them as two runs). ``anthropic/`` needs ``$ANTHROPIC_API_KEY`` (not checked
    with ``keys=False``: a dry run sends nothing).
    """
    names = list(names)
    for name in names:
        if name.startswith("anthropic/"):
            continue
        if not name.startswith(WIRE) or (not api_base and not name.startswith("openai/")):
            raise ConfigError(f"--batch: {name} has no batch API here ({_FIX})")
    claude = [n for n in names if n.startswith("anthropic/")]
    if not claude:
        return api_base or os.environ.get("OPENAI_BASE_URL") or os.environ.get("OPENAI_API_BASE") or OPENAI
    other = next((n for n in names if not n.startswith("anthropic/")), None)
    if other is not None:
        raise ConfigError(
            f"--batch: {claude[0]} (Anthropic's Message Batches) and {other} (an OpenAI batch API) in one run: "
            "batch mode sends a run's requests to one batch API; run them as two runs"
        )
    if keys and not os.environ.get("ANTHROPIC_API_KEY"):
        raise ConfigError(
            f"--batch: {claude[0]} needs ANTHROPIC_API_KEY in the environment: export it "
            "(keys are never read from files or flags)"
        )
    if api_base:
        return api_base
    base = os.environ.get("ANTHROPIC_BASE_URL", "").rstrip("/")
    if not base:
        return ANTHROPIC
    return base if base.endswith("/v1") else base + "/v1"  # Anthropic's SDKs spell it without /v1


def check_batchable(lms: Iterable[Any]) -> None:
    """Refuse, before any request, a built model with no batch API (one line naming it and the fix)."""
    for lm in lms:
        if _client_of(lm) is None:
            raise ConfigError(f"--batch: {getattr(lm, 'model', repr(lm))} has no batch API here ({_FIX})")


def cancel_batches(folder: str | Path, lms: Iterable[Any]) -> list[tuple[str, str]]:
    """Cancel every batch ``folder`` records (or a kill left unrecorded) that has not ended; (batch id, status after).

    A batch that may exist and cannot be found (:func:`~courtroom.models.batch._settle.settle`)
    is listed with an empty id and, as its status, what to look for.
    """
    clients = [c for c in (_client_of(lm) for lm in lms) if c is not None]
    if not clients:
        raise ConfigError("--cancel-batches needs the run's models (and its --api-base) to reach the batch API")
    client = clients[0]
    log = BatchLog(folder)
    out = [("", why) for why in dict.fromkeys(settle(client, log, unsettled(folder)).values())]
    for record in recorded(folder):
        if record["status"] is not None:
            continue
        status = client.cancel(record["id"])
        if status.done:
            log.ended(record["id"], status.status)
        out.append((record["id"], status.status))
    return out
