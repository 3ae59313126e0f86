"""Run a program over examples concurrently; every example yields a result, failures included.

Scoring stays pure (:mod:`courtroom.eval.metrics`); writing run folders is :mod:`courtroom.runner.runs`.
"""

from __future__ import annotations

import contextlib
import contextvars
import queue
import threading
import time
import traceback
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

import dspy
from dspy.dsp.utils.settings import thread_local_overrides

from courtroom.analysis.calibration import confidence
from courtroom.eval.metrics import active, right
from courtroom.eval.tally import Tally, add_usage
from courtroom.models import batch
from courtroom.models._breaker import Unreachable, converted
from courtroom.models._concurrency import bounded_requests, fit_open_files
from courtroom.models._requests import OverBudget
from courtroom.models.usage import Usage, metered
from courtroom.transcript import Turn


@dataclass
class ExampleResult:
    """One example's outcome: one JSONL line of a run folder."""

    id: str
    """The example's id in its task (or its row in your dataset)."""
    input: str
    """The case text the program heard."""
    gold: str
    """The correct label."""
    prediction: str | None
    """The label, or None when the example failed."""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """Each turn in order: ``role``, ``round``, ``text`` (and for a judge its ``decision``)."""
    usage: dict[str, Any] = field(default_factory=dict)
    """The example's LM calls and tokens (``calls``, ``sent``, ``cached``, ``prompt_tokens``, ...), per model too."""
    error: str | None = None
    """``Type: message`` of the failure, if any."""
    fields: dict[str, Any] = field(default_factory=dict)
    """Framework-specific outputs (votes, probabilities, reliabilities, ...)."""
    seconds: float = 0.0
    """Wall seconds the example took."""
    confidence: float | None = None
    """The probability the framework's output gives its prediction (vote share, final probability), if any."""
    score: float | None = None
    """The value of ``--metric`` on this case (a failure: 0); None when scored by the label match alone."""

    @property
    def correct(self) -> bool:
        """Whether the prediction equals the gold label (under ``--metric``: its value is at least 0.5)."""
        return right(self)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (its lists and dicts are copies, one level deep); ``score`` only when scored.

        Not ``dataclasses.asdict``: its deep copy of every transcript cost ~1 ms per example, three
        times per example (the run folder, calibration, bias), on a run's critical path.
        """
        out = {name: _shallow(getattr(self, name)) for name in _FIELDS}
        if out["score"] is None:
            del out["score"]
        return out


_FIELDS = tuple(f.name for f in fields(ExampleResult))


def _shallow(value: Any) -> Any:
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def _jsonable(value: Any) -> Any:
    if isinstance(value, Turn):
        return value.to_dict()
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return repr(value)


def run_example(program: dspy.Module, example: dspy.Example) -> ExampleResult:
    """Run one example; any exception becomes a recorded failure, never a label.

    Its LM calls stay out of DSPy's call history (``dspy.inspect_history``, ``lm.history``): the
    result's transcript and usage are their record, and the history kept ~5.5 KB a call, up to
    10,000 calls in each of four lists (issue 44). Its predictions stay out of DSPy's trace too,
    unless a caller collects one (``dspy.context(trace=[])``, as an optimizer does): by default
    every call appends its inputs and prediction to one list for the whole process (up to 10,000).
    """
    start = time.perf_counter()
    untraced = {} if "trace" in thread_local_overrides.get() else {"trace": None}
    chosen, score = active(), None
    with metered() as meter, dspy.context(disable_history=True, **untraced):
        try:
            pred = program(case=example.case)
            error, label = None, pred.label
            fields = {k: _jsonable(v) for k, v in pred.items() if k not in ("label", "transcript")}
            transcript = [_jsonable(t) for t in pred.transcript]
        except Exception as exc:  # noqa: BLE001 - every failure is recorded for this example
            error, label, fields, transcript = _describe(exc), None, {}, []
    if chosen is not None:  # a failed case scores 0, as it counts as wrong
        score = 0.0 if label is None else chosen.value(example, pred)
    return ExampleResult(
        id=str(example.id),
        input=example.case,
        gold=example.label,
        prediction=label,
        transcript=transcript,
        usage=meter.usage.to_dict(),
        error=error,
        fields=fields,
        seconds=round(time.perf_counter() - start, 4),
        confidence=confidence(label, fields),
        score=score,
    )


def _describe(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    head = text[0][:300] if text else ""
    where = traceback.extract_tb(exc.__traceback__)[-1:] if exc.__traceback__ else []
    suffix = f" (at {where[0].name})" if where else ""
    return f"{type(exc).__name__}: {head}{suffix}"


def evaluate(
    program: dspy.Module,
    examples: Sequence[dspy.Example],
    *,
    concurrency: int = 4,
    on_result: Callable[[ExampleResult], None] | None = None,
    max_in_flight: int | None = None,
    budget: Any = None,
    keep: bool = True,
) -> list[ExampleResult]:
    """Run ``program`` on every example, ``concurrency`` at a time; results keep the input order.

    At most ``max_in_flight`` LM requests (default: ``concurrency``) are open at once, however
    much a framework fans out; inside an outer :func:`~courtroom.models._concurrency.bounded_requests`
    (a compile, a study) the outer bound holds instead, so nested evaluations do not multiply
    it. Each example runs in a copy of the caller's context, so
    ``dspy.context`` settings apply. ``on_result`` is called (from this thread) as each example
    finishes: progress, checkpoints. If it raises (or on Ctrl-C), examples not yet started are
    cancelled, the ones in flight finish (so their LM answers reach the cache), and the error
    propagates: a resumed run then gets those calls for free.

    Examples are queued :data:`AHEAD` times ``concurrency`` at a time, not all at once: each queued
    one holds a copy of the context and its call, so memory does not grow with the examples.

    With a :class:`courtroom.cost.budget.Budget`, an example starts only if the budget admits
    it; examples it refuses are left out of the returned list (``budget.stopped`` is then set).
    """
    concurrency = fit_open_files(concurrency)  # ulimit -n: lowered (said once) rather than every example failing
    results: dict[int, ExampleResult] = {}
    futures: dict[Any, int] = {}
    in_callback = False
    if batch.current() is not None:
        concurrency = max(1, len(examples))  # every case asks at once: each round is one batch
    workers: list[int] = []
    pool = ThreadPoolExecutor(
        max_workers=max(1, concurrency), thread_name_prefix="courtroom-eval", initializer=workers.append, initargs=(1,)
    )
    with bounded_requests(max_in_flight or concurrency), batch.forked(len(examples)) as leave:
        finished: queue.SimpleQueue[Any] = queue.SimpleQueue()  # futures, in the order they finish
        upcoming = iter(enumerate(examples))

        def submit_next() -> None:
            nxt = next(upcoming, None)
            if nxt is not None:
                fut = pool.submit(contextvars.copy_context().run, _leaving, leave, budget, program, nxt[1])
                futures[fut] = nxt[0]
                fut.add_done_callback(finished.put)

        try:
            for _ in range(AHEAD * max(1, concurrency)):  # one by one: a stop while submitting cancels those in
                submit_next()
            while futures:
                fut = finished.get()
                i = futures.pop(fut)  # a finished future holds its result: not kept past here
                submit_next()
                res = fut.result()
                if res is None:
                    continue
                if keep:
                    results[i] = res
                if on_result:
                    in_callback = True
                    on_result(res)
                    in_callback = False
        except BaseException as exc:
            for fut in futures:
                fut.cancel()  # examples not yet started; the ones in flight finish
            _close_caches(pool, len(workers))
            pool.shutdown(wait=True)
            if not in_callback:
                # A stop (signal) while waiting: examples that finished during the wait are kept too.
                _drain(futures, results if keep else None, on_result)
            if isinstance(exc, Unreachable):
                raise converted(exc) from exc
            raise
        _close_caches(pool, len(workers))
        pool.shutdown(wait=True)
    return [results[i] for i in range(len(examples)) if i in results]


AHEAD = 2
"""Examples queued per worker: enough that a worker never waits for the next while the main thread
hands a result over. Queued all at once, 100,000 examples held ~2 KB each (their context copies)."""


def _close_caches(pool: ThreadPoolExecutor, threads: int) -> None:
    """Close each of the pool's ``threads`` connections to the disk cache, in the thread that opened them.

    A worker keeps its connections for :data:`REOPEN_EVERY` examples; they must be closed before
    the threads end, or each leaves its files open (SQLite connections belong to their thread).
    A barrier of one task per thread makes every thread take exactly one.
    """
    from courtroom.models.cache import close_thread_cache

    barrier = threading.Barrier(threads) if threads else None

    def close() -> None:
        try:
            barrier.wait(timeout=60) if barrier is not None else None
        except threading.BrokenBarrierError:
            pass
        close_thread_cache()

    for _ in range(threads):
        pool.submit(close)


def _drain(futures: dict[Any, int], results: dict[int, ExampleResult] | None, on_result: Any) -> None:
    """Hand ``on_result`` the examples that finished but were not yet handed over (best effort).

    ``futures`` holds only those not handed over (each is taken out as it is); ``results``, when
    kept, gets them too.
    """
    for fut, i in futures.items():
        if not fut.done() or fut.cancelled() or fut.exception() is not None:
            continue
        res = fut.result()
        if res is None:
            continue
        if results is not None:
            results[i] = res
        if on_result:
            try:
                on_result(res)
            except Exception:  # noqa: BLE001 - the stop that is propagating matters more
                return


REOPEN_EVERY = 4
"""Examples a worker runs before it reopens its cache connections. Each connection keeps its own
page cache of the shard it reads and writes: kept for a whole run of 3,000 calls at concurrency
64, they grew the process by ~25 KB a call; reopened every 16 examples the run grew 8.4 KB a
call, every 4 examples 5.9 KB (bench/scale.py). Reopening after every example cost ~0.6 ms of
CPU each (a fifth of a call's)."""

_worker = threading.local()


def _leaving(leave: Callable[[], None], budget: Any, program: dspy.Module, example: dspy.Example) -> Any:
    try:
        return _budgeted(budget, program, example)
    finally:
        leave()
        _worker.examples = getattr(_worker, "examples", 0) + 1
        if _worker.examples % REOPEN_EVERY == 0:
            from courtroom.models.cache import close_thread_cache

            close_thread_cache()


def _budgeted(budget: Any, program: dspy.Module, example: dspy.Example) -> ExampleResult | None:
    """``run_example`` if the budget (if any) admits one more example, else None."""
    return _admitted(budget, program, example)


def _admitted(budget: Any, program: dspy.Module, example: dspy.Example) -> ExampleResult | None:
    if budget is None:
        return run_example(program, example)
    collector = batch.current()
    with collector.idle() if collector is not None else contextlib.nullcontext():
        admitted = budget.admit()  # may wait for the first example's cost: in batch mode, as a waiting request
    if not admitted:
        return None
    try:
        res = run_example(program, example)
    except OverBudget:
        budget.settle(None)  # a request was refused: no result; a resume runs the example
        return None
    except BaseException:
        budget.settle(None)
        raise
    budget.settle(res.usage)
    return res


def total_usage(results: Iterable[ExampleResult]) -> Usage:
    """Usage summed over results."""
    total = Usage()
    for r in results:
        add_usage(total, r.usage)
    return total


def summarize(results: list[ExampleResult], labels: Any, wall: float, prices: Any = None) -> dict[str, Any]:
    """Scores, failures, calls, tokens, cost, wall time, calibration (Brier, ECE) and bias of a list of results.

    Bias (:mod:`courtroom.analysis.bias`): the position-consistency rate of a swapped
    run, and how often the verdict went to the longer argument where a framework has arguments.

    Cost uses LiteLLM's price for models it knows, else ``prices`` (model -> per-1M-token
    input and output dollars); it is None when no model has a price. Tokens and cost count sent
    calls only (``tokens_counted``): a call answered from the cache, such as one replayed by a
    resume, adds none. It is a :class:`~courtroom.eval.tally.Tally` fed in order; a run tallies its
    results as they arrive instead of holding them.
    """
    tally = Tally(labels)
    for position, r in enumerate(results):
        tally.add(r, position)
    return tally.summary(wall, prices)
