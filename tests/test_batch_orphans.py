"""A process killed between the provider's create and its record: the batch is followed, never paid twice.

The child is a real process killed with SIGKILL (the process boundary is the point) at the one
moment that used to leave an orphan: the fake has made the batch (or, for the batch never made,
read the upload) and holds its answer (``batch_faults={"create": ["hold"]}``), so the child has
written its intent (``submitting``) and never learns the batch id. The resume finds the batch
by the intent's token and follows it; the fake counts what it answered (``server.sent``), so
"each request once" is checked by the provider, not by courtroom.
"""

from __future__ import annotations

import logging
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

from courtroom.models.batch import AnthropicBatches, recorded, unsettled
from courtroom.models.batch._openai import RETRIES
from courtroom.runner.runs import load_run
from courtroom.testing import FakeServer

JOT = ("run", "jot", "--lm", "openai/m", "--limit", "4", "--loops", "1", "--batch")
"""Two rounds: the 8 advocates' requests as one batch, then the 4 judges'."""

KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _whole(cli: Callable[..., Any], tmp_path: Path, args: tuple[str, ...]) -> tuple[FakeServer, dict[str, Any]]:
    """The uninterrupted run: what the fake answered, and the predictions."""
    with FakeServer(oracle(), turnaround=0.02) as server, pytest.MonkeyPatch.context() as m:
        m.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache-whole"))
        done = cli(*args, "--api-base", server.url, "--out", str(tmp_path / "whole"))
        assert done.returncode == 0, done.stderr
    return server, _predictions(next((tmp_path / "whole").iterdir()))


def _predictions(run_dir: Path) -> dict[str, Any]:
    return {r["id"]: r["prediction"] for r in load_run(run_dir)[1]}


def _killed_while_held(tmp_path: Path, server: FakeServer, args: tuple[str, ...]) -> Path:
    """Run ``args`` in a child; SIGKILL it while the fake holds a batch call's answer (its ``hold`` fault)."""
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake"}
    line = [sys.executable, "-m", "courtroom.cli", *args, "--api-base", server.url, "--out", str(tmp_path / "runs")]
    child = warm.Popen(line, env=env, stdout=warm.subprocess.DEVNULL, stderr=warm.subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not server.held.wait(0.05):
            assert child.poll() is None, "the child ended before the held call"
            assert time.monotonic() < deadline, "no held call within 60 s"
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait()
        server.release()  # the held answer goes to a dead connection
    return next((tmp_path / "runs").iterdir())


def test_a_batch_created_just_before_a_kill_is_followed_not_paid_twice(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Killed after the provider made the batch and before the run recorded it: the resume adopts it."""
    whole, expected = _whole(cli, tmp_path, JOT)
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"create": ["hold"]}) as server:
        run_dir = _killed_while_held(tmp_path, server, JOT)
        [(orphan, lines)] = server.batches.created
        assert recorded(run_dir) == []  # no batch id reached the folder: only the intent names it
        [intent] = unsettled(run_dir)
        assert server.batches.batches[orphan]["metadata"]["courtroom_submission"] == intent["token"]
        assert len(intent["lines"]) == lines == 8
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        server.batches.run_all()  # the provider runs every batch it accepted, followed or not
    assert _predictions(run_dir) == expected
    assert server.sent == whole.sent  # every request exactly as often as in the uninterrupted run
    assert [r["id"] for r in recorded(run_dir)] == [b for b, _ in server.batches.created]
    assert recorded(run_dir)[0]["id"] == orphan and recorded(run_dir)[0]["token"] == intent["token"]
    assert [n for _, n in server.batches.created] == [n for _, n in whole.batches.created]
    assert unsettled(run_dir) == [] and server.batch_calls["list"] == 1


def test_an_intent_whose_batch_was_never_made_sends_its_lines_as_usual(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Killed after the intent was written and before the create: the resume looks, finds none, sends."""
    whole, expected = _whole(cli, tmp_path, JOT)
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"upload": ["hold"]}) as server:
        run_dir = _killed_while_held(tmp_path, server, JOT)
        assert server.batches.created == [] and len(unsettled(run_dir)) == 1
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    assert server.batch_calls["list"] == 1  # looked for it once
    assert _predictions(run_dir) == expected and server.sent == whole.sent
    assert [n for _, n in server.batches.created] == [n for _, n in whole.batches.created]
    assert unsettled(run_dir) == []  # settled as never made: a later resume does not look again


def test_a_look_up_that_fails_sends_nothing_again_and_the_next_resume_adopts(
    tmp_path: Path, cli: Callable[..., Any]
) -> None:
    """The list call fails through its retries: the orphan's lines are withheld (fail, unsent), not resent."""
    whole, expected = _whole(cli, tmp_path, JOT)
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"create": ["hold"]}) as server:
        run_dir = _killed_while_held(tmp_path, server, JOT)
        server.batch_faults["list"] = ["500"] * (RETRIES + 1)
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url, "--fail-on-error", "1")
        assert done.returncode == 0, done.stderr
        assert len(server.batches.created) == 1 and not server.sent  # nothing sent again
        assert server.batch_calls["list"] == RETRIES + 1 and not server.batch_faults["list"]
        rows = load_run(run_dir)[1]
        assert rows and all(r["prediction"] is None for r in rows)
        assert all("could not be looked for" in str(r["error"]) for r in rows), rows[0]["error"]
        assert len(unsettled(run_dir)) == 1  # still open: the next resume looks again
        again = cli("run", "--resume", str(run_dir), "--retry-failed", "--api-base", server.url)
        assert again.returncode == 0, again.stderr
        server.batches.run_all()
    assert _predictions(run_dir) == expected and server.sent == whole.sent
    assert recorded(run_dir)[0]["id"] == server.batches.created[0][0] and unsettled(run_dir) == []
    assert [n for _, n in server.batches.created] == [n for _, n in whole.batches.created]


def test_an_anthropic_batch_that_cannot_be_found_is_named_once_and_not_resent(
    tmp_path: Path, cli: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """Message Batches carry no token: the resume says what to look for, once, and withholds the lines."""
    args = ("run", "zero-shot", "--lm", "anthropic/m", "--limit", "6", "--batch", "--fail-on-error", "1")
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"create": ["hold"]}) as server:
        run_dir = _killed_while_held(tmp_path, server, args)
        [(orphan, _)] = server.batches.created
        with caplog.at_level(logging.WARNING, logger="courtroom.models.batch"):
            done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        assert len(server.batches.created) == 1 and server.batch_calls["list"] == 0  # nothing resent, no look
        said = [r.getMessage() for r in caplog.records if "created at about" in r.getMessage()]
        assert len(said) == 1 and "a batch of 6 requests created at about" in said[0], said
        assert "GET /v1/messages/batches" in said[0] and "cancel it before a --retry-failed" in said[0]
        rows = load_run(run_dir)[1]
        assert len(rows) == 6 and all("a batch of 6 requests" in str(r["error"]) for r in rows)
        assert unsettled(run_dir) == []  # told once: settled as unconfirmed
        # The user cancels it (as the message says), then sends the lines again.
        assert AnthropicBatches(server.url, KEY).cancel(orphan).status == "cancelled"
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="courtroom.models.batch"):
            again = cli("run", "--resume", str(run_dir), "--retry-failed", "--api-base", server.url)
        assert again.returncode == 0, again.stderr
    assert not [r for r in caplog.records if "created at about" in r.getMessage()]  # not said again
    assert len(server.batches.created) == 2 and server.counts["batch_lines"] == 6
    assert all(r["prediction"] is not None for r in load_run(run_dir)[1])


def test_cancel_batches_cancels_a_batch_only_its_intent_names(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """--cancel-batches looks the orphan up by its token and cancels it; a resume then sends its lines afresh."""
    with FakeServer(oracle(), turnaround=600, batch_faults={"create": ["hold"]}) as server:
        run_dir = _killed_while_held(tmp_path, server, JOT)
        [(orphan, _)] = server.batches.created
        done = cli("run", "--resume", str(run_dir), "--cancel-batches", "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        assert server.batches.cancelled == [orphan] and f"batch {orphan} cancelled" in done.stderr
        assert [r["status"] for r in recorded(run_dir)] == ["cancelled"] and unsettled(run_dir) == []
        server.batches.turnaround = 0.02
        again = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert again.returncode == 0, again.stderr
    assert all(r["prediction"] is not None for r in load_run(run_dir)[1])
    assert server.counts["batch_lines"] == 12  # the 8 advocates (their cancelled batch answered none), 4 judges
