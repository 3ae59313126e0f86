"""One write, many reads: which request goes first when several share a prefix the provider has not cached?

A provider's prompt cache serves a prefix only once a first request with it has been processed
(OpenAI's automatic cache and Anthropic's ``cache_control`` alike, SPEC §18): requests that share
a new prefix and go out at once all miss, and on Anthropic each pays the write premium. So here
the first request of a new shared prefix goes alone and its siblings wait for its answer, then
read the prefix at the cache price:

* a case's roles under the cache layout (:mod:`courtroom.models._layout`): every request for the
  case starts with the preamble and the case; a role's requests also share its own message;
* k samples of one prompt where the model takes no ``n`` (Anthropic): one write, k - 1 reads.

A request names the prefixes it would write (:func:`sharing`, set by the program for each call);
:data:`GATE` lets it go at once when every one is cached or free, and otherwise makes it wait for
the request writing one of them. The wait adds one request to a case's critical path, once: its
later requests find the prefix cached. A prefix counts as cached for the provider's lifetime
(Anthropic's 5 minutes live, refreshed by each read; its 1-hour cache for batches,
:mod:`courtroom.models._anthropic_engine`), a little less to be safe. In batch mode a waiting
request counts as idle, so the batch holding the first one goes out; its siblings go in the next
batch and read what it wrote.
"""

from __future__ import annotations

import contextlib
import contextvars
import hashlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from courtroom import _stop

LIVE_SECONDS, BATCH_SECONDS = 270.0, 3300.0
"""How long a written prefix counts as cached: under Anthropic's 5 minutes live and its 1 hour in
batches (OpenAI keeps a prefix 5-10 minutes, an hour off-peak)."""
KEEP = 20_000
"""Prefixes remembered at most (the oldest forgotten first): a forgotten one is written again."""

_sharing: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("courtroom_sharing", default=())


@contextlib.contextmanager
def sharing(keys: Sequence[str]) -> Iterator[None]:
    """While inside, a request sent here would write the prefixes ``keys`` (shortest first)."""
    token = _sharing.set(tuple(keys))
    try:
        yield
    finally:
        _sharing.reset(token)


def current() -> tuple[str, ...]:
    """The prefixes the request about to be sent would write (:func:`sharing`)."""
    return _sharing.get()


def prefix_key(*parts: str) -> str:
    """A short key for a prefix made of ``parts`` (never the text itself)."""
    digest = hashlib.sha256()
    for part in parts:
        digest.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return digest.hexdigest()[:32]


class PrefixGate:
    """The first request of each new prefix goes alone; a request sharing it waits for that one's answer."""

    def __init__(self) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self._writing: dict[str, threading.Event] = {}
        self._cached: dict[str, float] = {}  # key -> when it stops counting as cached
        self._idle: dict[threading.Event, list[_Idle]] = {}  # a write's waiters, idle until it ends
        self.waits = 0
        """Requests that waited for a sibling's write (tests and the bench read it)."""

    def _fresh(self, keys: Sequence[str], now: float) -> list[str]:
        """The keys not known to be cached (hold ``_lock``)."""
        return [k for k in keys if self._cached.get(k, 0.0) <= now]

    @contextlib.contextmanager
    def first(
        self, keys: Sequence[str], *, lifetime: float = LIVE_SECONDS, idle: Callable[[], Any] | None = None
    ) -> Iterator[None]:
        """Send the enclosed request once none of ``keys`` is being written by another; then record them cached.

        ``idle``: a context manager factory marking this thread as waiting (a batch collector's).
        A request that failed records nothing: a waiting sibling then goes first in its place.
        """
        if not keys:
            yield
            return
        while True:
            with self._lock:
                now = time.monotonic()
                fresh = self._fresh(keys, now)
                busy = next((self._writing[k] for k in fresh if k in self._writing), None)
                if busy is None:
                    mine = threading.Event()
                    for k in fresh:
                        self._writing[k] = mine
                    for k in keys:
                        if k not in fresh:  # read now: the provider keeps it longer
                            self._cached[k] = now + lifetime
                    break
                self.waits += 1
                waiting = _Idle(idle)
                self._idle.setdefault(busy, []).append(waiting)
            try:
                while not busy.wait(0.2):
                    if _stop.stop_requested():
                        raise _stop.Stopped(f"stopped: no request after the stop ({_stop.stop_text()})")
            finally:
                waiting.end()
                with self._lock:  # registered after the write ended: no entry left behind
                    left = self._idle.get(busy)
                    if left is not None and waiting in left:
                        left.remove(waiting)
                        if not left:
                            del self._idle[busy]
        answered = False
        try:
            yield
            answered = True
        finally:
            with self._lock:
                until = time.monotonic() + lifetime
                for k in fresh:
                    if self._writing.get(k) is mine:
                        del self._writing[k]
                    if answered:
                        self._cached[k] = until
                while len(self._cached) > KEEP:
                    del self._cached[next(iter(self._cached))]
                waiters = self._idle.pop(mine, [])
            # The waiters stop counting as idle before this thread goes on: a batch collector must not
            # see every case waiting (and send a batch) in the instant before they wake.
            for waiting in waiters:
                waiting.end()
            mine.set()

    def forget(self) -> None:
        """Forget every prefix (tests: a fresh provider cache)."""
        with self._lock:
            self._cached.clear()


class _Idle:
    """A waiter's idle mark (a batch collector's ``idle()``): entered now, ended once, by whichever thread first."""

    def __init__(self, idle: Callable[[], Any] | None) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self._mark = idle() if idle is not None else None
        if self._mark is not None:
            self._mark.__enter__()

    def end(self) -> None:
        with self._lock:
            mark, self._mark = self._mark, None
        if mark is not None:
            mark.__exit__(None, None, None)


GATE = PrefixGate()
"""The process's gate: prefixes are the provider's, shared by every run in the process."""
