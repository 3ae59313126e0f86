"""``sent`` after a SIGKILL and a resume: what the provider answered, each request counted once.

A killed session writes no end line, so its requests are read from ``requests.jsonl`` (one line
per request answered, written as the answer arrives). The child is a real process killed with
SIGKILL (the process boundary is the point); the fake server counts what it answered.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import warm
from _oracle import oracle

from courtroom.models.batch import recorded
from courtroom.runner.runs import load_run
from courtroom.testing import FakeServer

RUN = ("run", "jot", "--lm", "openai/m", "--limit", "8", "--loops", "1")
"""Three requests a case (two advocates, a judge), no two alike."""


COT = ("run", "cot", "--lm", "openai/m", "--limit", "6")
"""One request a case, after 3 that write its demos on the train split (``prepare``) before the first case."""


def _until(ready: Callable[[], bool], child: Any, what: str) -> None:
    deadline = time.monotonic() + 60
    while not ready():
        assert child.poll() is None, f"the child ended before {what}"
        assert time.monotonic() < deadline, f"no {what} within 60 s"
        time.sleep(0.01)


def _child(tmp_path: Path, server: FakeServer, *extra: str, run: tuple[str, ...] = RUN) -> Any:
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    args = [sys.executable, "-m", "courtroom.cli", *run, "--api-base", server.url, "--out", str(tmp_path / "runs")]
    return warm.Popen([*args, *extra], env=env, stdout=warm.subprocess.DEVNULL, stderr=warm.subprocess.DEVNULL)


def _folder(tmp_path: Path) -> Path | None:
    folders = list((tmp_path / "runs").glob("*")) if (tmp_path / "runs").is_dir() else []
    return folders[0] if folders else None


@pytest.mark.parametrize("point", ["first batch in flight", "second batch in flight"])
def test_killed_in_batch_mode_then_resumed_counts_every_answered_line_once(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, point: str
) -> None:
    """Killed while a batch waits at the provider, before or after the first round's answers were read.

    After: the killed session was answered the first round (no case finished, so no result line
    holds it); before the fix ``sent`` counted only the resume's lines (8 of 24).
    """
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.05")
    with FakeServer(oracle(), turnaround=1.0) as server:
        child = _child(tmp_path, server, "--batch")
        try:

            def at_point() -> bool:
                folder = _folder(tmp_path)
                batches = recorded(folder) if folder else []
                if point == "first batch in flight":
                    return len(batches) == 1
                return len(batches) >= 2 and batches[0]["status"] is not None

            _until(at_point, child, point)
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        run_dir = _folder(tmp_path)
        assert run_dir is not None and not (run_dir / "summary.json").exists()
        first = server.counts["batch_lines"]
        assert (first > 0) == (point == "second batch in flight")
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    summary = load_run(run_dir)[2]
    assert max(server.sent.values()) == 1, "a line was answered twice"
    assert summary["sent"] == server.counts["batch_lines"] > first
    assert server.counts["requests"] == 0


@pytest.mark.parametrize(
    ("design", "concurrency", "hold_at"),
    [(RUN, 2, 7), (COT, 1, 5), (COT, 1, 2)],
    ids=["jot: cases cut mid-way", "cot: after its demos were written", "cot: while writing its demos"],
)
def test_killed_live_run_then_resumed_counts_every_answer_once(
    tmp_path: Path,
    cli: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    design: tuple[str, ...],
    concurrency: int,
    hold_at: int,
) -> None:
    """Killed mid-run with requests in flight: ``sent`` is every answer that reached courtroom, once.

    The requests held in flight at the kill are answered after the child is dead (their answers
    reach no one, and the resume sends them again): they are the only answers not counted. jot's
    7th answer leaves a case without its result line; cot's 5th comes after the 3 requests that
    wrote its demos on the train split (``prepare``), which no result line holds either, and its
    2nd before the session's start line.
    """
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    answer, seen = oracle(), []

    def holding(prompt: str, schema: dict[str, Any]) -> Any:  # this answer holds those after it
        seen.append(prompt)
        if len(seen) == hold_at:
            server.hold()
        return answer(prompt, schema)

    with FakeServer(holding, latency=0.02) as server:
        child = _child(tmp_path, server, "--concurrency", str(concurrency), run=design)
        try:
            # Held at the gate (arrived, not answered): every request slot of the child waits on one, so
            # every answer before them has reached it; then a moment for its last count to be written.
            # The gate first: requests in flight for their 0.02 s alone once made the count, the child
            # was killed before the gate, and the resume's own hold_at-th request then held it for good.
            _until(lambda: len(seen) >= hold_at, child, "the gate")
            _until(lambda: server.counts["requests"] - sum(server.sent.values()) == concurrency, child, "requests held")
            time.sleep(0.2)
            answered = sum(server.sent.values())
            held = server.counts["requests"] - answered
            child.send_signal(signal.SIGKILL)
        finally:
            child.wait()
        server.release()
        deadline = time.monotonic() + 5
        while server.in_flight and time.monotonic() < deadline:
            time.sleep(0.01)
        run_dir = _folder(tmp_path)
        assert run_dir is not None and not (run_dir / "summary.json").exists()
        rows = load_run(run_dir)[1]
        assert answered > sum(r["usage"]["sent"] for r in rows)  # answers no result line holds
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    summary = load_run(run_dir)[2]
    assert held == concurrency  # answered after the kill, to no one (the resume sent them again)
    assert sum(server.sent.values()) == answered + held + summary["session"]["sent"]
    assert summary["sent"] == sum(server.sent.values()) - held


def test_killed_sessions_count_their_request_lines_and_ended_ones_their_end_line(tmp_path: Path) -> None:
    """On disk, as kills and clean ends leave it: each request once, and nothing kept after a clean end."""
    from courtroom.models._requests import WIRE, since
    from courtroom.runner.sessions import REQUESTS, end_session, folder_spend, requests_recorded, session

    def session_of(answers: int, *, killed: bool, started: bool = True) -> None:
        before = WIRE.snapshot()
        with requests_recorded(tmp_path) as log:
            for n in range(answers):
                if n == 1 and started:  # the first request prepares the program, before the start line
                    session(tmp_path, "start", line=0, requests=log.start)
                WIRE.add("openai/m", {"prompt_tokens": 10, "completion_tokens": 2})
            if not killed and end_session(tmp_path, since(before)):  # a kill writes no end line
                log.end()

    session_of(2, killed=False)
    assert not (tmp_path / REQUESTS).exists()  # an ended session keeps no request lines
    session_of(3, killed=True)
    session_of(4, killed=False)
    session_of(6, killed=True, started=False)  # killed while preparing: no start line
    session_of(5, killed=True)
    assert len((tmp_path / REQUESTS).read_bytes().splitlines()) == 3 + 6 + 5
    assert (before := folder_spend(tmp_path))["sent"] == 2 + 3 + 4 + 6 + 5
    session_of(7, killed=False)  # what a finished resume sees: its own end line beside the killed ones' lines
    spend = folder_spend(tmp_path)
    assert (spend["sent"], spend["prompt_tokens"], spend["completion_tokens"]) == (27, 270, 54)
    assert spend["by_model"] == {"openai/m": {"sent": 27, "prompt_tokens": 270, "completion_tokens": 54}}
    assert before["sent"] + 7 == 27
