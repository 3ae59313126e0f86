"""Durable files of a folder: whole-line appends, tolerant readers, atomic small files.

* :class:`JsonLines` is the one writer of an append-only JSONL file (a run's ``results.jsonl`` and
  ``sessions.jsonl``). Before its first append it repairs a torn tail (a last line without its
  newline, left by a full disk or a killed process): the fragment is moved aside to
  ``NAME.torn-N`` and reported, so the next record never glues onto it. Each record goes out in
  one unbuffered write; a write that fails half way (disk full) is cut back, so the file never
  keeps half a line. An append to a file deleted under it (its folder removed mid-run) stops the
  command, naming the folder, rather than writing into nothing.
* :func:`read_jsonl` reads such a file line by line and skips, and counts, any line that is not
  JSON or not UTF-8: one bad line never hides the others.
* :func:`write_atomic` writes a small state file (``meta.json``, ``summary.json``) through a
  temporary file and a rename, so a reader sees the old file or the new one, never half of one.
* :func:`read_json` reads one, naming the file and the fix when it is damaged.
* :func:`read_text` reads a small input file (``--input``, ``--prices``, ``--config``) as UTF-8,
  naming it when it is not a regular file (a FIFO would block), unreadable or not UTF-8.
* :func:`check_output` refuses an output path that would overwrite a command's input or a file of
  a run, comparison or study folder.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom.errors import ConfigError, DataError

logger = logging.getLogger(__name__)


def repair_tail(path: str | Path, lost: str = "the example it held runs again") -> Path | None:
    """Move a torn last line (no trailing newline) of ``path`` aside; return where it went (None: none).

    ``lost`` ends the warning: what the fragment held and what becomes of it.
    """
    path = Path(path)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return None
    if size == 0:
        return None
    with path.open("rb+") as f:
        f.seek(size - 1)
        if f.read(1) == b"\n":
            return None
        # Find the last newline: everything after it is the fragment.
        keep, block = 0, 1 << 16
        end = size
        while end > 0:
            start = max(0, end - block)
            f.seek(start)
            chunk = f.read(end - start)
            at = chunk.rfind(b"\n")
            if at >= 0:
                keep = start + at + 1
                break
            end = start
        f.seek(keep)
        fragment = f.read()
        aside = _free_name(path, "torn")
        aside.write_bytes(fragment)
        f.truncate(keep)
        f.flush()
        os.fsync(f.fileno())
    logger.warning(
        "%s ended in a cut-off line (%d bytes, e.g. after a full disk or a kill): moved it to %s; %s",
        path,
        len(fragment),
        aside.name,
        lost,
    )
    return aside


def _free_name(path: Path, tag: str) -> Path:
    n = 1
    while (candidate := path.with_name(f"{path.name}.{tag}-{n}")).exists():
        n += 1
    return candidate


class JsonLines:
    """``with JsonLines(path) as log: log.append(record)``: whole JSON lines, a torn tail repaired first.

    ``torn`` is where a repaired fragment went (None when the tail was whole).
    """

    def __init__(self, path: str | Path) -> None:  # noqa: D107
        self.path = Path(path)
        self.torn: Path | None = None
        self._fd: int | None = None

    def open(self) -> JsonLines:
        """Repair the tail, then open for appending."""
        self.torn = repair_tail(self.path)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        return self

    def append(self, record: Mapping[str, Any]) -> None:
        """Write ``record`` as one line, in one write; on failure the file is cut back to whole lines."""
        if self._fd is None:
            self.open()
        assert self._fd is not None
        if os.fstat(self._fd).st_nlink == 0:
            # Writes to a deleted file succeed and are lost: stop at the first, before more is spent.
            raise DataError(
                f"{self.path.parent} was deleted while courtroom wrote {self.path.name} in it: stopped at the "
                "first lost write; run the command again"
            )
        data = (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")
        before = os.fstat(self._fd).st_size
        try:
            view = memoryview(data)
            while view:
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            try:
                os.ftruncate(self._fd, before)
            except OSError:  # the tail stays torn: the next writer repairs it
                pass
            raise _named(exc, self.path) from exc

    def sync(self) -> None:
        """Force what was appended onto the disk (a record that must survive a power cut)."""
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        """Close the file (every line is already written: appends are unbuffered)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> JsonLines:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()


def append_line(path: str | Path, record: Mapping[str, Any]) -> None:
    """Append one record to ``path`` (a :class:`JsonLines` opened for one line)."""
    with JsonLines(path) as log:
        log.append(record)


def read_jsonl(path: str | Path, check: Callable[[Any], str | None] | None = None) -> tuple[list[Any], list[int]]:
    """(records, numbers of the lines skipped) of a JSONL file; blank lines are neither.

    A line is skipped when it is not UTF-8 JSON, or when ``check`` (the file's typed record,
    :mod:`courtroom.runner._records`) says what is wrong with it.
    """
    path = Path(path)
    rows: list[Any] = []
    bad: list[int] = []
    if not path.is_file():
        return rows, bad
    for n, raw in enumerate(path.read_bytes().split(b"\n"), 1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            bad.append(n)
            continue
        if check is not None and check(row) is not None:
            bad.append(n)
        else:
            rows.append(row)
    return rows, bad


def skipped_text(path: Path, bad: list[int]) -> str:
    """``results.jsonl: skipped 2 damaged line(s) (3, 9)`` for a warning."""
    shown = ", ".join(map(str, bad[:10])) + (", ..." if len(bad) > 10 else "")
    return f"{path}: skipped {len(bad)} damaged line(s) ({shown}) that are not UTF-8 JSON records of this file"


def write_atomic(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename (never half a file)."""
    path = Path(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise _named(exc, path) from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _named(exc, path) from exc
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _named(exc: OSError, path: Path) -> OSError:
    """``exc`` with the file it is about (``os.write`` errors name none)."""
    if exc.filename:
        return exc
    return type(exc)(exc.errno, exc.strerror, str(path))


def write_json(path: str | Path, value: Any, **dumps: Any) -> None:
    """``value`` as JSON (indented by 2 unless told), written atomically."""
    dumps.setdefault("indent", 2)
    write_atomic(path, json.dumps(value, **dumps))


def read_json(path: str | Path, fix: str = "") -> Any:
    """The JSON in ``path``; a damaged file raises :class:`DataError` naming it (and ``fix``)."""
    path = Path(path)
    try:
        return json.loads(path.read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        where = f" (line {exc.lineno})" if isinstance(exc, json.JSONDecodeError) else ""
        raise DataError(f"{path} is damaged{where}: it is not UTF-8 JSON; {fix or 'restore it from a copy'}") from None


def read_text(path: str | Path, what: str) -> str:
    """The UTF-8 text of the input file ``path``; ``what`` names it in errors (``--input``, ``price table``)."""
    path = Path(path)
    try:
        if path.exists() and not path.is_file():
            raise DataError(f"{what} {path} is not a regular file (a folder, a FIFO or a device): pass a file")
        return path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise DataError(f"cannot read {what} {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{what} {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None


FOLDER_FILES = {"meta.json": "run", "comparison.json": "comparison", "plan.json": "comparison",
                "group.json": "repeat group", "study.json": "study report"}  # fmt: skip
"""A file that makes a folder one of courtroom's: a run, comparison, repeat group or study report."""


def folder_kind(folder: Path) -> str | None:
    """What courtroom folder ``folder`` is (run, comparison, repeat group, study report), or None."""
    return next((kind for name, kind in FOLDER_FILES.items() if (folder / name).is_file()), None)


def resolved(path: str | Path, flag: str) -> Path:
    """``path`` made absolute, symlinks followed; a path that cannot be followed (a loop) is bad input."""
    try:
        return Path(path).expanduser().resolve()
    except (OSError, RuntimeError) as exc:  # RuntimeError: a symlink loop (Python 3.11)
        raise ConfigError(f"{flag} {path}: cannot follow the path ({exc}); pass another path") from None


def check_output(path: str | Path, flag: str, inputs: Sequence[str | Path | None] = ()) -> Path:
    """Refuse an output that is one of the command's ``inputs`` or a file of a run, comparison or study folder.

    One check for every command that writes a path (``-o``, ``--out``, ``--export-best``): a report
    written over ``results.jsonl``, a program over a run's ``meta.json`` or a recipe over the study's
    own database lost the user's data without a word.
    """
    target = resolved(path, flag)
    for given in inputs:
        if given and _same(target, resolved(given, flag)):
            raise ConfigError(f"{flag} {path} is an input of this command ({given}): write the output to another file")
    kind = folder_kind(target.parent)
    if kind is not None:
        raise ConfigError(
            f"{flag} {path} is inside the {kind} folder {target.parent}, whose files courtroom reads: "
            "write the output outside it"
        )
    return target


def _same(a: Path, b: Path) -> bool:
    try:
        return a == b or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return a == b
