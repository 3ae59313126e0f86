"""Courtroom owns retries: every request that reaches the wire is one call, counted and bounded.

DSPy retries a failed request inside one LM call (``num_retries``), so a 429 retried three
times was one call to every counter above it: budgets, meters and summaries saw fewer requests
than the server. Here every model courtroom uses gets ``num_retries=0`` and a
``courtroom_retries`` count of its own (:func:`own_retries`), and DSPy's ``execute`` is wrapped
once (at import) so that, for such models, each attempt is a request of its own:

* before it goes out, the active budget (:func:`gated`) reserves it, or refuses it with
  :class:`~courtroom.cost.budget.OverBudget` (a cache hit is never refused: it costs nothing);
* a failed attempt (429, 5xx, time-out, connection error) is counted as a sent request by the
  current meter and the process's :data:`WIRE` tally; a successful one by DSPy's own usage
  report, as before;
* identical requests at once (the same cache key: two trials' same cache miss) go out once
  (:class:`InFlight`): the others wait for its answer and read it from the cache;
* requests that share a prefix the provider has not cached yet (a case's roles in the cache
  layout; samples of one prompt on a model without ``n``) go first one, then the rest
  (:mod:`courtroom.models._prefix`), so one cache write serves their reads;
* a retryable failure waits (the server's ``Retry-After``, else ``COURTROOM_RETRY_WAIT`` x 2^attempt
  seconds, at most 60) and tries again, unless a stop (Ctrl-C, SIGTERM) was requested.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import dspy
from dspy.clients import execution
from dspy.utils.exceptions import LMProviderError, LMTransportError, is_retryable_lm_error

from courtroom import _stop
from courtroom.models import _prefix, batch, sampling
from courtroom.models._breaker import BREAKER

DEFAULT_RETRIES = 3
"""Retries of a failed request (429, 5xx, time-out, connection error) for models courtroom builds."""


def retry_wait() -> float:
    """Base seconds between retries (``COURTROOM_RETRY_WAIT``, default 1): attempt n waits base x 2^n."""
    from courtroom._env import env_seconds

    return env_seconds("COURTROOM_RETRY_WAIT", 1.0, strict=False)


class Tally:
    """Requests that reached the wire in this process, with their tokens per model (thread-safe)."""

    def __init__(self) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self.sent = 0
        self.by_model: dict[str, dict[str, int]] = {}
        self.journals: tuple[Callable[[str, int, int, int, int], None], ...] = ()
        """Durable records each request is also written to, as it is counted: one per run session
        in progress (:class:`courtroom.runner.sessions.RequestLog`), so a kill loses no count."""

    def add(self, model: str, usage: Mapping[str, Any] | None) -> None:
        """One request of ``model``; ``usage`` its tokens (None: it failed, no tokens), checked at the door.

        The provider's cache reads and writes count too (``cache_read_tokens``, ``cache_write_tokens``,
        where any): the summary's dollars are priced from these (:func:`courtroom.cost.bill.dollars`).
        """
        from courtroom.cost.bill import CACHE_KEYS, counts

        prompt, completion, read, write = counts(usage)
        with self._lock:
            self.sent += 1
            m = self.by_model.setdefault(model, {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
            m["sent"] += 1
            m["prompt_tokens"] += prompt
            m["completion_tokens"] += completion
            for key, value in zip(CACHE_KEYS, (read, write), strict=True):
                if value:
                    m[key] = m.get(key, 0) + value
        for journal in self.journals:
            journal(model, prompt, completion, read, write)

    def snapshot(self) -> dict[str, Any]:
        """The counts so far, in ``Usage.to_dict()`` shape (``sent``, tokens, ``by_model``)."""
        with self._lock:
            by_model = {k: dict(v) for k, v in self.by_model.items()}
        return {
            "sent": sum(v["sent"] for v in by_model.values()),
            "prompt_tokens": sum(v["prompt_tokens"] for v in by_model.values()),
            "completion_tokens": sum(v["completion_tokens"] for v in by_model.values()),
            "by_model": by_model,
        }


WIRE = Tally()
"""Every request this process sent to a model server (sessions record what they added)."""


def since(before: Mapping[str, Any]) -> dict[str, Any]:
    """What :data:`WIRE` counted after the snapshot ``before``."""
    now = WIRE.snapshot()
    by_model = {}
    for model, counts in now["by_model"].items():
        old = (before.get("by_model") or {}).get(model, {})
        diff = {k: v - int(old.get(k, 0)) for k, v in counts.items()}
        if diff["sent"]:
            by_model[model] = diff
    return {
        "sent": sum(v["sent"] for v in by_model.values()),
        "prompt_tokens": sum(v["prompt_tokens"] for v in by_model.values()),
        "completion_tokens": sum(v["completion_tokens"] for v in by_model.values()),
        "by_model": by_model,
    }


class OverBudget(BaseException):  # noqa: N818 - an outcome, like KeyboardInterrupt
    """A request refused by the budget: the unit (example) it belongs to ends without a result.

    A ``BaseException``, so that no ``except Exception`` on the way records it as the example's
    failure: the example has no result, and a resume (with a larger budget) runs it.
    """


_gates: list[Any] = []
_gates_lock = threading.Lock()


@contextlib.contextmanager
def gated(budget: Any) -> Iterator[None]:
    """While inside, every request is reserved from ``budget`` before it is sent (process-wide).

    ``budget`` has ``reserve(lm, call) -> ticket`` (raising to refuse) and ``release(ticket, usage)``
    (:class:`courtroom.cost.budget.Budget`). Nested uses of the same budget count once.
    """
    with _gates_lock:
        _gates.append(budget)
    try:
        yield
    finally:
        with _gates_lock:
            _gates.remove(budget)


def _gate() -> Any:
    return _gates[-1] if _gates else None


def own_retries(lm: Any) -> Any:
    """Take over ``lm``'s retries: DSPy's ``num_retries`` moves to ``courtroom_retries`` (idempotent)."""
    if getattr(lm, "courtroom_retries", None) is None and isinstance(getattr(lm, "num_retries", None), int):
        lm.courtroom_retries = lm.num_retries
        lm.num_retries = 0
    return lm


def _reached_wire(exc: BaseException) -> bool:
    """Whether a failed attempt was a request (a provider answered, or the connection was used).

    A batch line the provider never answered (its batch not accepted, refused whole, or lost
    from sight: ``unsent``) was not.
    """
    return isinstance(exc, LMProviderError | LMTransportError) and not getattr(exc, "unsent", False)


def _delay(exc: BaseException, attempt: int) -> float:
    hint = getattr(exc, "retry_after", None)
    try:
        if hint is not None and float(hint) >= 0:
            return min(float(hint), 60.0)
    except (TypeError, ValueError):
        pass
    return min(retry_wait() * 2**attempt, 60.0)


def _count_failed(lm: Any) -> None:
    import dspy

    WIRE.add(str(lm.model), None)
    tracker = dspy.settings.usage_tracker
    count = getattr(tracker, "count_failed_request", None) if tracker is not None else None
    if count:
        count(str(lm.model))


class InFlight:
    """Identical live requests at once (two trials' same cache miss): the first goes out, the others read its answer.

    Each cache key has at most one request in flight in this process; an identical call waits
    for it, then reads the cache (a hit, as if it had come a moment later). If the first fails,
    the waiter sends its own.
    """

    def __init__(self) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self._leaders: dict[str, threading.Event] = {}

    @contextlib.contextmanager
    def leading(self, key: str) -> Iterator[bool]:
        """True to the first caller of ``key``; False, once that one has ended, to a caller that waited."""
        with self._lock:
            event = self._leaders.get(key)
            first = event is None
            if event is None:
                self._leaders[key] = event = threading.Event()
        if not first:
            while not event.wait(0.2) and not _stop.stop_requested():
                pass
            yield False
            return
        try:
            yield True
        finally:
            with self._lock:
                del self._leaders[key]
            event.set()


IN_FLIGHT = InFlight()

_original_execute = execution.execute


def _execute(lm: Any, call: Any) -> Any:
    """DSPy's ``execute`` for one LM call, with courtroom's retries, counts and budget."""
    retries = getattr(lm, "courtroom_retries", None)
    if retries is None:
        return _original_execute(lm, call)
    gate = _gate()
    group = sampling.current_group()
    if group is not None:
        # k samples of one prompt: the first call sends one request with n (courtroom.models.sampling).
        served = group.serve(lm, call, lambda send, n: _gated(lm, call, gate, retries, send, n))
        if served is not None:
            return served
    if gate is not None and (hit := execution._cached(lm, call, False)) is not None:
        return hit  # free: never refused by the budget
    collector = batch.current()
    if not call.cache:
        with _first_of_prefix(collector):
            return _attempts(lm, call, gate, retries)
    key = dspy.cache.cache_key(call.key(lm, False), execution.IGNORED_CACHE_KEYS)
    with (collector or IN_FLIGHT).leading(key) as first:
        if not first and (hit := execution._cached(lm, call, False)) is not None:
            return hit  # an identical request was answered meanwhile: a cache hit, as it is live
        with _first_of_prefix(collector):
            return _attempts(lm, call, gate, retries)


def _gated(lm: Any, call: Any, gate: Any, retries: int, send: Any, n: int) -> Any:
    """:func:`_attempts` of one request for ``n`` samples, after the prefix gate."""
    with _first_of_prefix(batch.current()):
        return _attempts(lm, call, gate, retries, send, n)


def _first_of_prefix(collector: Any) -> Any:
    """The prefix gate for the request about to go (:mod:`courtroom.models._prefix`).

    In batch mode a waiting request is idle and a prefix lives an hour (Anthropic's 1-hour cache
    for batches).
    """
    keys = _prefix.current()
    if not keys:
        return contextlib.nullcontext()
    if collector is None:
        return _prefix.GATE.first(keys)
    return _prefix.GATE.first(keys, lifetime=_prefix.BATCH_SECONDS, idle=collector.idle)


def _reserve(gate: Any, lm: Any, call: Any, n: int = 1) -> Any:
    """The budget's ticket for one request (None without a budget).

    In batch mode a request the budget holds back until another is answered counts as waiting,
    so the batch that answers the other one goes out.
    """
    if gate is None:
        return None
    collector = batch.current()
    with collector.idle() if collector is not None else contextlib.nullcontext():
        return gate.reserve(lm, call, n) if n > 1 else gate.reserve(lm, call)


def _attempts(lm: Any, call: Any, gate: Any, retries: int, send: Any = None, n: int = 1) -> Any:
    """Send ``call`` until it is answered or may not be retried (see the module docstring).

    ``send`` replaces DSPy's own sending (:func:`courtroom.models.sampling.send_n`: one request for
    ``n`` samples, returned as a list; the budget reserves one request with n answers).
    """
    for attempt in itertools.count():
        if attempt and _stop.stop_requested():
            raise _stop.Stopped(f"stopped: no retry after the stop ({_stop.stop_text()})")
        BREAKER.check()  # the first requests all failed alike: send nothing more
        ticket = _reserve(gate, lm, call, n)
        sending = getattr(lm, "sending", None)  # the embedded model: its timeout follows its speed
        try:
            with sending(call) if sending is not None else contextlib.nullcontext():
                result = send() if send is not None else _original_execute(lm, call)
        except Exception as exc:
            if gate is not None:
                gate.release(ticket, None)
            if _reached_wire(exc):
                _count_failed(lm)
                BREAKER.failure(str(lm.model), exc)
            if attempt >= retries or not is_retryable_lm_error(exc):
                raise
            if _stop.wait(_delay(exc, attempt)):
                raise _stop.Stopped(f"stopped: no retry after the stop ({_stop.stop_text()})") from exc
            continue
        except BaseException:
            if gate is not None:
                gate.release(ticket, None)
            raise
        hit = bool(getattr(result, "cache_hit", False))
        usage = sampling.usage_of(result)
        if gate is not None:
            gate.release(ticket, None if hit else usage, hit=hit)
        if not hit:
            WIRE.add(str(lm.model), usage)
            BREAKER.success()
        return result
    raise AssertionError("unreachable")


def install() -> None:
    """Wrap DSPy's ``execute`` (idempotent); ``BaseLM.__call__`` looks it up at each call."""
    if execution.execute is not _execute:
        execution.execute = _execute


install()
