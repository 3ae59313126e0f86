"""The ``courtroom`` command: one module per command, each calling one library function."""

from __future__ import annotations

import logging
import os
import sys
from typing import Any

import click
import typer

from courtroom.cli._app import app


def _register() -> None:
    # Importing the command modules registers them on `app`.
    from courtroom.cli import compare, compile, frameworks, predict, report, run, runs, show, study, tasks  # noqa: F401


class _RedactingStream:
    """A text stream that drops ``user:password@`` from URLs before writing (``--debug`` output)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        from courtroom.cache import redact_text

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


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line (no traceback unless ``--debug``) and exit non-zero."""
    from courtroom.errors import CourtroomError

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
        command.main(args=args, prog_name="courtroom", standalone_mode=False)
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except (KeyboardInterrupt, click.exceptions.Abort):
        print("interrupted", file=sys.stderr)
        return 130
    except CourtroomError as exc:
        if debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        print(
            f"error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} (rerun with --debug)",
            file=sys.stderr,
        )
        return 1
    return 0
