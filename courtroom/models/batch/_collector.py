"""The collector: requests that wait for an answer join the current batch; one thread submits and polls.

Who can still ask is counted exactly. ``active`` starts at 1 (the thread that opened batch
mode); a thread that hands work to ``n`` threads and waits for them (an evaluation's examples, a
decision's parallel calls: :meth:`Collector.forked`) adds ``n - 1`` and takes one back as each
returns. ``waiting`` counts the requests parked on a line that has no answer yet. When every
active thread is waiting (or ``max_lines`` requests are pending, or the oldest pending request
has waited ``max_wait`` seconds) the pending lines go out as one batch per model, so a
round-synchronous program sends each round of every case as one batch.

A line's thread is released by the collector, which counts it out of ``waiting`` at that moment
(not when the thread wakes): a woken thread that has not run yet is active, not waiting, so the
next batch waits for its next request.

What the provider did not answer is never counted as sent, and nothing it may have answered is
sent again. A line left unanswered (expired, cancelled, missing from the output) goes out again
in the next batch, at most :data:`RESENDS` times. A batch that could not be submitted fails its
own lines (tried again by the request's retries, uncounted), unless the create may have gone
through (:class:`~courtroom.models.batch._openai.BatchAPIError` ``maybe_created``): then its lines
fail for good. A batch that cannot be looked at or read :data:`LOOKS` times in a row (each look
already retried by the client) fails its own lines for good, and stays recorded as not ended, so
a resume collects it. A batch accepted but not recorded (the run folder went away) is cancelled,
and nothing more is submitted.

A batch is recorded as an intent (``submitting``, with a random token the create carries) before
the create call, and as ``submitted`` after it, so no kill at any moment leaves a batch the folder
does not name. A resume settles every intent left open
(:func:`~courtroom.models.batch._settle.settle`); the lines of a batch that may exist and cannot
be found are withheld (:meth:`Collector.withhold`): they fail, not sent, with what to look for.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import json
import logging
import threading
import time
import uuid
from collections import defaultdict, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom import _stop
from courtroom.models.batch._openai import BatchClient, Status
from courtroom.models.batch._record import BatchLog

logger = logging.getLogger(__name__)

RESUBMIT = ("batch_expired", "batch_cancelled", "batch_missing")
"""Error codes of lines the provider never answered: sent again in the next batch, not counted."""

RESENDS = 3
"""How often one request goes out again after batches left it unanswered, before it fails."""

LOOKS = 3
"""Failed looks in a row (status or results, each retried by the client) after which a batch fails its lines."""


def unsent(message: str, *, final: bool) -> dict[str, Any]:
    """The answer of a line the provider did not answer: not counted as sent; ``final``: never sent again."""
    return {"error": {"code": "batch_api", "message": message}, "unsent": True, "final": final}


HINTS = ("prompt_cache_key",)
"""Body fields that route a request, not what it asks: outside its identity (a batch recorded by a
courtroom that sent none is followed, not paid for again)."""


def request_key(body: Mapping[str, Any]) -> str:
    """The identity of a request: what a resume matches a recorded batch line against."""
    asked = {k: v for k, v in body.items() if k not in HINTS}
    return hashlib.sha256(json.dumps(asked, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:32]


@dataclass(eq=False)
class Line:
    """One request waiting for its answer."""

    key: str
    body: dict[str, Any]
    client: BatchClient
    answer: dict[str, Any] | None = None
    """The output line (``response``/``error``), once the batch ended."""
    ready: threading.Event = field(default_factory=threading.Event)


@dataclass(eq=False)
class Batch:
    """A submitted batch and the lines waiting on it (custom_id -> line)."""

    id: str
    client: BatchClient
    model: str
    round: int
    lines: dict[str, Line]
    keys: dict[str, str]
    """custom_id -> request key, as recorded."""
    status: str = "validating"
    done: int = 0
    started: float = field(default_factory=time.monotonic)
    interval: float = 0.05
    """Seconds until the next look: doubled at each look, up to the collector's ``poll``."""
    next_poll: float = 0.0
    misses: int = 0
    """Looks in a row that failed (:data:`LOOKS`)."""


class Collector:
    """Requests parked on lines; batches submitted, recorded, polled and answered (module docstring).

    Args:
        log: where every accepted batch is recorded at once (None: nowhere, e.g. Python without a folder).
        poll: seconds between looks at the batches in flight.
        max_lines: submit as soon as this many requests are pending.
        max_wait: submit pending requests that waited this long even if some thread is busy.
        on_status: called with each batch in flight as it is polled (progress lines).
    """

    def __init__(
        self,
        log: BatchLog | None = None,
        *,
        poll: float = 1.0,
        max_lines: int = 50_000,
        max_wait: float = 30.0,
        on_status: Callable[[Batch], None] | None = None,
    ) -> None:
        self.log = log
        self.poll = poll
        self.max_lines = max_lines
        self.max_wait = max_wait
        self.on_status = on_status
        self.active = 1
        self.waiting = 0
        self.rounds = 0
        self.submitted: list[tuple[str, int]] = []
        """(batch id, lines) of every batch this collector submitted."""
        self._pending: deque[Line] = deque()
        self._oldest: float | None = None
        self._in_flight: dict[str, Batch] = {}
        self._recorded: dict[str, list[tuple[str, str]]] = defaultdict(list)
        """Request key -> (batch id, custom_id) of recorded lines not yet claimed (a resume)."""
        self._answered: dict[str, deque[dict[str, Any]]] = defaultdict(deque)
        """Request key -> answers of recorded lines that ended before a request claimed them."""
        self._withheld: dict[str, str] = {}
        """Request key -> why it is not sent (a batch that may hold it cannot be found): a resume's."""
        self._leaders: dict[str, list[Any]] = {}
        """Cache key -> [answered event, followers waiting]: requests asked while an identical one is out."""
        self._ids = itertools.count(1)
        self._cond = threading.Condition()
        self._closed = False
        self._broken: str | None = None
        """Why nothing more may be submitted (a batch could not be recorded), once that happened."""
        self._thread: threading.Thread | None = None
        self._warned = ""
        """The last failure logged (the same one again is not)."""

    # ----- the threads that ask

    @contextlib.contextmanager
    def forked(self, n: int) -> Iterator[Callable[[], None]]:
        """The calling thread waits for ``n`` threads; each calls the yielded ``leave`` when it returns.

        The last thread to leave hands its count back to the caller in the same step, so the
        caller is never counted out while it wakes up.
        """
        if n < 1:
            yield lambda: None
            return
        left = [n]
        with self._cond:
            self.active += n - 1

        def leave() -> None:
            with self._cond:
                if left[0] > 0:
                    left[0] -= 1
                    self.active -= 0 if left[0] == 0 else 1
                    self._cond.notify_all()

        try:
            yield leave
        finally:
            with self._cond:
                if left[0] > 0:  # threads that never ran (cancelled) leave here
                    self.active -= left[0] - 1
                    left[0] = 0
                self._cond.notify_all()

    def ask(self, client: BatchClient, body: dict[str, Any]) -> dict[str, Any]:
        """Park this thread until ``body``'s line is answered; the output line (``response`` or ``error``)."""
        key = request_key(body)
        for sends in itertools.count():
            line = Line(key, body, client)
            with self._cond:
                if self._broken is not None:
                    return unsent(self._broken, final=True)
                if self._answered.get(key):
                    return self._answered[key].popleft()  # answered while the process was away
                if key in self._withheld:
                    return unsent(self._withheld[key], final=True)
                claimed = self._claim(line)
                if not claimed:
                    self._pending.append(line)
                    self._oldest = self._oldest or time.monotonic()
                self.waiting += 1
                self._start()
                self._cond.notify_all()
            while not line.ready.wait(0.2):
                if _stop.stop_requested():
                    self._abandon(line)
                    raise _stop.Stopped(f"stopped: batches stay with the provider ({_stop.stop_text()})")
            answer = line.answer or {}
            error = answer.get("error") or {}
            if error.get("code") not in RESUBMIT:
                return answer
            if sends >= RESENDS:  # never answered: it went out again in the next batch, uncounted, up to here
                return unsent(f"{sends + 1} batches left the request unanswered ({error.get('code')})", final=True)
        raise AssertionError("unreachable")

    def _claim(self, line: Line) -> bool:
        """Attach ``line`` to a recorded line of the same request still in flight (a resume)."""
        while self._recorded.get(line.key):
            batch_id, custom_id = self._recorded[line.key].pop(0)
            batch = self._in_flight.get(batch_id)
            if batch is not None and custom_id not in batch.lines:
                batch.lines[custom_id] = line
                return True
        return False

    def _abandon(self, line: Line) -> None:
        with self._cond:
            if line in self._pending:
                self._pending.remove(line)
            if not line.ready.is_set():
                self.waiting -= 1
                line.ready.set()

    @contextlib.contextmanager
    def idle(self) -> Iterator[None]:
        """While inside, this thread counts as waiting (it waits for another request's answer)."""
        with self._cond:
            self.waiting += 1
            self._cond.notify_all()
        try:
            yield
        finally:
            with self._cond:
                self.waiting -= 1
                self._cond.notify_all()

    @contextlib.contextmanager
    def leading(self, key: str) -> Iterator[bool]:
        """Ask ``key`` (a cache key) once: yields True to the first asker, False to one that waited for it.

        Live, a request identical to one already answered is a cache hit; in a batch both would
        be pending at once. So an identical request waits (counted as waiting) until the first
        one's answer is stored, then reads it from the cache.
        """
        with self._cond:
            leader = self._leaders.get(key)
            if leader is None:
                self._leaders[key] = leader = [threading.Event(), 0]
                first = True
            else:
                leader[1] += 1
                self.waiting += 1
                self._cond.notify_all()
                first = False
        if not first:
            while not leader[0].wait(0.2):
                if _stop.stop_requested():
                    raise _stop.Stopped(f"stopped: batches stay with the provider ({_stop.stop_text()})")
            yield False
            return
        try:
            yield True
        finally:
            with self._cond:
                del self._leaders[key]
                self.waiting -= leader[1]
                leader[0].set()
                self._cond.notify_all()

    # ----- the collector thread

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="courtroom-batches", daemon=True)
            self._thread.start()

    def _due(self) -> bool:
        if not self._pending:
            return False
        if self.waiting >= self.active or len(self._pending) >= self.max_lines:
            return True
        return self._oldest is not None and time.monotonic() - self._oldest >= self.max_wait

    def _next_poll(self) -> float:
        return min((b.next_poll for b in self._in_flight.values()), default=float("inf"))

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._closed and not self._due() and time.monotonic() < self._next_poll():
                    wait = min(self._next_poll() - time.monotonic(), self.poll)
                    self._cond.wait(max(0.005, min(wait, 0.05) if self._pending else wait))
                if self._closed:
                    return
                todo = list(self._pending) if self._due() else []
                if todo:
                    self._pending.clear()
                    self._oldest = None
            try:
                if todo:
                    self._submit(todo)
                self._poll()
            except Exception as exc:  # noqa: BLE001 - a bug or a refusal: the lines it held learn of it, none is sent again
                if str(exc) != self._warned:  # a retried line meeting the same refusal: said once
                    self._warned = str(exc)
                    logger.warning("batch: %s", exc)
                self._fail(todo, unsent(str(exc), final=True))

    def _submit(self, lines: list[Line]) -> None:
        # One batch per API and model: roles with LM objects of their own (a judge's temperature) reach
        # the same API through clients of their own, and their lines belong in the round's one batch.
        groups: dict[tuple[Any, str], list[Line]] = defaultdict(list)
        for line in lines:
            groups[(getattr(line.client, "reach", id(line.client)), str(line.body.get("model")))].append(line)
        self.rounds += 1
        for (_, model), group in groups.items():
            for start in range(0, len(group), self.max_lines):
                chunk = group[start : start + self.max_lines]
                if self._broken is not None:
                    self._fail(chunk, unsent(self._broken, final=True))
                    continue
                ids = {f"r{self.rounds}-{next(self._ids)}": line for line in chunk}
                keys = {cid: line.key for cid, line in ids.items()}
                client = chunk[0].client
                token = uuid.uuid4().hex
                try:
                    if self.log is not None:
                        self.log.check()
                        self.log.submitting(token, client.provider, model, self.rounds, keys)  # before the create
                except Exception as exc:  # noqa: BLE001 - a batch that cannot be recorded is not sent
                    self._broken = f"batch mode stopped: {exc}"
                    self._fail(chunk, unsent(self._broken, final=True))
                    continue
                try:
                    status = client.submit(
                        [(cid, line.body) for cid, line in ids.items()], {"courtroom_round": str(self.rounds)}, token
                    )
                except Exception as exc:  # noqa: BLE001 - this batch's lines fail; the others go on
                    if str(exc) != self._warned:  # a retried line meeting the same refusal: said once
                        self._warned = str(exc)
                        logger.warning("batch: %s", exc)
                    maybe = bool(getattr(exc, "maybe_created", False))
                    # Not made: settled. May exist: a client that can look leaves it to a resume's look-up;
                    # one that cannot has just said what to look for (the failed lines carry it).
                    self._settle(token, "not_submitted" if not maybe else None if client.findable else "unconfirmed")
                    self._fail(chunk, unsent(str(exc), final=maybe))
                    continue
                batch = Batch(status.id, client, model, self.rounds, ids, keys, status.status)
                if self.log is not None:
                    try:
                        self.log.submitted(batch.id, client.provider, model, self.rounds, keys, token)
                    except Exception as exc:  # noqa: BLE001 - accepted but not recorded: no resume could find it
                        self._unrecorded(batch, exc)
                        continue
                with self._cond:
                    self._in_flight[batch.id] = batch
                    self.submitted.append((batch.id, len(ids)))
                if self.on_status:
                    self.on_status(batch)

    def _settle(self, token: str, event: str | None) -> None:
        if self.log is None or event is None:
            return
        try:
            self.log.settled(token, event)
        except Exception as exc:  # noqa: BLE001 - unsettled, a resume looks the intent up: nothing is lost
            logger.warning("batch: %s", exc)

    def _poll(self) -> None:
        """Look at the batches whose time has come; each looks again after twice as long, up to ``poll``."""
        now = time.monotonic()
        for batch in [b for b in self._in_flight.values() if b.next_poll <= now]:
            batch.interval = min(self.poll, batch.interval * 2)
            batch.next_poll = now + batch.interval
            try:
                status = batch.client.status(batch.id)
                batch.status, batch.done = status.status, status.completed + status.failed
                if self.on_status:
                    self.on_status(batch)
                if status.done:
                    self._finish(batch, status)
                batch.misses = 0
            except Exception as exc:  # noqa: BLE001 - this batch's failure alone
                batch.misses += 1
                logger.warning("batch %s: %s", batch.id, exc)
                if batch.misses >= LOOKS:
                    self._lose(batch, exc)

    def _finish(self, batch: Batch, status: Status) -> None:
        answers = batch.client.results(status)
        if status.status == "failed" and not answers:  # refused whole: no line was answered
            message = f"the batch failed at the provider: {status.errors}"
            answers = {cid: unsent(message, final=False) for cid in batch.keys}
        if self.log is not None:
            self.log.ended(batch.id, status.status)
        with self._cond:
            del self._in_flight[batch.id]
            for cid, key in batch.keys.items():
                answer = answers.get(cid) or {
                    "error": {"code": "batch_missing", "message": "not in the batch's output"}
                }
                line = batch.lines.get(cid)
                if line is None:
                    if (answer.get("error") or {}).get("code") not in RESUBMIT and _ok(answer):
                        self._answered[key].append(answer)
                    continue
                line.answer = answer
                self.waiting -= 1
                line.ready.set()
            self._cond.notify_all()

    def _fail(self, lines: list[Line], answer: dict[str, Any]) -> None:
        """``lines`` get ``answer`` (:func:`unsent`) and wake."""
        with self._cond:
            for line in lines:
                if not line.ready.is_set():
                    line.answer = answer
                    self.waiting -= 1
                    line.ready.set()
            self._cond.notify_all()

    def _lose(self, batch: Batch, exc: Exception) -> None:
        """A batch that could not be looked at :data:`LOOKS` times: its lines fail, it stays recorded as not ended."""
        with self._cond:
            self._in_flight.pop(batch.id, None)
        message = f"batch {batch.id} could not be followed ({exc}): a resume collects it"
        self._fail(list(batch.lines.values()), unsent(message, final=True))

    def _unrecorded(self, batch: Batch, exc: Exception) -> None:
        """A batch accepted but not recorded: cancel it, fail its lines, and submit nothing more."""
        self._broken = f"batch mode stopped: batch {batch.id} could not be recorded ({exc})"
        logger.warning("%s: cancelling it", self._broken)
        try:
            batch.client.cancel(batch.id)
        except Exception as cancel_exc:  # noqa: BLE001 - the line above already names the batch
            logger.warning("batch %s: cancel failed: %s", batch.id, cancel_exc)
        with self._cond:
            self.submitted.append((batch.id, len(batch.lines)))
            pending = list(self._pending)
            self._pending.clear()
        self._fail(list(batch.lines.values()) + pending, unsent(self._broken, final=True))

    # ----- resume and close

    def reattach(self, client: BatchClient, records: list[dict[str, Any]]) -> int:
        """Follow the recorded batches: lines of the same requests wait on them instead of going out again."""
        n = 0
        for record in records:
            batch = Batch(record["id"], client, record.get("model", ""), int(record.get("round", 0)), {},
                          dict(record["lines"]), "in_progress")  # fmt: skip
            with self._cond:
                self.rounds = max(self.rounds, batch.round)  # a resume's rounds go on from the recorded ones
                self._in_flight[batch.id] = batch
                for cid, key in batch.keys.items():
                    self._recorded[key].append((batch.id, cid))
            n += 1
        if n:
            with self._cond:
                self._start()
                self._cond.notify_all()
        return n

    def withhold(self, keys: Sequence[str], why: str) -> None:
        """Requests that may be in a batch no one can find: asked in this session, they fail with ``why``, unsent."""
        with self._cond:
            for key in keys:
                self._withheld[key] = why

    def in_flight(self) -> list[Batch]:
        """The batches submitted and not yet ended."""
        with self._cond:
            return list(self._in_flight.values())

    def close(self) -> None:
        """Stop the collector thread (batches in flight stay with the provider: they are recorded)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)


def _ok(answer: Mapping[str, Any]) -> bool:
    return int((answer.get("response") or {}).get("status_code") or 0) == 200
