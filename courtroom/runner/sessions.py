"""A run folder's sessions: when each ran and what it sent, and the folder's spend over all of them.

``sessions.jsonl`` gets one line when a session starts (with the number of result lines before
it) and one when it stops, however it stops, with the requests and tokens it sent (from the
process's request tally, retries and examples cut off by a stop included). The summary's spend
is the folder's: the sum over sessions. A session killed before its end line (SIGKILL, OOM) counts
the lines it left in ``requests.jsonl`` (:class:`RequestLog`: one per request that reached a
server, answered or failed, written as the request is counted), so a kill at any point loses no
count and a resume counts only what it sends itself; a session that ended cleanly takes its lines
back out, its end line saying the same. The lines are not synced to disk: a power cut may lose them.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from courtroom._files import append_line, read_jsonl, repair_tail, skipped_text
from courtroom.eval.metrics import user_prices
from courtroom.models.usage import Usage
from courtroom.runner._records import result_problem, session_problem

logger = logging.getLogger(__name__)


def session(run_dir: Path, event: str, **fields: Any) -> None:
    """Append a session event (``start`` or ``end``) with ``fields``."""
    append_line(run_dir / "sessions.jsonl", {event: time.time(), **fields})


def line_count(path: Path) -> int:
    """Lines in ``path`` (0 when it does not exist)."""
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def end_session(run_dir: Path, usage: Mapping[str, Any]) -> bool:
    """The session's end and what it sent, written on every stop (a full disk here must not hide the first error).

    Whether the end line was written.
    """
    if not run_dir.is_dir():  # deleted mid-run: the error that stopped the run says so
        return False
    try:
        session(run_dir, "end", usage=dict(usage))
    except OSError as exc:
        logger.warning("could not record the end of the session in %s: %s", run_dir / "sessions.jsonl", exc)
        return False
    return True


REQUESTS = "requests.jsonl"


class RequestLog:
    """A session's ``requests.jsonl`` lines: ``[model, prompt tokens, completion tokens]`` per request.

    Then its cache reads and writes, where the provider's cache served or stored any.

    Called by the process's request tally (:data:`courtroom.models._requests.WIRE`) for each
    request it counts, in one unbuffered append (the kernel keeps it through a SIGKILL); no
    fsync, so its cost is one small write. Once the session's end line is written, :meth:`end`
    takes its lines back out, so the file only ever holds the lines of killed sessions (and of
    the one running). ``start`` is the line this session's begin at.
    """

    def __init__(self, run_dir: Path) -> None:  # noqa: D107
        self.path = run_dir / REQUESTS
        repair_tail(self.path, "one request of a killed session may go uncounted")
        self.start = line_count(self.path)
        self._size = self.path.stat().st_size if self.path.is_file() else 0
        self._fd: int | None = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()

    def __call__(self, model: str, prompt: int, completion: int, read: int = 0, write: int = 0) -> None:
        """Append one request (a write that fails is said once; the session's end line still counts it)."""
        row: list[Any] = [model, prompt, completion] + ([read, write] if read or write else [])
        data = (json.dumps(row) + "\n").encode("utf-8")
        with self._lock:
            if self._fd is None:
                return
            try:
                os.write(self._fd, data)
            except OSError as exc:
                logger.warning("%s: %s; a kill now would leave its requests uncounted", self.path, exc)
                self._close()

    def end(self) -> None:
        """The session's end line holds its counts: take its lines back out and record no more."""
        with self._lock:
            if self._fd is None:
                return
            try:
                os.ftruncate(self._fd, self._size)
            except OSError as exc:  # the lines stay, counted beside the end line
                logger.warning(
                    "%s: could not take the ended session's lines out (%s): its requests count twice", self.path, exc
                )
            self._close()
        if self._size == 0:
            self.path.unlink(missing_ok=True)

    def close(self) -> None:
        """Stop recording; lines not taken out by :meth:`end` (no end line: a stop that could not write it) stay."""
        with self._lock:
            self._close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


@contextlib.contextmanager
def requests_recorded(run_dir: Path) -> Iterator[RequestLog]:
    """Record every request the process counts in ``run_dir`` while inside (see :class:`RequestLog`).

    The caller writes the session's end line and, once written, calls ``log.end()``.
    """
    from courtroom.models._requests import WIRE

    log = RequestLog(run_dir)
    with _journals_lock:
        WIRE.journals = (*WIRE.journals, log)
    try:
        yield log
    finally:
        with _journals_lock:
            WIRE.journals = tuple(j for j in WIRE.journals if j is not log)
        log.close()


_journals_lock = threading.Lock()


def folder_spend(run_dir: str | Path) -> dict[str, Any]:
    """Requests and tokens of every session of a run folder, retries and replaced attempts included.

    A session records what it sent at its end; a session that ended without a record (killed)
    counts its lines of ``requests.jsonl`` (:class:`RequestLog`: the file holds only killed
    sessions' lines), or, in a folder written before those, the usage of the result lines it wrote.
    """
    run_dir = Path(run_dir)
    events = _events(run_dir)
    lines = _lines(run_dir / "results.jsonl")
    starts = [e for e in events if "start" in e]
    total = Usage()
    requests = _lines(run_dir / REQUESTS)
    if not starts or any("line" not in e for e in starts):
        _add(total, *(_decoded(x) for x in lines))  # written before sessions recorded their spend
        _add_requests(total, requests)  # a first session killed while preparing
        return total.to_dict()
    for n, event in enumerate(events):
        if "start" not in event:
            continue
        end = events[n + 1] if n + 1 < len(events) and "end" in events[n + 1] else None
        if end is not None and isinstance(end.get("usage"), dict):
            _add(total, {"usage": end["usage"]})
        elif not _index(event.get("requests")):  # killed before sessions recorded their requests
            later = [e["line"] for e in events[n + 1 :] if "start" in e]
            _add(total, *(_decoded(x) for x in lines[event["line"] : later[0] if later else None]))
    # Every killed session's requests, one killed before its start line (in prepare) included:
    # an ended session took its own lines out (RequestLog.end).
    _add_requests(total, requests)
    return total.to_dict()


def _lines(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n") if path.is_file() else []


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _add_requests(total: Usage, lines: list[bytes]) -> None:
    """Add ``requests.jsonl`` lines; any other line is skipped.

    A line is ``[model, prompt, completion]``, then cache read and write where any.
    """
    for raw in lines:
        try:
            model, prompt, completion, *cache = json.loads(raw.decode("utf-8"))
            prompt, completion = int(prompt), int(completion)
            read, write = (int(x) for x in cache) if len(cache) == 2 else (0, 0)
        except (ValueError, TypeError):
            continue
        total.sent += 1
        total.prompt_tokens += prompt
        total.completion_tokens += completion
        agg = total.by_model.setdefault(str(model), {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
        agg["sent"] += 1
        agg["prompt_tokens"] += prompt
        agg["completion_tokens"] += completion
        for key, value in (("cache_read_tokens", read), ("cache_write_tokens", write)):
            if value:
                agg[key] = agg.get(key, 0) + value


def _events(run_dir: Path) -> list[dict[str, Any]]:
    """The session events of ``sessions.jsonl``; a line that is not one is skipped and named once."""
    path = run_dir / "sessions.jsonl"
    events, bad = read_jsonl(path, session_problem)
    if bad:
        _warn_once(skipped_text(path, bad))
    return events


def _warn_once(line: str) -> None:
    if line not in _warned:
        _warned.add(line)
        logger.warning(line)


_warned: set[str] = set()


def _decoded(line: bytes) -> Any:
    """A result line's record (None: not UTF-8 JSON, or not a result)."""
    try:
        row = json.loads(line.decode("utf-8"))
    except ValueError:
        return None
    return None if result_problem(row) else row


def _add(total: Usage, *rows: Any) -> None:
    for row in rows:
        u = row.get("usage") if isinstance(row, dict) else None
        if not isinstance(u, dict):
            continue
        total.sent += int(u.get("sent", 0))
        total.prompt_tokens += int(u.get("prompt_tokens", 0))
        total.completion_tokens += int(u.get("completion_tokens", 0))
        for model, counts in (u.get("by_model") or {}).items():
            agg = total.by_model.setdefault(model, {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
            for key, value in counts.items():  # the provider's cache counts too, where it served any
                if isinstance(value, int):
                    agg[key] = agg.get(key, 0) + value


def spend_summary(run_dir: Path, session: Mapping[str, Any], prices: Any = None) -> dict[str, Any]:
    """The summary's spend: the whole folder's requests, tokens and dollars, and this session's.

    ``training_*`` are the part spent fitting the program on the train split (``prepare.json``),
    left out of per-example figures (:func:`evaluation_spend`).
    """
    folder = folder_spend(run_dir)
    training = _read_usage(run_dir / "prepare.json")
    table = user_prices({**(folder.get("by_model") or {}), **(training.get("by_model") or {})}, prices)

    def dollars(usage: Mapping[str, Any]) -> float | None:
        return Usage(by_model={k: dict(v) for k, v in (usage.get("by_model") or {}).items()}).cost(table)

    return {
        "training_sent": int(training.get("sent", 0)),
        "training_tokens": int(training.get("prompt_tokens", 0)) + int(training.get("completion_tokens", 0)),
        "training_cost": dollars(training) if training else None,
        "sent": folder["sent"],
        "prompt_tokens": folder["prompt_tokens"],
        "completion_tokens": folder["completion_tokens"],
        "tokens": folder["prompt_tokens"] + folder["completion_tokens"],
        "cost": dollars(folder),
        "session": {
            "sent": int(session.get("sent", 0)),
            "tokens": int(session.get("prompt_tokens", 0)) + int(session.get("completion_tokens", 0)),
            "cost": dollars(session),
        },
    }


def _read_usage(path: Path) -> dict[str, Any]:
    try:
        usage = json.loads(path.read_bytes().decode("utf-8")).get("usage")
    except (OSError, ValueError, AttributeError):
        return {}
    return usage if isinstance(usage, dict) else {}


def evaluation_spend(summary: Mapping[str, Any]) -> dict[str, Any]:
    """``sent``, ``tokens`` and ``cost`` of a summary without the training calls (per-example figures)."""
    cost, training_cost = summary.get("cost"), summary.get("training_cost")
    return {
        "sent": (summary.get("sent") or 0) - (summary.get("training_sent") or 0),
        "tokens": (summary.get("tokens") or 0) - (summary.get("training_tokens") or 0),
        "cost": cost - training_cost if cost is not None and training_cost is not None else cost,
    }


def earlier_wall(run_dir: Path) -> float:
    """Seconds the earlier sessions of a run took; an interrupted one ends at its last result."""
    path, results = run_dir / "sessions.jsonl", run_dir / "results.jsonl"
    if not path.is_file():
        return 0.0
    last_write = results.stat().st_mtime if results.is_file() else 0.0
    total, start = 0.0, None
    for event in _events(run_dir):
        if "start" in event:
            if start is not None:
                total += max(0.0, min(last_write, event["start"]) - start)
            start = event["start"]
        elif "end" in event and start is not None:
            total += event["end"] - start
            start = None
    if start is not None:
        total += max(0.0, last_write - start)
    return total
