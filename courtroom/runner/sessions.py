"""A run folder's sessions: when each ran and what it sent, and the folder's spend over all of them.

``sessions.jsonl`` gets one line when a session starts (with the number of result lines before
it) and one when it stops, however it stops, with the requests and tokens it sent (from the
process's request tally, retries and examples cut off by a stop included). The summary's spend
is the folder's: the sum over sessions; a session killed before its end line counts the usage of
the result lines it wrote.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from courtroom._files import append_line, read_jsonl
from courtroom.eval.metrics import user_prices
from courtroom.models.usage import Usage

logger = logging.getLogger(__name__)


def session(run_dir: Path, event: str, **fields: Any) -> None:
    """Append a session event (``start`` or ``end``) with ``fields``."""
    append_line(run_dir / "sessions.jsonl", {event: time.time(), **fields})


def line_count(path: Path) -> int:
    """Lines in ``path`` (0 when it does not exist)."""
    return path.read_bytes().count(b"\n") if path.is_file() else 0


def end_session(run_dir: Path, usage: Mapping[str, Any]) -> None:
    """The session's end and what it sent, written on every stop (a full disk here must not hide the first error)."""
    try:
        session(run_dir, "end", usage=dict(usage))
    except OSError as exc:
        logger.warning("could not record the end of the session in %s: %s", run_dir / "sessions.jsonl", exc)


def folder_spend(run_dir: str | Path) -> dict[str, Any]:
    """Requests and tokens of every session of a run folder, retries and replaced attempts included.

    A session records what it sent at its end; a session that ended without a record (killed)
    counts the usage of the result lines it wrote.
    """
    run_dir = Path(run_dir)
    events = [e for e in read_jsonl(run_dir / "sessions.jsonl")[0] if isinstance(e, dict)]
    lines = (run_dir / "results.jsonl").read_bytes().split(b"\n") if (run_dir / "results.jsonl").is_file() else []
    starts = [e for e in events if "start" in e]
    total = Usage()
    if not starts or any("line" not in e for e in starts):
        _add(total, *(_decoded(x) for x in lines))  # written before sessions recorded their spend
        return total.to_dict()
    for n, event in enumerate(events):
        if "start" not in event:
            continue
        end = events[n + 1] if n + 1 < len(events) and "end" in events[n + 1] else None
        if end is not None and isinstance(end.get("usage"), dict):
            _add(total, {"usage": end["usage"]})
            continue
        later = [e["line"] for e in events[n + 1 :] if "start" in e]
        _add(total, *(_decoded(x) for x in lines[event["line"] : later[0] if later else None]))
    return total.to_dict()


def _decoded(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except ValueError:
        return None


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
            for key in agg:
                agg[key] += int(counts.get(key, 0))


def spend_summary(run_dir: Path, session: Mapping[str, Any], prices: Any = None) -> dict[str, Any]:
    """The summary's spend: the whole folder's requests, tokens and dollars, and this session's."""
    folder = folder_spend(run_dir)
    table = user_prices(folder.get("by_model") or {}, prices)

    def dollars(usage: Mapping[str, Any]) -> float | None:
        return Usage(by_model={k: dict(v) for k, v in (usage.get("by_model") or {}).items()}).cost(table)

    return {
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


def earlier_wall(run_dir: Path) -> float:
    """Seconds the earlier sessions of a run took; an interrupted one ends at its last result."""
    path, results = run_dir / "sessions.jsonl", run_dir / "results.jsonl"
    if not path.is_file():
        return 0.0
    last_write = results.stat().st_mtime if results.is_file() else 0.0
    total, start = 0.0, None
    for event in read_jsonl(path)[0]:
        if not isinstance(event, dict):
            continue
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
