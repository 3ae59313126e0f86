"""Batch mode (``--batch``) for ``anthropic/`` models, against the fake server's Message Batches endpoints.

The fake answers every Message Batches line through the same chat logic as a live request, so an
``anthropic/`` batch run and an ``openai/`` live run on the same oracle get the same answers;
``server.messages.params`` holds every line's params as sent, ``server.batches.created`` every
batch accepted, and ``server.sent`` every request answered (by its message list).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from _output import unwrapped

from courtroom import _stop
from courtroom.data.tasks import load_splits
from courtroom.errors import ModelError
from courtroom.models.batch import AnthropicBatches, recorded
from courtroom.runner.runs import load_run
from courtroom.testing import FakeServer, fault_prompts, oracle_responder
from courtroom.testing._fake_messages import chat_body

KEY = "sk-ant-test-0123456789abcdef"


@pytest.fixture(autouse=True)
def anthropic_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))


def oracle(accuracy: float = 0.7) -> Any:
    _, splits, _ = load_splits("boolean_expressions", seed=0)
    gold = {ex.case: ex.label for examples in splits.values() for ex in examples}
    return oracle_responder(gold, ["True", "False"], accuracy, seed=1)


def _rows(folder: Path) -> dict[str, Any]:
    return {r["id"]: r["prediction"] for r in load_run(next(folder.iterdir()))[1]}


def _written(folder: Path) -> str:
    return "\n".join(p.read_text(errors="replace") for p in folder.rglob("*") if p.is_file())


def test_the_fake_speaks_message_batches() -> None:
    """Create, poll, read results, expiry and cancel, as Anthropic documents them, through the client."""
    body = {"model": "m", "max_tokens": 64, "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]}
    bad = {**body, "messages": [{"role": "user", "content": "bad"}]}
    with FakeServer(turnaround=0.2, expire={2}, fault_for=lambda p, s: "500" if p == "bad" else None) as server:
        client = AnthropicBatches(server.url, KEY)
        first = client.submit([("r1-1", body), ("r1-2", bad)], {"courtroom_round": "1"})
        assert (first.status, first.total, first.done) == ("in_progress", 2, False)  # metadata dropped: else a 400
        while not (done := client.status(first.id)).done:
            time.sleep(0.02)
        assert (done.status, done.completed, done.failed) == ("completed", 1, 1)
        answers = client.results(done)
        assert done.results_url is not None
        raw = httpx.get(done.results_url, headers={"x-api-key": KEY, "anthropic-version": "2023-06-01"}).text
        assert {json.loads(line)["custom_id"]: json.loads(line)["result"]["type"] for line in raw.splitlines()} == {
            "r1-1": "succeeded",
            "r1-2": "errored",  # a per-line failure, as Anthropic reports it
        }
        message = answers["r1-1"]["response"]["body"]
        assert answers["r1-1"]["response"]["status_code"] == 200 and message["type"] == "message"
        assert json.loads(message["content"][0]["text"]) == {} and message["stop_reason"] == "end_turn"
        assert set(message["usage"]) == {"input_tokens", "output_tokens"}
        assert answers["r1-2"]["response"]["status_code"] == 500  # errored: a failed line, retried
        assert answers["r1-2"]["response"]["body"]["error"]["code"] == "api_error"
        second = client.submit([("x", body), ("y", body)], {})
        while not (ended := client.status(second.id)).done:
            time.sleep(0.02)
        assert ended.status == "expired" and ended.completed == 1
        assert client.results(ended)["y"]["error"]["code"] == "batch_expired"  # sent again, uncounted
        third = client.submit([("z", body)], {})
        cancelled = client.cancel(third.id)
        assert cancelled.status == "cancelled" and client.results(cancelled)["z"]["error"]["code"] == "batch_cancelled"
        with pytest.raises(ModelError, match="custom_id"):
            client.submit([("not a valid id!", body)], {})
        assert server.counts["requests"] == 0 and server.counts["batch_lines"] == 3  # r1-1, r1-2, x
        assert server.batches.cancelled == [third.id]
        assert {(h["x-api-key"], h["anthropic-version"]) for h in server.messages.headers} == {(KEY, "2023-06-01")}


def test_anthropic_batch_equals_openai_live(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """anthropic/ in batch mode: the verdicts, requests and prompts of anthropic/ and openai/ live; a batch a round."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/m": [3.0, 15.0], "anthropic/m": [3.0, 15.0]}))
    common = ["run", "jot", "--limit", "6", "--prices", str(prices)]
    runs = {}
    for mode, lm in (("live", "openai/m"), ("claude-live", "anthropic/m"), ("batch", "anthropic/m")):
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
        with FakeServer(oracle(), turnaround=0.05) as server:
            extra = ["--batch"] if mode == "batch" else []
            done = cli(*common, "--lm", lm, "--api-base", server.url, "--out", str(tmp_path / mode), *extra)
            assert done.returncode == 0, done.stderr
            run_dir = next((tmp_path / mode).iterdir())
            runs[mode] = SimpleNamespace(server=server, run=run_dir, rows=_rows(tmp_path / mode),
                                         summary=load_run(run_dir)[2], url=server.url)  # fmt: skip
    live, batch, claude = runs["live"], runs["batch"], runs["claude-live"]
    assert batch.rows == live.rows == claude.rows and all(p is not None for p in batch.rows.values())
    assert claude.server.sent == live.server.sent and claude.server.counts["batch_lines"] == 0  # the live route
    assert batch.server.counts["requests"] == 0 and live.server.counts["batch_lines"] == 0
    assert batch.server.sent == live.server.sent  # the same requests, each sent once, as live
    assert batch.summary["sent"] == live.summary["sent"] == batch.server.counts["batch_lines"]
    assert batch.summary["cost"] == pytest.approx(live.summary["cost"] / 2)
    # Each line's params carry the role's system prompt and messages: exactly what the role sent live.
    params = batch.server.messages.params
    assert len(params) == batch.server.counts["batch_lines"]
    for p in params:
        assert p["model"] == "m" and p["system"] and all(m["role"] != "system" for m in p["messages"])
        assert json.dumps(chat_body(p)["messages"], sort_keys=True) in live.server.sent
    assert any("judge" in p["system"].lower() for p in params)
    # One batch per round, each recorded as ended, as Anthropic's.
    made = recorded(batch.run)
    assert [r["id"] for r in made] == [b for b, _ in batch.server.batches.created]
    assert [r["round"] for r in made] == list(range(1, len(made) + 1))
    assert all(r["status"] == "completed" and r["provider"] == "anthropic" for r in made)
    written = _written(batch.run)
    assert KEY not in written and batch.url not in written and batch.url.split("//")[1].split("/")[0] not in written


def test_stopped_with_a_batch_in_flight_resumes_without_resubmitting(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Stopped while a Message Batch is in flight; --resume collects it instead of sending its lines again.

    Two models (the judge's own) reach one batch API: the resume follows the batches with one client.
    """
    args = ["run", "jot", "--lm", "anthropic/m", "--role", "judge=anthropic/j", "--limit", "4", "--batch"]
    args += ["--loops", "1"]
    with FakeServer(oracle(), turnaround=0.05) as whole:
        done = cli(*args, "--api-base", whole.url, "--out", str(tmp_path / "whole"))
        assert done.returncode == 0, done.stderr
    expected = _rows(tmp_path / "whole")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache-stopped"))
    with FakeServer(oracle(), turnaround=0.6) as server:

        def stop_when_submitted() -> None:
            while not server.batches.created:
                time.sleep(0.01)
            _stop.request_stop()

        threading.Thread(target=stop_when_submitted, daemon=True).start()
        try:
            cli(*args, "--api-base", server.url, "--out", str(tmp_path / "runs"))
        finally:
            _stop.reset()
        run_dir = next((tmp_path / "runs").iterdir())
        assert [r["status"] for r in recorded(run_dir)] == [None] and server.counts["batch_lines"] == 0
        first = server.batches.created[0]
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    assert _rows(tmp_path / "runs") == expected
    assert server.sent == whole.sent  # every request exactly as often as in the uninterrupted run
    assert server.batches.created[0] == first and recorded(run_dir)[0]["status"] == "completed"
    assert sum(n for _, n in server.batches.created) == sum(n for _, n in whole.batches.created)
    assert [r["id"] for r in recorded(run_dir)] == [b for b, _ in server.batches.created]
    assert {p["model"] for p in server.messages.params} == {"m", "j"}


def test_errored_lines_and_an_expired_batch(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """Errored lines retry in later batches, then fail their case; an expired batch resends only its unanswered half."""
    bad = fault_prompts(0.1, "500", seed=2)
    with FakeServer(oracle(), turnaround=0.05, fault_for=bad, expire={2}) as server:
        args = ["run", "jot", "--lm", "anthropic/m", "--limit", "8", "--batch", "--api-base", server.url]
        done = cli(*args, "--out", str(tmp_path / "runs"), "--fail-on-error", "1")
        assert done.returncode == 0, done.stderr
    run_dir = next((tmp_path / "runs").iterdir())
    _, rows, summary = load_run(run_dir)
    assert summary is not None and len(rows) == 8
    failed = [r for r in rows if r["prediction"] is None]
    assert failed and all("batch line failed" in str(r["error"]) for r in failed)
    assert summary["failures"] == len(failed) and summary["n"] == 8
    assert summary["sent"] == server.counts["batch_lines"] == server.counts["ok"] + server.counts["500"]
    expired = server.batches.created[1]
    assert recorded(run_dir)[1]["status"] == "expired"
    unanswered = expired[1] - expired[1] // 2
    assert sum(n for _, n in server.batches.created) == server.counts["batch_lines"] + unanswered
    assert max(server.sent.values()) <= 4  # a failing request: sent once and retried 3 times, no more


def test_cancel_an_anthropic_batch(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """--resume RUN --cancel-batches cancels the Message Batch in flight; a resume then sends only the rest."""
    with FakeServer(oracle(), turnaround=600) as server:
        args = ["run", "zero-shot", "--lm", "anthropic/m", "--limit", "4", "--batch", "--api-base", server.url]

        def stop_when_submitted() -> None:
            while not server.batches.created:
                time.sleep(0.01)
            _stop.request_stop()

        threading.Thread(target=stop_when_submitted, daemon=True).start()
        try:
            cli(*args, "--out", str(tmp_path / "runs"))
        finally:
            _stop.reset()
        run_dir = next((tmp_path / "runs").iterdir())
        done = cli("run", "--resume", str(run_dir), "--cancel-batches", "--api-base", server.url)
        assert done.returncode == 0, done.stderr
        assert server.batches.cancelled == [b for b, _ in server.batches.created] and "cancelled 1" in done.stderr
        assert [r["status"] for r in recorded(run_dir)] == ["cancelled"]
        server.batches.turnaround = 0.05
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url)
        assert done.returncode == 0, done.stderr
    assert len(server.batches.created) == 2 and server.counts["batch_lines"] == 4
    assert all(r["prediction"] is not None for r in load_run(run_dir)[1])


NO_API = "--batch: ollama_chat/x has no batch API"


@pytest.mark.parametrize(
    ("models", "unset", "named"),
    [
        (["--lm", "ollama_chat/x"], False, NO_API),
        (["--lm", "anthropic/m", "--role", "classifier=ollama_chat/x"], False, NO_API),
        (["--lm", "anthropic/m", "--role", "classifier=openai/j"], False, "and openai/j (an OpenAI batch API)"),
        (["--lm", "anthropic/m"], True, "--batch: anthropic/m needs ANTHROPIC_API_KEY"),
    ],
)
def test_refused_before_anything(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch, models: list[str], unset: bool, named: str
) -> None:
    """A model without a batch API, mixed batch APIs and a missing key: one line, exit 2, nothing sent or made."""
    if unset:
        monkeypatch.delenv("ANTHROPIC_API_KEY")
    with FakeServer() as server:
        done = cli("run", "zero-shot", *models, "--limit", "2", "--batch", "--api-base", server.url,
                   "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 2
    assert named in " ".join(done.stderr.split()) and len(unwrapped(done.stderr.strip())) == 1, done.stderr
    assert server.counts["requests"] == 0 and not server.batches.created
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
