"""Stop early when the first requests all fail alike: a wrong key, a missing server, an unknown model.

A key set but ``--api-base`` forgotten used to cost minutes: every example retried its
connection errors with back-off and failed, and the command then said something unrelated
(the run failed on too many errors, a compile had no demos). Here, from the start of a command
(:func:`reset`) until one request gets an answer, each failed request is classified; when the
first :data:`TRIP_AFTER` failures share one cause that a retry cannot fix (authentication, no
server at the address, an unknown model), the breaker trips: every thread's next attempt raises
:class:`Unreachable`, which no per-example ``except Exception`` records, and the command stops
with that cause in one line. One answer disarms it for the rest of the command: after that a
failure is an example's failure, as before.
"""

from __future__ import annotations

import socket
import threading
from typing import Any

TRIP_AFTER = 3
"""Failed requests, all of one hopeless cause and none answered before them, that stop a command."""

_FIXES = {
    "auth": "check the API key in the environment (or the --role model's key)",
    "billing": "check the account's billing or quota at the provider",
    "model": "check the model name (--lm, --role); `courtroom run --help` shows the form",
    "connect": "check --api-base (a local server must be running) and the network",
}


class Unreachable(BaseException):  # noqa: N818 - an outcome of the command, like KeyboardInterrupt
    """The first requests all failed alike; no later request is sent.

    A ``BaseException``, so that no per-example ``except Exception`` records it as one example's
    failure; :func:`courtroom.eval.harness.evaluate` and the compile turn it into a
    :class:`courtroom.errors.ModelError` for callers.
    """

    def __init__(self, model: str, cause: str, detail: str, count: int) -> None:  # noqa: D107
        self.model, self.cause, self.detail, self.count = model, cause, detail, count
        super().__init__(self.text())

    def text(self) -> str:
        """One line: what failed, how often, why, and the fix."""
        return (
            f"the first {self.count} requests to {self.model} all failed ({self.detail}); stopped without "
            f"sending more: {_FIXES[self.cause]}"
        )


_CONNECT = ("ConnectError", "APIConnectionError")
"""Exception classes (httpx's, openai's) of a connection that failed; not their time-out subclasses."""


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and cur not in seen and len(seen) < 10:
        seen.append(cur)
        cur = cur.__cause__ or cur.__context__
    return seen


def classify(exc: BaseException) -> str | None:
    """The hopeless cause of a failed request (``auth``, ``billing``, ``model``, ``connect``), else None."""
    from dspy.utils.exceptions import (
        LMAuthError,
        LMBillingError,
        LMProviderError,
        LMTransportError,
        LMUnsupportedModelError,
    )

    if isinstance(exc, LMAuthError) or getattr(exc, "status", None) in (401, 403):
        return "auth"
    if isinstance(exc, LMBillingError):
        return "billing"
    if isinstance(exc, LMUnsupportedModelError) or (
        isinstance(exc, LMProviderError) and getattr(exc, "status", None) == 404
    ):
        return "model"
    chain = _chain(exc)
    # The connection itself failed (refused, a host that does not resolve), by DSPy's own client
    # or through LiteLLM, which reports it as a 500 ("Connection error.") caused by httpx's ConnectError.
    if any(isinstance(e, ConnectionRefusedError | socket.gaierror) or type(e).__name__ in _CONNECT for e in chain):
        return "connect"
    if isinstance(exc, LMTransportError) and "failed to connect" in str(exc).lower():
        return "connect"
    name = type(exc).__name__
    if name == "AuthenticationError":
        return "auth"
    if name == "NotFoundError":
        return "model"
    return None


def _detail(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    head = text[0] if text else type(exc).__name__
    return head if len(head) <= 160 else head[:157] + "..."


class Breaker:
    """The state of one command's first requests (thread-safe)."""

    def __init__(self) -> None:  # noqa: D107
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        """Arm the breaker: a new command starts."""
        with getattr(self, "_lock", threading.Lock()):
            self.answered = False
            self.causes: list[str] = []
            self.tripped: Unreachable | None = None

    def check(self) -> None:
        """Raise the trip's :class:`Unreachable` if the breaker tripped (before a request is sent)."""
        tripped = self.tripped
        if tripped is not None:
            raise Unreachable(tripped.model, tripped.cause, tripped.detail, tripped.count)

    def success(self) -> None:
        """A request got an answer: the breaker is disarmed until the next command."""
        self.answered = True

    def failure(self, model: str, exc: BaseException) -> None:
        """A request failed: trip (raising :class:`Unreachable`) on the first failures' common cause."""
        if self.answered:
            return
        cause = classify(exc)
        with self._lock:
            if self.answered or self.tripped is not None:
                return
            if cause is None:
                self.answered = True  # a failure a retry may fix: the address and key are not in doubt
                return
            self.causes.append(cause)
            if len(self.causes) >= TRIP_AFTER and len(set(self.causes)) == 1:
                self.tripped = Unreachable(model, cause, _detail(exc), len(self.causes))
        self.check()


BREAKER = Breaker()
"""The process's breaker, armed at the start of every command (:func:`courtroom._stop.reset`)."""


def reset() -> None:
    """Arm :data:`BREAKER` again."""
    BREAKER.reset()


def converted(exc: Unreachable) -> Any:
    """The :class:`courtroom.errors.ModelError` a caller of the library sees for ``exc``."""
    from courtroom.errors import ModelError

    return ModelError(exc.text())
