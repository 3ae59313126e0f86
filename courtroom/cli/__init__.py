"""The ``courtroom`` command: one module per command, each calling one library function."""

from __future__ import annotations

import logging
import os
import sys

import click
import typer

from courtroom.cli._app import app


def _register() -> None:
    # Importing the command modules registers them on `app`.
    from courtroom.cli import compare, compile, frameworks, predict, report, run, show, study, tasks  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors print one line (no traceback unless ``--debug``) and exit non-zero."""
    from courtroom.errors import CourtroomError

    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # The CLI draws its own progress; datasets' per-split bars would garble one-line errors.
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    if not debug:
        # DSPy warns per truncated answer; the run already records such failures per example.
        logging.getLogger("dspy").setLevel(logging.ERROR)
    _register()
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="courtroom", standalone_mode=False)
        if isinstance(code, int) and code:
            return code  # typer.Exit(n) inside a command (e.g. 3: stopped at the budget)
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
