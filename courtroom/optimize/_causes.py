"""Why did the optimizer stop? The first failure behind DSPy's "Execution cancelled" error.

DSPy's parallel evaluation (``dspy.utils.parallelizer``) logs each failed example and, past
``max_errors`` of them, raises a bare ``Exception("Execution cancelled due to errors or
interruption.")``: the cause is only in a log line the CLI keeps quiet. While an optimizer runs,
:func:`failures` collects the exceptions of those log lines (the logging call is made inside the
``except`` block, so the exception is at hand), and :meth:`Failures.raise_cause` turns the bare
error into the first cause. The collector travels in the DSPy settings, which DSPy copies into
its worker threads, so two optimizers running side by side (a study's trials) keep their own.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
from collections.abc import Iterator
from typing import NoReturn

import dspy

from courtroom.errors import CourtroomError

_KEY = "courtroom_failures"
_LOGGER = "dspy.utils.parallelizer"


class Failures:
    """The exceptions of the examples that failed inside one optimizer run."""

    def __init__(self) -> None:
        self.count = 0
        self.first: BaseException | None = None
        self._lock = threading.Lock()

    def add(self, exc: BaseException) -> None:
        """Count one failed example; keep the first exception."""
        with self._lock:
            self.count += 1
            self.first = self.first or exc

    def raise_cause(self, exc: BaseException, optimizer: str) -> NoReturn:
        """Raise ``exc``, or, when it hides the cause (a bare ``Exception``), the first failure it hides.

        A courtroom error keeps its kind (and exit code) with the optimizer's name and the count of
        failed examples before it; any other cause is raised as itself (a bug: ``--debug`` shows
        where it happened).
        """
        cause = self.first
        if type(exc) is not Exception or cause is None:
            raise exc
        if isinstance(cause, CourtroomError):
            raise type(cause)(
                f"optimizer {optimizer} stopped after {self.count} failed example(s); the first: {cause}"
            ) from cause
        raise cause from None


class _Collect(logging.Handler):
    """On DSPy's parallelizer logger: hands each failed example's exception to the run's :class:`Failures`."""

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D102
        found = dspy.settings.get(_KEY)
        exc = record.exc_info[1] if record.exc_info else sys.exc_info()[1]
        if isinstance(found, Failures) and exc is not None and record.levelno >= logging.ERROR:
            found.add(exc)


_handler = _Collect(logging.ERROR)
_installed = threading.Lock()


@contextlib.contextmanager
def failures() -> Iterator[Failures]:
    """Collect the failed examples' exceptions of the optimizer run inside (see the module's docstring)."""
    with _installed:
        logger = logging.getLogger(_LOGGER)
        if _handler not in logger.handlers:
            logger.addHandler(_handler)
    found = Failures()
    with dspy.context(**{_KEY: found}):
        yield found
