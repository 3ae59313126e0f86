"""Run independent calls of one decision concurrently, keeping DSPy settings and our context."""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

T = TypeVar("T")

serial: contextvars.ContextVar[bool] = contextvars.ContextVar("courtroom_serial", default=False)
"""When set, :func:`run_parallel` calls the thunks one after another (dry runs count calls in-process,
where a thread per call would cost more than the calls)."""


def run_parallel(thunks: Sequence[Callable[[], T]]) -> list[T]:
    """Call each thunk in its own thread (each with a copy of the caller's context); keep order.

    ``dspy.context`` overrides, the current role and the usage meter are context variables, so
    copying the context carries them into the workers. The first exception is re-raised after
    all calls finish, so no call is left running in the background.
    """
    if len(thunks) <= 1 or serial.get():
        return [t() for t in thunks]
    with ThreadPoolExecutor(max_workers=len(thunks), thread_name_prefix="courtroom") as pool:
        futures = [pool.submit(contextvars.copy_context().run, t) for t in thunks]
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
