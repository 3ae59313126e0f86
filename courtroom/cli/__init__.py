"""The ``courtroom`` command: one module per command, each calling one library function.

This module stays light on purpose: :func:`main` installs the Ctrl-C handler before it imports the
command line (typer, rich) and, through the commands, DSPy and the rest, so a Ctrl-C at any moment
of start-up exits 130 with one line instead of a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
import threading


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line (no traceback unless ``--debug``) and exit non-zero."""
    from courtroom import _stop

    _stop.reset()
    if threading.current_thread() is not threading.main_thread():
        from courtroom.cli._main import run_main

        return run_main(argv)
    previous = signal.signal(signal.SIGINT, _stop.on_sigint)
    try:
        try:
            from courtroom.cli._main import run_main
        except KeyboardInterrupt:
            # Ctrl-C while the command line itself was loading: nothing ran, nothing was sent.
            sys.stderr.write(f"{_stop.STARTUP_INTERRUPTED}\n")
            code = 130
        else:
            code = run_main(argv)
    finally:
        signal.signal(signal.SIGINT, previous)
    if code == 130 and argv is None:
        # Everything is saved and no request is open; tearing down the interpreter (LiteLLM and
        # friends) takes seconds on a busy machine, which a user who pressed Ctrl-C should not wait.
        # os._exit skips atexit: stop the embedded model server here, so its log is removed too.
        server = sys.modules.get("courtroom.models.local._server")
        if server is not None:
            server.stop_all()
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code
