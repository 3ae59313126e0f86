"""One map from failures to exit codes and one-line messages.

* 0: done; 1: a bug or an unexpected failure (the line says to rerun with ``--debug``);
* 2: bad input or a bad environment: an invalid option or file, a damaged file, a full disk, a
  read-only or damaged storage; and more failed examples (or cases) than ``--fail-on-error``
  allows. The line names the path and the fix, and where a folder can be resumed, the command
  that resumes it;
* 3: a budget reached (an outcome: the line says how to finish);
* 130, 143, 129: stopped by Ctrl-C, SIGTERM, SIGHUP (the line says how to resume).

``--debug`` prints the traceback as well; it never changes the code.
"""

from __future__ import annotations

import errno
from typing import Any

FULL = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}
"""A full disk, a file-size limit, a quota: the write did not fit."""
DENIED = {errno.EROFS, errno.EACCES, errno.EPERM}
"""A read-only file system or a file the user may not write."""
BAD_PATH = {errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR, errno.ENOENT}
"""A path that cannot be used as given: too long, a symlink loop, a file where a folder should be, gone."""


def resume_line() -> str:
    """``; resume with: COMMAND`` for the folder the command was writing (empty when there is none)."""
    from courtroom import _stop

    folder = _stop.saved_folder()
    hint = _stop.resume_hint() or (_stop.with_flags(f"courtroom run --resume {folder}") if folder else None)
    return f"; then resume with: {hint}" if hint else ""


def _unreadable(path: Any) -> bool:
    import os

    return os.path.exists(path) and not os.access(path, os.R_OK)


def _short(path: Any, most: int = 160) -> str:
    """A path for a one-line message (a 10,000-character name is cut in the middle)."""
    text = str(path)
    return text if len(text) <= most else f"{text[: most // 2]}...{text[-most // 2 :]}"


def _storage_error(exc: BaseException) -> bool:
    name = type(exc).__name__
    return name in ("StorageInternalError", "OperationalError", "DatabaseError") or "sqlite3" in type(exc).__module__


def describe(exc: BaseException) -> tuple[int, str] | None:
    """(exit code, line) for an expected failure; None for anything else (exit 1, a bug)."""
    from courtroom.errors import CourtroomError

    if isinstance(exc, CourtroomError):
        # A stop at a budget (exit 3) is an outcome, not an error: its line says what to do next.
        return exc.exit_code, (f"error: {exc}" if exc.exit_code == 2 else str(exc))
    if isinstance(exc, OSError) and exc.errno in FULL:
        where = exc.filename or "a file"
        return 2, (
            f"error: cannot write {where}: {exc.strerror or exc} (the disk is full or a file-size limit was hit): "
            f"free some space{resume_line() or ', then run the command again'}"
        )
    if isinstance(exc, OSError) and exc.errno in DENIED and exc.filename:
        if _unreadable(exc.filename):
            return 2, f"error: cannot read {_short(exc.filename)}: {exc.strerror or exc}: make it readable"
        return 2, (
            f"error: cannot write {_short(exc.filename)}: {exc.strerror or exc}: make it writable or choose another "
            f"place (--out, --storage){resume_line()}"
        )
    if isinstance(exc, OSError) and exc.errno in BAD_PATH and exc.filename:
        return 2, f"error: {_short(exc.filename)}: {exc.strerror or exc}: pass another path{resume_line()}"
    if _storage_error(exc):
        from courtroom.optimize.study._storage import reason_of

        return 2, (
            f"error: a database failed ({reason_of(exc)}): if it is read-only, make it writable; if it is "
            "damaged, move it aside and start again (a study: --storage NEW.db)"
        )
    return None


def unexpected(exc: BaseException) -> tuple[int, str]:
    """The line of a failure :func:`describe` does not know: exit 1."""
    head = str(exc).splitlines()[0] if str(exc) else ""
    return 1, f"error: {type(exc).__name__}: {head} (rerun with --debug)"


def print_traceback(exc: Any) -> None:
    """The traceback of ``exc`` on stderr (``--debug``), credentials redacted by the CLI's stream."""
    import sys
    import traceback

    traceback.print_exception(exc, file=sys.stderr)
