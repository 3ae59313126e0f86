"""Stopping on Ctrl-C: no new LM call starts once a stop is requested (process-wide).

The CLI's signal handler (:func:`on_stop_signal`) calls :func:`request_stop`; from then on
:func:`stop_calls`, a DSPy callback on every model :func:`courtroom.models.lms.build_lm` makes,
raises :class:`Stopped` in the
thread that was about to start a call. Requests already sent finish (their answers reach the
cache, so a resumed run gets them for free); nothing else is sent. :class:`Stopped` derives
from ``KeyboardInterrupt`` so that no ``except Exception`` on the way records it as the
example's failure: the example simply has no result and a resume runs it.
"""

from __future__ import annotations

import functools
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar, cast

T = TypeVar("T")

# No DSPy import here: the CLI installs the signal handlers below before it parses options
# (``--help`` and a bad flag never load DSPy). The callback class is built when a model is guarded.

_stop = threading.Event()
_started = threading.Event()
_code: list[int] = []


class Stopped(KeyboardInterrupt):
    """Raised instead of starting an LM call after a stop was requested."""


def request_stop(code: int = 130) -> None:
    """From now on, no LM call starts in this process; ``code`` is the exit status (128 + signal)."""
    _code[:] = [code]
    _stop.set()


def stop_code() -> int:
    """The exit status of the stop: 130 (Ctrl-C), 143 (SIGTERM), 129 (SIGHUP)."""
    return _code[0] if _code else 130


def stop_text() -> str:
    """How the stop is named in messages."""
    return {143: "terminated (SIGTERM)", 129: "hung up (SIGHUP)"}.get(stop_code(), "interrupted")


def stop_requested() -> bool:
    """Whether :func:`request_stop` was called (and not :func:`reset`)."""
    return _stop.is_set()


def wait(seconds: float) -> bool:
    """Sleep ``seconds`` or until a stop is requested; True when it was."""
    return _stop.wait(seconds)


def calls_started() -> bool:
    """Whether a guarded model call started in this process since :func:`reset`."""
    return _started.is_set()


def startup_interrupted() -> str:
    """The one line a stop prints when no model call had started (start-up, data loading)."""
    return f"{stop_text()} before any model call: nothing was sent"


def reset() -> None:
    """Allow LM calls again (the CLI resets when a command starts)."""
    _stop.clear()
    _started.clear()
    _code.clear()
    _saving.clear()
    _flags.clear()
    _command.clear()
    from courtroom.models import _breaker

    _breaker.reset()  # a new command's first requests are judged afresh


@functools.cache
def stop_calls() -> Any:
    """The one ``StopCalls`` callback (a DSPy ``BaseCallback``), built on first use."""
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
            exc = Stopped(f"stopped: no new model calls ({stop_text()})")
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
_command: list[str] = []


def note_command(args: list[str]) -> None:
    """The command line being run (the CLI's arguments), for a hint that says to run it again."""
    _command[:] = list(args)


def command_line() -> str | None:
    """``courtroom ARGS`` as noted, quoted for a shell, every URL's password as PASSWORD (None: not noted)."""
    import shlex

    from courtroom._secrets import without_password

    return " ".join(["courtroom", *(shlex.quote(without_password(a)) for a in _command)]) if _command else None


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


def finishing(work: Callable[[], T]) -> T:
    """``work()`` in a worker thread; on a stop the caller waits for it, so requests in flight finish.

    A stop signal raises ``KeyboardInterrupt`` in the main thread: work running there (a DSPy
    optimizer calling the model) would drop the request in flight, and a rerun would send it again.
    Here the main thread only waits: on a stop, new model calls are refused (:func:`stop_calls`),
    the calls already sent finish and reach the cache, the work ends, and the stop is raised. The
    run path gets the same from its example pool (:func:`courtroom.eval.harness.evaluate`).
    """
    import contextvars

    done: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()

    def target() -> None:
        try:
            done["value"] = context.run(work)
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            done["error"] = exc
        finally:
            finished.set()

    threading.Thread(target=target, name="courtroom-work", daemon=True).start()
    stopped: BaseException | None = None
    # Not Thread.join: a KeyboardInterrupt inside join marks the thread finished while it still runs.
    while True:
        try:
            if finished.wait(0.1):
                break
        except KeyboardInterrupt as exc:  # a stop signal (or a library caller's Ctrl-C)
            stopped = stopped or exc
            if not _stop.is_set():
                request_stop()
    if stopped is not None:
        raise stopped
    if "error" in done:
        raise done["error"]
    return cast(T, done["value"])


STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""Signals that stop a command gracefully: Ctrl-C, and what schedulers (Slurm, Kubernetes, systemd) send first."""

GRACE = 10.0
"""Seconds a SIGTERM or SIGHUP waits for the requests already sent (``COURTROOM_STOP_GRACE``); schedulers
kill about 30 s later. Ctrl-C waits for them until a second Ctrl-C."""


def on_stop_signal(signum: int, frame: object) -> None:
    """The CLI's handler of :data:`STOP_SIGNALS`: the first stops new LM calls, a second stops at once.

    After SIGTERM or SIGHUP the wait is bounded by :data:`GRACE`: then the process exits with the
    resume line, keeping every result already written. Installed before the command line is
    imported, so it covers start-up too: with no model call started, the first Ctrl-C just
    interrupts (the CLI then prints one line and exits 130).
    """
    code = 128 + signum
    if _stop.is_set():
        exit_now(code, "interrupted again: stopped at once" if signum == signal.SIGINT else "stopped at once")
    request_stop(code)
    if signum == signal.SIGINT:
        if _started.is_set():
            _say("interrupted: waiting for the requests already sent (Ctrl-C again to stop at once)")
    else:
        grace = _grace()
        name = signal.Signals(signum).name
        _say(f"{name}: stopping; saving the answers that arrive within {grace:g} s")
        timer = threading.Timer(grace, exit_now, (code, f"{name}: stopped after the {grace:g} s grace period"))
        timer.daemon = True
        timer.start()
    sys.stderr.flush()
    raise KeyboardInterrupt


def _grace() -> float:
    from courtroom._env import env_seconds

    return env_seconds("COURTROOM_STOP_GRACE", GRACE, strict=False)


def _plain(line: str) -> None:
    sys.stderr.write(line + "\n")


say_line: Callable[[str], None] = _plain
"""How a stop line reaches stderr: the CLI sets its wrapping writer
(:func:`courtroom.reporting.tables.to_stderr`) at start; this low module imports no reporting."""


def _say(line: str) -> None:
    """``line`` on stderr (wrapped to the terminal where the CLI set :data:`say_line`)."""
    say_line(line)


def exit_now(code: int, what: str) -> None:
    """Exit at once (requests in flight are dropped), with the line that resumes the saved work."""
    folder = saved_folder()
    hint = resume_hint() or (with_flags(f"courtroom run --resume {folder}") if folder else None)
    resume = f"; resume with: {hint}" if hint else ""
    _say(f"{what}{resume}")
    sys.stderr.flush()
    sys.stdout.flush()
    stop_servers()
    os._exit(code)


def stop_servers() -> None:
    """Stop the embedded model servers this process started (``os._exit`` skips ``atexit``; their logs go too)."""
    server = sys.modules.get("courtroom.models.local._server")
    if server is not None:
        server.stop_all()
