"""Batch mode (``--batch``) against the fake server's OpenAI Files and Batches endpoints.

The fake answers every batch line through its chat logic, so a batch run and a live run of the
same design on the same oracle get the same answers; ``server.batches.lines`` counts each
request sent in any batch, so "sent exactly once" is checked by the server, not by us.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
import warm
from _oracle import oracle
from _output import unwrapped

from courtroom.comparison.plots import comparison_runs
from courtroom.models.batch import OpenAIBatches, recorded, unsettled
from courtroom.runner.runs import load_run
from courtroom.testing import FakeServer, fault_prompts

DESIGNS = ("jot", "courtroom-llm", "debate-feedback", "settle", "self-consistency")


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")


def test_the_fake_speaks_openai_batches() -> None:
    """Upload, create, poll, read: statuses, request counts, output and error files, expiry, cancel."""
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    with FakeServer(turnaround=0.2, expire={2}, fault_for=lambda p, s: "500" if p == "bad" else None) as server:
        client = OpenAIBatches(server.url, "sk-fake")
        bad = {"model": "m", "messages": [{"role": "user", "content": "bad"}]}
        first = client.submit([("a", body), ("b", bad)], {})
        assert first.status == "validating" and first.total == 2
        assert client.status(first.id).status == "in_progress"
        while not (done := client.status(first.id)).done:
            time.sleep(0.02)
        assert (done.status, done.completed, done.failed) == ("completed", 1, 1)
        answers = client.results(done)
        assert answers["a"]["response"]["status_code"] == 200
        assert json.loads(answers["a"]["response"]["body"]["choices"][0]["message"]["content"]) == {}
        assert answers["b"]["response"]["status_code"] == 500
        second = client.submit([("x", body), ("y", body)], {})
        while not (ended := client.status(second.id)).done:
            time.sleep(0.02)
        assert ended.status == "expired" and ended.completed == 1
        assert client.results(ended)["y"]["error"]["code"] == "batch_expired"
        third = client.submit([("z", body)], {})
        assert client.cancel(third.id).status == "cancelled"
        assert server.counts["requests"] == 0 and server.counts["batch_lines"] == 3  # a, b, x: answered lines only
        assert server.batches.cancelled == [third.id]


def _predictions(folder: Path) -> dict[str, dict[str, Any]]:
    out = {}
    for design, run in comparison_runs(folder).items():
        _, rows, summary = load_run(run)
        out[design] = {"predictions": {r["id"]: r["prediction"] for r in rows}, "summary": summary, "run": run}
    return out


def test_compare_batch_equals_live(tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    """Same verdicts and requests as the live path; each design's rounds go out as one batch per stage."""
    common = ["compare", "--frameworks", ",".join(DESIGNS), "--lm", "openai/m", "--limit", "8",
              "--no-matched-baselines", "--train-limit", "3"]  # fmt: skip
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/m": [0.15, 0.6]}))
    common += ["--prices", str(prices)]
    runs = {}
    for mode in ("live", "batch"):
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
        with FakeServer(oracle(), turnaround=0.05) as server:
            extra = ["--batch"] if mode == "batch" else []
            done = cli(*common, "--api-base", server.url, "--out", str(tmp_path / mode), *extra)
            assert done.returncode == 0, done.stderr
            runs[mode] = SimpleNamespace(server=server, rows=_predictions(next((tmp_path / mode).iterdir())))
    live, batch = runs["live"], runs["batch"]
    assert live.server.counts["batch_lines"] == 0 and batch.server.counts["requests"] == 0
    assert batch.server.counts["batch_lines"] == live.server.counts["requests"]
    assert batch.server.sent == live.server.sent  # the same requests, each as often as live
    for design in DESIGNS:
        assert batch.rows[design]["predictions"] == live.rows[design]["predictions"], design
        assert batch.rows[design]["summary"]["sent"] == live.rows[design]["summary"]["sent"], design
        paid, live_price = batch.rows[design]["summary"]["cost"], live.rows[design]["summary"]["cost"]
        assert batch.rows[design]["summary"]["live_cost"] == pytest.approx(live_price)
        assert paid == pytest.approx(live_price / 2)  # the batch price the summary shows
    # Batches per design: at most the stages of its critical path, preparation included.
    stages = {"jot": 6, "courtroom-llm": 3, "debate-feedback": 9, "settle": 3, "self-consistency": 2}
    for design in DESIGNS:
        made = recorded(batch.rows[design]["run"])
        assert 1 <= len(made) <= stages[design], (design, len(made))
        assert all(r["status"] == "completed" for r in made)
        # One batch per round: roles with LM objects of their own (a judge's temperature) join it.
        assert len(made) == len({r["round"] for r in made}), (design, [(r["round"], len(r["lines"])) for r in made])


def _run(cli: Callable[..., Any], *args: str) -> dict[str, str | None]:
    done = cli(*args)
    assert done.returncode == 0, done.stderr
    lines = (done.stdout + done.stderr).splitlines()
    folder = next(line.split(": ", 1)[1] for line in lines if line.startswith("run folder: "))
    return {r["id"]: r["prediction"] for r in load_run(folder)[1]}


def test_killed_with_batches_in_flight_resumes_without_paying_twice(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGKILL while batches are in flight; --resume follows them: each request reaches the fake once.

    Batches form as requests arrive (10 lines, then the rest in smaller ones), so the kill can land
    while a create is at the provider: the folder names that batch only by its intent's token, and
    the resume finds it by that token (tests/test_batch_orphans.py makes that moment certain).
    """
    args = ["run", "jot", "--lm", "openai/m", "--limit", "8", "--batch", "--loops", "1"]
    monkeypatch.setenv("COURTROOM_BATCH_LINES", "10")  # the 16 advocate requests go out as two batches or more
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache-whole"))
    with FakeServer(oracle(), turnaround=0.05) as whole:
        expected = _run(cli, *args, "--api-base", whole.url, "--out", str(tmp_path / "whole"))
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    with FakeServer(oracle(), turnaround=600) as server:  # no batch ends before the kill
        env = {**os.environ, "COURTROOM_BATCH_POLL": "0.05"}
        line = [sys.executable, "-m", "courtroom.cli", *args, "--api-base", server.url, "--out", str(tmp_path / "runs")]
        child = warm.Popen(line, env=env, stdout=warm.subprocess.DEVNULL, stderr=warm.subprocess.DEVNULL)
        deadline = time.monotonic() + 120

        def written() -> int:  # batches the child recorded as accepted
            return sum(len(recorded(d)) for d in (tmp_path / "runs").glob("*")) if (tmp_path / "runs").is_dir() else 0

        while written() < 2 and time.monotonic() < deadline and child.poll() is None:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        child.wait()
        run_dir = next((tmp_path / "runs").iterdir())
        in_flight, intents = recorded(run_dir), unsettled(run_dir)
        assert len(in_flight) >= 2 and all(r["status"] is None for r in in_flight)
        # Every batch the fake made is named by the folder: recorded, or (created as the kill landed) by its token.
        named = {r["id"] for r in in_flight} | {i["token"] for i in intents}
        made = {b: server.batches.batches[b]["metadata"]["courtroom_submission"] for b, _ in server.batches.created}
        assert all(b in named or token in named for b, token in made.items()), (made, named)
        assert server.counts["batch_lines"] == 0
        server.batches.turnaround = 0.05  # read at each look: the batches in flight end now
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        server.batches.run_all()  # the provider runs every batch it accepted, followed or not
    assert {r["id"]: r["prediction"] for r in load_run(run_dir)[1]} == expected
    assert server.sent == whole.sent  # every request exactly as often as in the uninterrupted run
    # Every accepted batch is recorded once, and no request went into two of them.
    assert [r["id"] for r in recorded(run_dir)] == [b for b, _ in server.batches.created]
    assert sum(n for _, n in server.batches.created) == sum(n for _, n in whole.batches.created)
    assert server.counts["requests"] == 0 and unsettled(run_dir) == []


def test_failing_lines_and_an_expired_batch(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Failed lines retry in later batches, then fail their case; an expired batch resends only its unanswered half."""
    bad = fault_prompts(0.1, "500", seed=2)  # the same 10% of requests fail on every attempt
    with FakeServer(oracle(), turnaround=0.05, fault_for=bad, expire={2}) as server:
        args = ["run", "jot", "--lm", "openai/m", "--limit", "8", "--batch", "--api-base", server.url]
        done = cli(*args, "--out", str(tmp_path / "runs"), "--fail-on-error", "1")
        assert done.returncode == 0, done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    _, rows, summary = load_run(run_dir)
    assert summary is not None and len(rows) == 8
    failed = [r for r in rows if r["prediction"] is None]
    assert failed and all("batch line failed" in str(r["error"]) for r in failed)
    assert summary["failures"] == len(failed) and summary["n"] == 8
    # Every line the fake answered is counted once, as a live request would be; the expired half is not.
    assert summary["sent"] == server.counts["batch_lines"] == server.counts["ok"] + server.counts["500"]
    expired = server.batches.created[1]
    assert recorded(run_dir)[1]["status"] == "expired"
    unanswered = expired[1] - expired[1] // 2
    assert sum(n for _, n in server.batches.created) == server.counts["batch_lines"] + unanswered
    assert max(server.sent.values()) <= 4  # a failing request: sent once and retried 3 times, no more


def test_max_cost_holds_in_batch_mode(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Each line is reserved before it joins a batch: what the fake billed stays within --max-cost."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/m": [100.0, 400.0]}))
    with FakeServer(oracle(), turnaround=0.05, faults={"500": 0.1}, seed=4) as server:
        args = ["run", "jot", "--lm", "openai/m", "--limit", "8", "--batch", "--api-base", server.url]
        done = cli(*args, "--out", str(tmp_path / "runs"), "--prices", str(prices), "--max-cost", "0.5")
    assert done.returncode == 3, done.stderr  # stopped at the budget, resumable
    billed = sum(p * 100e-6 + c * 400e-6 for _, p, c in server.billed)
    assert 0 < billed <= 0.5


def test_a_model_without_a_batch_api_is_refused_before_anything(tmp_path: Path, cli: Callable[..., Any]) -> None:
    done = cli("run", "zero-shot", "--lm", "local", "--limit", "2", "--batch", "--out", str(tmp_path / "runs"))
    assert done.returncode == 2
    assert (
        "--batch: local has no batch API" in " ".join(done.stderr.split()) and len(unwrapped(done.stderr.strip())) == 1
    )
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())


@pytest.mark.parametrize(
    "command",
    [
        ["run", "zero-shot", "--limit", "2"],
        ["compare", "--frameworks", "zero-shot,cot", "--limit", "2"],
        ["study", "zero-shot", "--trials", "2", "--dev-limit", "2"],
    ],
    ids=["run", "compare", "study"],
)
def test_the_dry_run_refuses_a_model_without_a_batch_api_as_the_run_would(
    command: list[str], cli: Callable[..., Any]
) -> None:
    """A dry run that priced a batch run the real run then refuses would mislead: both refuse, naming the model."""
    done = cli(*command, "--lm", "ollama_chat/m", "--batch", "--dry-run")
    assert done.returncode == 2, done.stdout
    assert "--batch: ollama_chat/m has no batch API" in done.stderr, done.stderr


def test_cancel_batches_in_flight(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """--resume RUN --cancel-batches cancels what the folder has in flight; a resume then sends only the rest."""
    with FakeServer(oracle(), turnaround=600) as server:
        args = ["run", "zero-shot", "--lm", "openai/m", "--limit", "4", "--batch", "--api-base", server.url]
        folder = tmp_path / "runs"
        import threading

        from courtroom import _stop

        def stop_when_submitted() -> None:
            while not server.batches.created:
                time.sleep(0.01)
            _stop.request_stop()

        threading.Thread(target=stop_when_submitted, daemon=True).start()
        try:
            cli(*args, "--out", str(folder))
        finally:
            _stop.reset()
        run_dir = next(folder.iterdir())
        assert [r["status"] for r in recorded(run_dir)] == [None]
        done = cli("run", "--resume", str(run_dir), "--cancel-batches", "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        assert server.batches.cancelled == [b for b, _ in server.batches.created] and "cancelled 1" in done.stderr
        assert [r["status"] for r in recorded(run_dir)] == ["cancelled"]
        server.batches.turnaround = 0.05
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    assert len(server.batches.created) == 2 and server.counts["batch_lines"] == 4
    assert all(r["prediction"] is not None for r in load_run(run_dir)[1])


@pytest.mark.parametrize("credentials", ["user:s3cret@", "query"])
def test_an_api_base_with_credentials_has_its_batch_api(
    tmp_path: Path, cli: Callable[..., Any], credentials: str
) -> None:
    """A proxy's URL (``user:password@`` or a query token) serves batch mode as it serves live requests."""
    with FakeServer(oracle(), turnaround=0.02) as server:
        url = (
            server.url.replace("http://", f"http://{credentials}")
            if credentials != "query"
            else server.url + "?token=s3cret"
        )
        args = ["run", "zero-shot", "--lm", "openai/m", "--limit", "3", "--batch", "--api-base", url]
        done = cli(*args, "--out", str(tmp_path / "runs"))
        assert done.returncode == 0, done.stderr
        live = cli(
            "run", "zero-shot", "--lm", "openai/m", "--limit", "3", "--api-base", url, "--out", str(tmp_path / "live")
        )
        assert live.returncode == 0, live.stderr
    assert len(server.batches.created) == 1 and server.counts["batch_lines"] == 3
    assert server.counts["requests"] == 0  # the live run's answers came from the cache the batch filled
    written = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert "s3cret" not in written and "s3cret" not in done.stderr + done.stdout


def test_the_summary_counts_batches_unpriced_and_in_words(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """``1 batch``, not ``1 batches``; and a model with no price still shows how many batches were sent."""
    with FakeServer(oracle(), turnaround=0.05) as server:
        done = cli("run", "zero-shot", "--lm", "openai/m", "--limit", "2", "--batch", "--api-base", server.url,
                   "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "n/a (1 batch)" in " ".join(done.stdout.split()), done.stdout


def test_a_resumed_batch_run_numbers_its_rounds_on(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The rounds of a resume follow the recorded ones (r3 after r1 and r2), not r1 again."""
    args = ["--lm", "openai/m", "--batch", "--out", str(tmp_path / "runs")]
    with FakeServer(oracle(), turnaround=0.02) as server:
        assert cli("run", "jot", "--loops", "1", "--limit", "2", *args, "--api-base", server.url).returncode == 0
        run_dir = next((tmp_path / "runs").iterdir())
        assert [r["round"] for r in recorded(run_dir)] == [1, 2]  # the advocates, then the judge
        # As if killed after round 1 was accepted: its batch is recorded, the judge's not yet sent.
        log = run_dir / "batches.jsonl"
        first = recorded(run_dir)[0]["id"]
        kept = [line for line in log.read_text().splitlines() if json.loads(line).get("id") == first]
        log.write_text("".join(line + "\n" for line in kept))
        (run_dir / "results.jsonl").write_text("")
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cold"))  # the judge's requests go out again
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
    assert done.returncode == 0, done.stderr
    assert [r["round"] for r in recorded(run_dir)] == [1, 2]  # r1 followed again, the judge's batch r2 (was r1)


def _chat_only(refusal: str) -> Any:
    """A server that is up (``GET`` answers) but has no batch routes: ``POST`` gets a 404 or no answer."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class ChatOnly(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"data": []}')

        def do_POST(self) -> None:  # noqa: N802
            if refusal == "404":
                self.send_response(404)
                self.end_headers()
                self.wfile.write(b"File Not Found")
            self.close_connection = True  # else: no answer at all, as the server did

        def log_message(self, *args: Any) -> None:
            pass

    return ThreadingHTTPServer(("127.0.0.1", 0), ChatOnly)


@pytest.mark.parametrize("refusal", ["drops the connection", "404"])
def test_a_server_that_is_up_without_a_batch_api_is_named_so(refusal: str) -> None:
    """llama.cpp's server answers chats but has no /v1/files: not "is the server up?", but "drop --batch"."""
    import threading

    from courtroom.errors import ModelError

    server = _chat_only(refusal)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        client = OpenAIBatches(f"http://127.0.0.1:{server.server_port}/v1", "sk-x", timeout=5)
        with pytest.raises(ModelError) as raised:
            client.submit([("a", {"model": "m", "messages": []})], {})
    finally:
        server.shutdown()
        server.server_close()
    text = str(raised.value)
    assert "POST /files" in text and "no batch API" in text and "drop --batch" in text, text
    assert "is the server up" not in text


def test_a_run_on_a_server_without_a_batch_api_says_so_once(
    tmp_path: Path, cli: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    """The issue's run printed the refusal three times (each retried line met it again)."""
    import logging
    import threading

    server = _chat_only("drops the connection")
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with caplog.at_level(logging.WARNING, logger="courtroom.models.batch"):
            done = cli("run", "zero-shot", "--lm", "openai/m", "--api-base", f"http://127.0.0.1:{server.server_port}/v1",
                       "--limit", "3", "--batch", "--out", str(tmp_path / "runs"))  # fmt: skip
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode != 0
    said = [r.getMessage() for r in caplog.records if "batch" in r.getMessage() and "POST /files" in r.getMessage()]
    assert len(said) == 1 and "drop --batch" in said[0], said
