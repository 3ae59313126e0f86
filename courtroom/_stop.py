"""Stopping on Ctrl-C: no new LM call starts once a stop is requested (process-wide).

The CLI's SIGINT handler calls :func:`request_stop`; from then on :func:`stop_calls`, a DSPy
callback on every model :func:`courtroom.models.lms.build_lm` makes, raises :class:`Stopped` in the
thread that was about to start a call. Requests already sent finish (their answers reach the
cache, so a resumed run gets them for free); nothing else is sent. :class:`Stopped` derives
from ``KeyboardInterrupt`` so that no ``except Exception`` on the way records it as the
example's failure: the example simply has no result and a resume runs it.
"""

from __future__ import annotations

import functools
import threading
from typing import Any

# No DSPy import here: the CLI imports this module before it parses options (``--help`` and a bad
# flag never load DSPy). The callback class is built the first time a model is guarded.

_stop = threading.Event()
_started = threading.Event()

STARTUP_INTERRUPTED = "interrupted before any model call: nothing was sent"
"""The one line a Ctrl-C prints when no model call had started (start-up, data loading)."""


class Stopped(KeyboardInterrupt):
    """Raised instead of starting an LM call after a stop was requested."""


def request_stop() -> None:
    """From now on, no LM call starts in this process."""
    _stop.set()


def stop_requested() -> bool:
    """Whether :func:`request_stop` was called (and not :func:`reset`)."""
    return _stop.is_set()


def calls_started() -> bool:
    """Whether a guarded model call started in this process since :func:`reset`."""
    return _started.is_set()


def reset() -> None:
    """Allow LM calls again (the CLI resets when a command starts)."""
    _stop.clear()
    _started.clear()
    _saving.clear()
    _flags.clear()


@functools.cache
def stop_calls() -> Any:
    """The one :class:`StopCalls` callback (a DSPy ``BaseCallback``), built on first use."""
    import dspy
    from dspy.utils.callback import BaseCallback

    class StopCalls(BaseCallback):
        """Refuses to start an LM call once a stop is requested.

        It sits in the LM's own callbacks, so it runs after the callbacks in ``dspy.settings``
        (an in-flight bound that made the call wait for a slot, for one): a call that waited is
        refused when its slot frees up. Before refusing, it gives the callbacks that already saw the
        call's start their end (DSPy does not when a start callback raises), so no slot leaks.
        """

        def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:  # noqa: D102
            if not _stop.is_set():
                _started.set()
                return
            exc = Stopped("stopped: no new model calls after Ctrl-C")
            active = [*dspy.settings.get("callbacks", []), *(getattr(instance, "callbacks", None) or [])]
            for callback in active[: active.index(self)] if self in active else []:
                try:
                    callback.on_lm_end(call_id=call_id, outputs=None, exception=exc)
                except Exception:  # noqa: BLE001, S112 - DSPy ignores end-callback errors too
                    continue
            raise exc

    return StopCalls()


def guard(lm: Any) -> Any:
    """Give ``lm`` the stop callback (once); returns ``lm``."""
    callbacks = getattr(lm, "callbacks", None)
    if isinstance(callbacks, list) and stop_calls() not in callbacks:
        callbacks.append(stop_calls())
    return lm


_saving: list[tuple[str, str | None]] = []


class saving_to:  # noqa: N801 - used as a context manager, like contextlib's
    """Note the folder a command is writing, for the Ctrl-C message (the outermost one wins).

    On an error (Ctrl-C included) the note stays, so the CLI can name the folder afterwards.
    """

    def __init__(self, folder: Any, resume: str | None = None) -> None:  # noqa: D107
        self.folder = str(folder)
        self.resume = resume

    def __enter__(self) -> None:
        _saving.append((self.folder, self.resume))

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None and _saving:
            _saving.pop()


_flags: list[str] = []


def note_flags(flags: list[str]) -> None:
    """The options every resume hint of this command repeats (``--api-base URL``: never on disk)."""
    _flags[:] = list(flags)


def with_flags(hint: str) -> str:
    """``hint`` followed by the noted options, quoted for a shell."""
    import shlex

    return " ".join([hint, *(shlex.quote(f) for f in _flags)])


def saved_folder() -> str | None:
    """The outermost folder noted by :class:`saving_to` (None when none)."""
    return _saving[0][0] if _saving else None


def resume_hint() -> str | None:
    """How to resume the outermost noted work, when it is not ``courtroom run --resume FOLDER``."""
    return _saving[0][1] if _saving else None


def on_sigint(signum: int, frame: object) -> None:
    """The CLI's SIGINT handler: the first Ctrl-C stops new LM calls, the second stops at once.

    Installed before the command line is imported, so it also covers start-up: with no model call
    started yet, the first Ctrl-C just interrupts (the CLI then prints one line and exits 130).
    """
    import os
    import sys

    folder = saved_folder()
    if _stop.is_set():
        hint = resume_hint() or (with_flags(f"courtroom run --resume {folder}") if folder else None)
        resume = f"; resume with: {hint}" if hint else ""
        sys.stderr.write(f"interrupted again: stopped at once{resume}\n")
        sys.stderr.flush()
        server = sys.modules.get("courtroom.models.local._server")
        if server is not None:  # os._exit skips atexit: stop the embedded server (and remove its log)
            server.stop_all()
        os._exit(130)
    request_stop()
    if _started.is_set():
        sys.stderr.write("interrupted: waiting for the requests already sent (Ctrl-C again to stop at once)\n")
        sys.stderr.flush()
    raise KeyboardInterrupt
