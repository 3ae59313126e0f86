"""Batch mode under every fault of the batch API: no line answered twice, ``sent`` = lines answered.

The fake injects each fault at each step of a batch's life (``FakeServer(batch_faults=...)``:
upload, create, status check, download) and ends batches as told (``batch_end``: expired,
cancelled, lines missing, failed). The server counts what it answered (``server.sent`` per
request, ``counts["batch_lines"]``), so "answered once" and "``sent`` is what was answered" are
checked against the provider, not against courtroom's own counts.
"""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _oracle import oracle

from courtroom.models.batch import OpenAIBatches, recorded
from courtroom.models.batch._collector import RESENDS
from courtroom.runner.runs import load_run
from courtroom.testing import FakeServer

KEY = "sk-ant-test-0123456789abcdef"
RUN = ("run", "zero-shot", "--lm", "openai/m", "--limit", "6", "--batch", "--fail-on-error", "1")
"""One batch of 6 lines, one per case (no two alike): every fault below meets the run's one batch."""


@pytest.fixture(autouse=True)
def quick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)


def _run(cli: Callable[..., Any], tmp_path: Path, server: FakeServer, *extra: str, model: str = "openai/m") -> Any:
    args = [*RUN, "--api-base", server.url, "--out", str(tmp_path / "runs"), *extra]
    args[args.index("openai/m")] = model
    done = cli(*args)
    folders = list((tmp_path / "runs").iterdir()) if (tmp_path / "runs").is_dir() else []
    done.folder = folders[0] if folders else None
    done.summary = load_run(folders[0])[2] if folders else None
    return done


def _answered_once(server: FakeServer) -> None:
    assert server.sent and max(server.sent.values()) == 1, "a line was answered twice"


@pytest.mark.parametrize(
    ("step", "fault"),
    [("upload", "500"), ("upload", "drop"), ("create", "500"), ("create", "lost"), ("create", "drop"),
     ("create", "429"), ("status", "500"), ("status", "drop"), ("download", "500"), ("download", "drop")],
)  # fmt: skip
def test_one_transient_fault_is_absorbed_and_nothing_is_paid_twice(
    tmp_path: Path, cli: Callable[..., Any], step: str, fault: str
) -> None:
    """One fault at one step: the client retries that call (a lost create is found, not made again)."""
    with FakeServer(oracle(), turnaround=0.05, batch_faults={step: [fault]}) as server:
        done = _run(cli, tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert not server.batch_faults[step]  # the fault was met
    # then the call was tried again, or (a create whose answer was lost) the batch was found
    assert server.batch_calls[step] == 2 if fault != "lost" else server.batch_calls["list"] == 1
    _answered_once(server)
    assert len(server.batches.created) == 1 and server.counts["batch_lines"] == 6
    assert done.summary["sent"] == 6 and done.summary["failures"] == 0
    assert [r["id"] for r in recorded(done.folder)] == [b for b, _ in server.batches.created]


@pytest.mark.parametrize("step", ["status", "download"])
def test_a_batch_that_cannot_be_followed_fails_its_lines_alone_and_a_resume_collects_it(
    tmp_path: Path, cli: Callable[..., Any], step: str
) -> None:
    """A status check or download that fails through every retry: no resend; the batch stays recorded."""
    with FakeServer(oracle(), turnaround=0.05, batch_faults={step: ["500"] * 40}) as server:
        done = _run(cli, tmp_path, server)
        assert done.returncode == 0, done.stderr
        assert len(server.batches.created) == 1  # never submitted again
        assert done.summary["failures"] == 6 and done.summary["sent"] == 0
        assert "could not be followed" in str(load_run(done.folder)[1][0]["error"])
        assert [r["status"] for r in recorded(done.folder)] == [None]  # not ended: a resume follows it
        server.batch_faults.clear()
        again = cli("run", "--resume", str(done.folder), "--retry-failed", "--api-base", server.url)
        assert again.returncode == 0, again.stderr
    _answered_once(server)
    assert len(server.batches.created) == 1
    summary = load_run(done.folder)[2]
    assert summary["failures"] == 0 and summary["sent"] == server.counts["batch_lines"] == 6


def test_a_failed_look_fails_only_its_batch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One batch's status check fails through every retry: only its line fails; the other batch's is answered."""
    from courtroom.models.batch import Collector

    body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
    with FakeServer(turnaround=0.05) as server:
        client = OpenAIBatches(server.url, "sk-fake")
        real = client.status
        monkeypatch.setattr(client, "status", lambda i: real(i) if i != server.batches.created[0][0] else 1 / 0)
        collector = Collector(poll=0.02, max_lines=1)
        answers: dict[str, Any] = {}
        with collector.forked(2) as leave:

            def ask(name: str) -> None:
                answers[name] = collector.ask(client, {**body, "messages": [{"role": "user", "content": name}]})
                leave()

            threads = [threading.Thread(target=ask, args=(name,)) for name in ("a", "b")]
            for t in threads:
                t.start()
            for t in threads:
                t.join(10)
        collector.close()
    assert len(server.batches.created) == 2  # one batch each, none sent again
    outcomes = sorted(bool(a.get("unsent")) for a in answers.values())
    assert outcomes == [False, True], answers


@pytest.mark.parametrize("ending", ["missing", "expired", "cancelled"])
def test_lines_never_answered_go_out_a_bounded_number_of_times(
    tmp_path: Path, cli: Callable[..., Any], ending: str
) -> None:
    """Every batch leaves its lines (or half of them) unanswered: each goes out at most RESENDS + 1 times."""
    with FakeServer(oracle(), turnaround=0.02, batch_end=lambda n: ending) as server:
        done = _run(cli, tmp_path, server, "--limit", "2")
    assert done.returncode == 0, done.stderr
    assert len(server.batches.created) <= RESENDS + 1
    _answered_once(server) if server.sent else None
    assert done.summary["sent"] == server.counts["batch_lines"]
    if ending != "expired":
        assert server.counts["batch_lines"] == 0 and done.summary["failures"] == 2


def test_a_failed_batch_counts_nothing_sent_and_its_lines_go_out_again(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """A batch that ends ``failed`` answered no line: ``sent`` counts only the next batch's answers."""
    with FakeServer(oracle(), turnaround=0.02, batch_end=lambda n: "failed" if n == 1 else None) as server:
        done = _run(cli, tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert len(server.batches.created) == 2
    _answered_once(server)
    assert done.summary["sent"] == server.counts["batch_lines"] == 6 and done.summary["failures"] == 0


def test_failed_submissions_are_not_counted_as_sent(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Uploads that fail through every retry: the lines go out in a later batch; ``sent`` counts that one only."""
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"upload": ["500"] * 4}) as server:
        done = _run(cli, tmp_path, server)
    assert done.returncode == 0, done.stderr
    assert len(server.batches.created) == 1 and server.batch_calls["upload"] == 5
    _answered_once(server)
    assert done.summary["sent"] == server.counts["batch_lines"] == 6 and done.summary["failures"] == 0


@pytest.mark.parametrize(("fault", "failures"), [("429", 0), ("drop", 6), ("500", 6), ("lost", 6)])
def test_anthropic_creates_once(tmp_path: Path, cli: Callable[..., Any], fault: str, failures: int) -> None:
    """Message Batches have no metadata to find a lost create by: only a refusal before the work is retried."""
    with FakeServer(oracle(), turnaround=0.02, batch_faults={"create": [fault]}) as server:
        done = _run(cli, tmp_path, server, model="anthropic/m")
    assert done.returncode == 0, done.stderr
    if server.sent:
        _answered_once(server)
    assert done.summary["failures"] == failures
    assert done.summary["sent"] == server.counts["batch_lines"]
    assert sum(n for _, n in server.batches.created) <= 6
    if failures:  # each failed case says what to look for, to cancel a batch that may exist before resending
        errors = [str(r["error"]) for r in load_run(done.folder)[1]]
        assert all("a batch of 6 requests created at about" in e for e in errors), errors
        assert all("GET /v1/messages/batches" in e and "sk-ant" not in e for e in errors)


def test_a_folder_deleted_mid_run_submits_no_further_batch(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """The run folder goes away after the first batch: nothing more is submitted; an unrecorded batch is cancelled."""
    runs = tmp_path / "runs"

    def end(n: int) -> None:  # the first batch's answers are read, then the folder is gone
        shutil.rmtree(next(runs.iterdir()), ignore_errors=True)

    with FakeServer(oracle(), turnaround=0.02, batch_end=end) as server:
        done = cli("run", "jot", "--lm", "openai/m", "--limit", "4", "--loops", "1", "--batch",
                   "--api-base", server.url, "--out", str(runs))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert len(server.batches.created) == 1, server.batches.created
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "deleted" in errors[0], done.stderr
