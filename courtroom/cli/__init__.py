"""The ``courtroom`` command: one module per command, each calling one library function.

This module stays light on purpose: :func:`main` installs the stop-signal handlers before it
imports the command line (typer, rich) and, through the commands, DSPy and the rest, so a Ctrl-C
at any moment of start-up exits 130 with one line instead of a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line (no traceback unless ``--debug``) and exit non-zero."""
    from courtroom import _clock, _stop

    _clock.begin()
    _stop.reset()
    if threading.current_thread() is not threading.main_thread():
        try:
            from courtroom.cli._main import run_main

            return run_main(argv)
        finally:
            _stop.reset()  # the command's flags and folders are its own: a later call starts clean
            _reset_logs()
    signals = [getattr(signal, name) for name in _stop.STOP_SIGNALS if hasattr(signal, name)]
    previous = {s: signal.signal(s, _stop.on_stop_signal) for s in signals}
    try:
        try:
            from courtroom.cli._main import run_main
        except KeyboardInterrupt:
            # A stop while the command line itself was loading: nothing ran, nothing was sent.
            sys.stderr.write(f"{_stop.startup_interrupted()}\n")
            code = _stop.stop_code()
        else:
            code = run_main(argv)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _stop.reset()
        _reset_logs()
    if argv is None:
        _leave(code)
    return code


def _leave(code: int) -> None:
    """End the process now that the command is done, without the interpreter's teardown.

    Everything is written and no request is open; tearing down the interpreter (freeing every
    module and object, closing the cache's connections) takes 0.5-4 s after the last line on a
    busy machine (issue 44), and seconds a user who pressed Ctrl-C should not wait. After a
    finished command, what a normal exit would still do that matters is done here: the
    ``atexit`` handlers (logging's flush among them) and the streams' flush; with a thread of
    the command still running (none is, normally) the process exits as usual, after it.
    """
    from courtroom import _stop

    stopped = code in (130, 129, 143)
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    if not stopped and any(t.is_alive() and not t.daemon for t in others):
        return
    _stop.stop_servers()  # the embedded server (and its log) first
    if not stopped:  # a stop leaves at once, as it always did
        import atexit

        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream: nothing more can reach it
            pass
    os._exit(code)


def _reset_logs() -> None:
    """A command's --debug (or its quiet) is its own: a script or a later call gets its logging back."""
    if "courtroom.reporting.logs" in sys.modules:
        sys.modules["courtroom.reporting.logs"].reset()
