"""The ``courtroom`` command: one module per command, each calling one library function."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click
import typer
from typer.exceptions import TyperException

from courtroom.cli._app import app


def _register() -> None:
    # Importing the command modules registers them on `app`.
    from courtroom.cli import compare, compile, frameworks, predict, report, run, runs, show, study, tasks  # noqa: F401


class _RedactingStream:
    """A text stream that drops ``user:password@`` from URLs before writing (``--debug`` output)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from courtroom.models.cache import redact_text

        return self._stream.write(redact_text(text))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _redact_debug_output() -> None:
    """Debug logs (HTTP clients log request URLs) and the final traceback go out without credentials."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler) and not isinstance(handler.stream, _RedactingStream):
            handler.setStream(_RedactingStream(handler.stream))  # type: ignore[arg-type]
    if not isinstance(sys.stderr, _RedactingStream):
        sys.stderr = _RedactingStream(sys.stderr)  # type: ignore[assignment]


STOP_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
"""Signals that stop a command gracefully: Ctrl-C, and what schedulers (Slurm, Kubernetes, systemd) send first."""

GRACE = 10.0
"""Seconds a SIGTERM or SIGHUP waits for the requests already sent (``COURTROOM_STOP_GRACE``); schedulers
kill about 30 s later. Ctrl-C waits for them until a second Ctrl-C."""


def _on_stop_signal(signum: int, frame: object) -> None:
    """First signal: no new LM call starts, the requests already sent finish; a second one stops at once.

    After SIGTERM or SIGHUP the wait is bounded by :data:`GRACE`: then the process exits with the
    resume line, keeping every result already written.
    """
    import signal

    from courtroom import _stop

    code = 128 + signum
    if _stop.stop_requested():
        _exit_now(code, "interrupted again: stopped at once" if signum == signal.SIGINT else "stopped at once")
    _stop.request_stop(code)
    if signum == signal.SIGINT:
        sys.stderr.write("interrupted: waiting for the requests already sent (Ctrl-C again to stop at once)\n")
    else:
        import threading

        grace = _grace()
        name = signal.Signals(signum).name
        sys.stderr.write(f"{name}: stopping; saving the answers that arrive within {grace:g} s\n")
        timer = threading.Timer(grace, _exit_now, (code, f"{name}: stopped after the {grace:g} s grace period"))
        timer.daemon = True
        timer.start()
    sys.stderr.flush()
    raise KeyboardInterrupt


def _grace() -> float:
    try:
        return max(0.0, float(os.environ.get("COURTROOM_STOP_GRACE", GRACE)))
    except ValueError:
        return GRACE


def _exit_now(code: int, what: str) -> None:
    """Exit at once (requests in flight are dropped), with the line that resumes the saved work."""
    from courtroom import _stop

    folder = _stop.saved_folder()
    hint = _stop.resume_hint() or (_stop.with_flags(f"courtroom run --resume {folder}") if folder else None)
    resume = f"; resume with: {hint}" if hint else ""
    sys.stderr.write(f"{what}{resume}\n")
    sys.stderr.flush()
    sys.stdout.flush()
    os._exit(code)


def _interrupted_message() -> str:
    """What a Ctrl-C leaves behind: the examples saved, and the command that finishes the run."""
    from pathlib import Path

    from courtroom import _stop

    folder = _stop.saved_folder()
    what = _stop.stop_text()
    if folder is None:
        return (
            f"{what}: no run folder was written; the answers already received are in the cache, "
            "so the same command sends only what is missing"
        )
    if _stop.resume_hint():
        return f"{what}: finished work is saved in {folder}; resume with: {_stop.resume_hint()}"
    saved = ""
    if (Path(folder) / "meta.json").is_file():
        from courtroom.errors import DataError
        from courtroom.runner.runs import load_run

        try:
            meta, rows, _ = load_run(folder)
            saved = f"{len(rows)} of {len(meta.get('example_ids', []))} examples "
        except DataError:
            saved = ""
    return f"{what}: {saved}saved in {folder}; resume with: {_stop.with_flags(f'courtroom run --resume {folder}')}"


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line (no traceback unless ``--debug``) and exit non-zero."""
    import signal
    import threading

    from courtroom import _stop

    _stop.reset()
    if threading.current_thread() is not threading.main_thread():
        try:
            return _main(argv)
        finally:
            _stop.reset()  # the command's flags and folders are its own: a later call starts clean
    signals = [getattr(signal, name) for name in STOP_SIGNALS if hasattr(signal, name)]
    previous = {s: signal.signal(s, _on_stop_signal) for s in signals}
    try:
        code = _main(argv)
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        _stop.reset()
    if code in (130, 129, 143) and argv is None:
        # Everything is saved and no request is open; tearing down the interpreter (LiteLLM and
        # friends) takes seconds on a busy machine, which a user who pressed Ctrl-C should not wait.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _main(argv: list[str] | None) -> int:
    from courtroom import _stop
    from courtroom.cli import _failures

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"]):
        from courtroom import __version__

        print(f"courtroom {__version__}")
        return 0
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if debug:
        _redact_debug_output()
    # The CLI draws its own progress; datasets' per-split bars would garble one-line errors.
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if not debug:
        # DSPy warns per truncated answer; the run already records such failures per example.
        logging.getLogger("dspy").setLevel(logging.ERROR)
    _register()
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="courtroom", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except TyperException as exc:  # typer's own copy of click's usage errors (bad option values, ...)
        if debug:
            _failures.print_traceback(exc)
        command_name = getattr(getattr(exc, "ctx", None), "info_name", None)
        hint = f" (see courtroom {command_name} --help)" if command_name else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        print(f"error: {' '.join(message.split())}{hint}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2))
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        print(_interrupted_message(), file=sys.stderr)
        return _stop.stop_code()
    except Exception as exc:
        # One map from failures to codes (courtroom.cli._failures); --debug adds the traceback only.
        if debug:
            _failures.print_traceback(exc)
        known = _failures.describe(exc)
        code, line = known if known is not None else _failures.unexpected(exc)
        print(line, file=sys.stderr)
        return code
    if code == 130:  # typer turned a Ctrl-C into Exit(130)
        print(_interrupted_message(), file=sys.stderr)
        return _stop.stop_code()
    return code if isinstance(code, int) else 0
