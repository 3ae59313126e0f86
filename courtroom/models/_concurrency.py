"""Concurrency: the calls of one decision in parallel, and the process-wide bound on requests."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

from dspy.utils.callback import BaseCallback

T = TypeVar("T")
logger = logging.getLogger(__name__)

serial: contextvars.ContextVar[bool] = contextvars.ContextVar("courtroom_serial", default=False)
"""When set, :func:`run_parallel` calls the thunks one after another (dry runs count calls in-process,
where a thread per call would cost more than the calls)."""


depth: contextvars.ContextVar[list[int] | None] = contextvars.ContextVar("courtroom_depth", default=None)
"""In a dry run's count, the rounds of calls so far on this path (a one-item list the counter
increments): run serially, parallel thunks each start at the same depth and the caller goes on
from the deepest, so a case's depth is its critical path (the batches ``--batch`` sends)."""


def run_parallel(thunks: Sequence[Callable[[], T]]) -> list[T]:
    """Call each thunk in its own thread (each with a copy of the caller's context); keep order.

    ``dspy.context`` overrides, the current role and the usage meter are context variables, so
    copying the context carries them into the workers. The first exception is re-raised after
    all calls finish, so no call is left running in the background.
    """
    if len(thunks) <= 1 or serial.get():
        rounds = depth.get()
        if rounds is None or len(thunks) <= 1:
            return [t() for t in thunks]
        start, ends, out = rounds[0], [], []
        for t in thunks:
            rounds[0] = start
            out.append(t())
            ends.append(rounds[0])
        rounds[0] = max(ends)
        return out
    from courtroom.models.batch import forked

    with (
        forked(len(thunks)) as leave,
        ThreadPoolExecutor(max_workers=len(thunks), thread_name_prefix="courtroom") as pool,
    ):
        futures = [pool.submit(contextvars.copy_context().run, _leaving, t, leave) for t in thunks]
        errors: list[BaseException] = []
        results: list[Any] = []
        for f in futures:
            try:
                results.append(f.result())
            except BaseException as exc:  # noqa: BLE001 - re-raised below
                errors.append(exc)
    if errors:
        raise errors[0]
    return results


def _leaving(thunk: Callable[[], T], leave: Callable[[], None]) -> T:
    """``thunk()``, then ``leave()`` (batch mode counts live threads), then close this thread's cache files."""
    from courtroom.models.cache import close_thread_cache

    try:
        return thunk()
    finally:
        leave()
        close_thread_cache()


class Slots:
    """``limit`` slots, handed out in the order they were asked for (a fair semaphore).

    A plain semaphore lets a thread that releases a slot and asks again at once (a decision
    going on to its next call) take it back before the waiter it woke has run, and the waiter
    goes to the back of the queue: decisions that happen to hold the interpreter run ahead and
    others' requests wait. Here ``release`` hands the slot straight to the longest waiter.
    """

    def __init__(self, limit: int) -> None:  # noqa: D107
        self.limit = limit
        self._free = limit
        self._lock = threading.Lock()
        self._waiting: deque[threading.Lock] = deque()

    @property
    def waiting(self) -> int:
        """Callers blocked in :meth:`acquire`."""
        return len(self._waiting)

    def acquire(self) -> None:
        """Take a slot, waiting behind everyone who asked before."""
        with self._lock:
            if self._free and not self._waiting:
                self._free -= 1
                return
            gate = threading.Lock()
            gate.acquire()
            self._waiting.append(gate)
        try:
            gate.acquire()  # released by release(), which hands this caller its slot
        except BaseException:  # Ctrl-C while waiting: give up the place, or the slot if it came
            with self._lock:
                if gate in self._waiting:
                    self._waiting.remove(gate)
                    raise
            self.release()
            raise

    def release(self) -> None:
        """Give a slot back: to the longest waiter, if any."""
        with self._lock:
            if self._waiting:
                self._waiting.popleft().release()
                return
            if self._free >= self.limit:
                raise ValueError("Slots released too many times")
            self._free += 1


class RequestLimit(BaseCallback):
    """The process-wide bound on LM requests in flight: a DSPy callback on every model we call.

    It sits in each LM's own ``callbacks`` list (not in ``dspy.context``), so it applies in
    every thread: our pools, DSPy's optimizer threads and Optuna's trial threads, which do not
    inherit context overrides. A slot is held for the whole call, retries included; slots go to
    calls in the order they asked (:class:`Slots`). Without an active :func:`bounded_requests`
    it lets everything through.
    """

    def __init__(self) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self._slots: Slots | None = None
        self._users = 0
        self._held: dict[str, Slots] = {}
        self.limit: int | None = None
        self.listeners: list[Any] = []
        """Callbacks told of every LM call's end (a progress display's counter, :func:`counting_calls`)."""

    def __deepcopy__(self, memo: dict[int, Any]) -> RequestLimit:
        return self  # LM copies (salted repeats, optimizer deep copies) share the one bound

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:  # noqa: D102
        slots = self._slots
        if slots is None or _batching():
            return  # in batch mode a request waits for its batch, holding no connection
        slots.acquire()
        with self._lock:
            self._held[call_id] = slots

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:  # noqa: D102
        with self._lock:
            slots = self._held.pop(call_id, None)
        if slots is not None:
            slots.release()
        for listener in self.listeners:
            listener.on_lm_end(call_id=call_id, outputs=outputs, exception=exception)


@contextlib.contextmanager
def counting_calls(callback: Any) -> Iterator[None]:
    """While inside, ``callback.on_lm_end`` hears the end of every LM call of the process.

    Not a callback in ``dspy.settings``: DSPy runs those around every module, adapter, format
    and parse call too (each reading its arguments with ``inspect.getcallargs``), about a tenth
    of a call's CPU for one counter that only needs the LM calls' ends (issue 44).
    """
    REQUESTS.listeners = [*REQUESTS.listeners, callback]
    try:
        yield
    finally:
        REQUESTS.listeners = [c for c in REQUESTS.listeners if c is not callback]


def _batching() -> bool:
    from courtroom.models.batch import current

    return current() is not None


REQUESTS = RequestLimit()


@contextlib.contextmanager
def bounded_requests(limit: int) -> Iterator[None]:
    """At most ``limit`` LM requests in flight in this process while inside.

    The outermost use sets the bound; nested or concurrent uses (an evaluation inside a compile,
    the trials of a study) share it instead of adding their own.
    """
    with REQUESTS._lock:
        if REQUESTS._users == 0:
            REQUESTS.limit = max(1, int(limit))
            REQUESTS._slots = Slots(REQUESTS.limit)
        REQUESTS._users += 1
    try:
        yield
    finally:
        with REQUESTS._lock:
            REQUESTS._users -= 1
            if REQUESTS._users == 0:
                REQUESTS._slots, REQUESTS.limit = None, None


def limit_requests(lm: Any) -> Any:
    """Put ``lm`` under the process-wide bound and courtroom's retries (idempotent); returns ``lm``."""
    from courtroom.models._requests import own_retries

    if getattr(lm, "rehearsal", False):
        return lm  # a model that renders prompts and sends nothing: no request to bound, count or budget
    own_retries(lm)
    callbacks = getattr(lm, "callbacks", None)
    if isinstance(callbacks, list) and REQUESTS not in callbacks:
        lm.callbacks = [*callbacks, REQUESTS]
    return lm


FDS_BASE, FDS_PER_REQUEST = 80, 24
"""Open files a command needs: about 40, plus 24 per concurrent example (its threads' sockets and
their connections to the cache's shards). Measured with jot on the fake server: 64 are enough for
``--concurrency 1``, 384 for 16; at ``ulimit -n 64`` and 16, every example failed."""

_fitted: set[tuple[int, int]] = set()


def fit_open_files(concurrency: int) -> int:
    """``concurrency``, or less when ``ulimit -n`` cannot hold its open files (said once, on stderr).

    The soft limit is raised towards the hard one first; a limit too low for one example at a
    time is refused. Checked before any request, so no example fails with "Too many open files".
    """
    import resource

    from courtroom.errors import ConfigError

    need = FDS_BASE + FDS_PER_REQUEST * concurrency
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= need:
        return concurrency
    target = need if hard == resource.RLIM_INFINITY else min(need, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        soft = target
    except (ValueError, OSError):
        pass
    if soft >= need:
        return concurrency
    fitted = (soft - FDS_BASE) // FDS_PER_REQUEST
    if fitted < 1:
        raise ConfigError(
            f"only {soft} open files are allowed (ulimit -n): courtroom needs {FDS_BASE + FDS_PER_REQUEST} "
            f"for one example at a time; raise the limit, e.g. ulimit -n {need}"
        )
    if (concurrency, soft) not in _fitted:
        _fitted.add((concurrency, soft))
        logger.warning(
            "--concurrency %d needs about %d open files but ulimit -n allows %d: running %d at a time "
            "(raise the limit, e.g. ulimit -n %d, for %d)",
            concurrency, need, soft, fitted, need, concurrency,
        )  # fmt: skip
    return fitted
