"""What :func:`courtroom.cli.main` runs once its signal handlers are in place: parse, dispatch, report errors."""

from __future__ import annotations

import functools
import logging
import os
import sys
from typing import Any

import click
import typer
import typer.rich_utils
from typer.exceptions import TyperException

from courtroom.cli._app import app


def _register() -> None:
    # Importing the command modules registers them on `app`.
    from courtroom.cli import compare, compile, frameworks, predict, report, run, runs, score, show, study, tasks  # noqa: F401


@functools.cache
def _command() -> Any:
    """The click command typer builds from ``app``, built once per process.

    A library caller, or a test, may run many commands in one process.
    """
    _register()
    return typer.main.get_command(app)


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


class _Wrapping(logging.Formatter):
    """Log lines (``WARNING courtroom.x: ...``) cut at spaces to the terminal's width, like every other line."""

    def format(self, record: logging.LogRecord) -> str:
        from courtroom.reporting.tables import terminal_width, wrapped

        text = super().format(record)
        if record.exc_info or record.stack_info:  # a traceback (--debug) keeps its own lines
            return text
        return "\n".join(wrapped(text, terminal_width()))


ELSEWHERE = {
    ("study", "--keep-better"): "a study keeps the better configuration by itself; --keep-better is compile's: "
    "export the study's choice with --export-best best.json, then courtroom compile --config best.json --keep-better",
}
"""(command, option) -> what to do instead, where the option belongs to another step of the work."""


def _other_commands(flag: str, command: str | None) -> str:
    """Where an option this command lacks belongs (``it is an option of compile``), or nothing."""
    if not flag.startswith("--") or command is None:
        return ""
    if (command, flag) in ELSEWHERE:
        return ELSEWHERE[(command, flag)]
    from courtroom.cli._options import OPTIONS

    owners = sorted({c for o in OPTIONS if flag in o.flags for c in o.commands if c != command})
    return f"it is an option of {', '.join(owners)}" if owners else ""


def _interrupted_message() -> str:
    """What a Ctrl-C leaves behind: the examples saved, and the command that finishes the run."""
    from pathlib import Path

    from courtroom import _stop

    folder = _stop.saved_folder()
    what = _stop.stop_text()
    if folder is None and not _stop.calls_started():
        return _stop.startup_interrupted()
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


RENAMED = {"--train": "--train-limit", "--dev": "--dev-limit", "--test": "--test-limit"}
"""Old spellings of options -> today's: an unknown old name is answered with the new one."""


def run_main(argv: list[str] | None) -> int:
    """Parse ``argv`` (default: ``sys.argv``), run the command, and return its exit status."""
    from courtroom import _stop

    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"]):
        from courtroom import __version__

        print(f"courtroom {__version__}")
        return 0
    debug = "--debug" in args
    args = [a for a in args if a != "--debug"]
    _stop.note_command(args)
    handler = logging.StreamHandler()
    handler.setFormatter(_Wrapping("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.DEBUG if debug else logging.WARNING, handlers=[handler])
    if debug:
        _redact_debug_output()
    # The CLI draws its own progress; datasets' per-split bars would garble one-line errors.
    os.environ.setdefault("HF_DATASETS_DISABLE_PROGRESS_BARS", "1")
    # DSPy's, LiteLLM's and Optuna's own lines stay quiet unless --debug: the CLI draws its own progress.
    from courtroom import _stop
    from courtroom.reporting.logs import set_debug
    from courtroom.reporting.tables import terminal_width, to_stderr

    _stop.say_line = to_stderr  # stop lines wrapped as every stderr line
    set_debug(debug)
    # Help uses the terminal's width: COLUMNS, else the terminal's (a pipe: stderr's), else 100, not 80.
    typer.rich_utils.MAX_WIDTH = terminal_width()
    try:
        return _dispatch(args, debug)
    finally:
        _print_tracked()


def _print_tracked() -> None:
    """Where ``--track`` logged this command's results (MLflow run ids and pages), on stderr."""
    tracking = sys.modules.get("courtroom.tracking")  # imported only by a command that tracked
    from courtroom.reporting.tables import to_stderr

    for line in tracking.logged() if tracking is not None else []:
        to_stderr(line)  # wrapped at the terminal's width; a URL may overflow, never cut


def _dispatch(args: list[str], debug: bool) -> int:
    """Run the command ``args`` names; its exit status, every failure turned into one line."""
    from courtroom import _stop
    from courtroom.cli import _failures
    from courtroom.models._breaker import Unreachable
    from courtroom.reporting.tables import to_stderr

    try:
        _register()
        if args and not args[0].startswith("-"):  # a command runs (not --help): its environment must be usable
            from courtroom._env import check_environment

            check_environment()
        code = _command().main(args=args, prog_name="courtroom", standalone_mode=False)
    except click.ClickException as exc:
        to_stderr(f"error: {' '.join(exc.format_message().split())}")
        return exc.exit_code
    except TyperException as exc:  # typer's own copy of click's usage errors (bad option values, ...)
        if debug:
            _failures.print_traceback(exc)
        command_name = getattr(getattr(exc, "ctx", None), "info_name", None)
        hint = f" (see courtroom {command_name} --help)" if command_name else ""
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        option_name = getattr(exc, "option_name", None) or ""
        renamed = RENAMED.get(option_name)
        elsewhere = _other_commands(option_name, command_name) if type(exc).__name__ == "NoSuchOption" else ""
        if renamed:  # click's close matches need not include it (--train is nearer --trace than --train-limit)
            message = f"No such option: {option_name} (it is {renamed} now)"
        elif elsewhere:  # another command's option: say whose, not click's near spellings of this one's
            message = f"No such option: {option_name} for {command_name}: {elsewhere}"
        to_stderr(f"error: {' '.join(message.split())}{hint}")
        return int(getattr(exc, "exit_code", 2))
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except Unreachable as exc:  # the first requests all failed alike (a compile's optimizer lets it through)
        to_stderr(f"error: {exc.text()}")
        return 2
    except (KeyboardInterrupt, click.exceptions.Abort):
        to_stderr(_interrupted_message())
        return _stop.stop_code()
    except Exception as exc:
        # One map from failures to codes (courtroom.cli._failures); --debug adds the traceback only.
        if debug:
            _failures.print_traceback(exc)
        known = _failures.describe(exc)
        code, line = known if known is not None else _failures.unexpected(exc)
        to_stderr(line)
        return code
    if code == 130:  # typer turned a Ctrl-C into Exit(130)
        to_stderr(_interrupted_message())
        return _stop.stop_code()
    return code if isinstance(code, int) else 0
