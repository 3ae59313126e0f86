"""Resume: an interrupted run, resumed, gives the uninterrupted run's table; nothing is sent twice."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import warm

from courtroom.cli import main
from courtroom.models.lms import RoleLMs
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer, answer_for_schema, fault_prompts

TABLE = ("n", "accuracy", "macro_f1", "failures", "per_class", "calls")


def responder(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Deterministic answers that depend on the prompt, so accuracy is neither 0 nor 1."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    values = {n: p["enum"][h % len(p["enum"])] for n, p in (schema.get("properties") or {}).items() if "enum" in p}
    return answer_for_schema(schema, values, f"argument {h % 997}")


@pytest.fixture()
def server():
    with FakeServer(responder, latency=0.01) as s:
        yield s


def _config(out: Path) -> RunConfig:
    return RunConfig("jot", "web_of_lies", limit=24, seed=3, knobs={"n_loops": 2}, concurrency=3, out=str(out))


def test_interrupted_then_resumed_equals_uninterrupted(server: FakeServer, tmp_path: Path) -> None:
    ref = run(_config(tmp_path / "ref"), lms=RoleLMs({"default": server.lm("openai/ref", cache=False)}))
    assert 0 < ref.summary["accuracy"] < 1 and ref.summary["calls"] == 24 * 6
    server.served.clear()
    lms = RoleLMs({"default": server.lm(f"openai/resume-{time.time_ns()}")})
    seen = []

    def stop_after_five(res: Any) -> None:
        seen.append(res.id)
        if len(seen) == 5:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(_config(tmp_path / "new"), lms=lms, progress=stop_after_five)
    (run_dir,) = (tmp_path / "new").iterdir()
    meta, partial, summary = load_run(run_dir)
    assert summary is None and len(partial) == 5 and len(meta["example_ids"]) == 24
    sent_before = len(server.served)
    assert sent_before < 24 * 6

    outcome = resume(run_dir, lms=lms)
    assert {k: outcome.summary[k] for k in TABLE} == {k: ref.summary[k] for k in TABLE}
    assert [r.prediction for r in outcome.results] == [r.prediction for r in ref.results]
    dupes = [p for p, c in Counter(server.served).items() if c > 1]
    assert not dupes  # no successful call was sent twice
    assert len(server.served) == 24 * 6  # and every call was sent exactly once over both sessions
    # The summary's spend is the folder's (both sessions): every request the server got, once.
    assert outcome.summary["sent"] == len(server.served) == 24 * 6
    assert outcome.summary["session"]["sent"] == 24 * 6 - sent_before
    assert outcome.summary["cached"] >= 1  # in-flight examples at the interrupt came back from the cache
    _, rows, saved = load_run(run_dir)
    assert [r["id"] for r in rows] == meta["example_ids"] and saved == outcome.summary
    assert outcome.summary["wall_seconds"] > 0

    # Resuming a finished run sends nothing.
    again = resume(run_dir, lms=lms)
    assert len(server.served) == 24 * 6 and again.summary["accuracy"] == ref.summary["accuracy"]


def _cli(server: FakeServer, model: str, out: Path, *extra: str) -> list[str]:
    return [
        "run",
        "jot",
        "--task",
        "navigate",
        "--limit",
        "30",
        "--loops",
        "2",
        "--lm",
        model,
        "--api-base",
        server.url,
        "--concurrency",
        "2",
        "--out",
        str(out),
        *extra,
    ]


def test_killed_cli_run_resumes_to_the_same_table(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ref_out = tmp_path / "ref"
    assert main(_cli(server, f"openai/kill-ref-{time.time_ns()}", ref_out)) == 0
    capsys.readouterr()
    (ref_dir,) = ref_out.iterdir()
    ref = json.loads((ref_dir / "summary.json").read_text())
    server.served.clear()
    server.latency = 0.05

    out = tmp_path / "killed"
    env = {**os.environ, "OPENAI_API_KEY": "sk-fake"}
    cmd = [
        sys.executable,
        "-c",
        "import sys; from courtroom.cli import main; sys.exit(main(sys.argv[1:]))",
        *_cli(server, f"openai/kill-{time.time_ns()}", out),
    ]
    proc = warm.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            results = list(out.glob("*/results.jsonl"))
            if results and len(results[0].read_text().splitlines()) >= 6:
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(10)
    (run_dir,) = out.iterdir()
    assert not (run_dir / "summary.json").exists()
    done_before = len(load_run(run_dir)[1])
    assert 6 <= done_before < 30
    served_before = len(server.served)

    server.latency = 0.0
    assert main(["run", "--resume", str(run_dir), "--api-base", server.url]) == 0
    out_text = capsys.readouterr().out
    assert f"run folder: {run_dir}" in out_text
    final = json.loads((run_dir / "summary.json").read_text())
    assert {k: final[k] for k in TABLE} == {k: ref[k] for k in TABLE}
    # A kill -9 loses only the answers in flight (at most --concurrency of them); all else is cached.
    repeated = sum(c - 1 for c in Counter(server.served).values() if c > 1)
    assert repeated <= 2
    assert len(server.served) - served_before <= (30 - done_before) * 6 + 2


def test_interrupted_repeat_group_resumes(tmp_path: Path) -> None:
    from courtroom.data.tasks import load_task
    from courtroom.runner.repeats import resume_repeats, run_repeats
    from courtroom.testing import oracle_lm

    gold = {ex.case: ex.label for ex in load_task("web_of_lies", limit=12, seed=6).examples}

    def lms(tag: str) -> RoleLMs:
        return RoleLMs(
            {"default": oracle_lm(gold, ["Yes", "No"], 0.6, cache=True, model=f"fake/{tag}-{time.time_ns()}")}
        )

    config = RunConfig("zero-shot", "web_of_lies", limit=12, seed=6, concurrency=2)
    ref = run_repeats(RunConfig(**{**vars(config), "out": str(tmp_path / "ref")}), 3, lms=lms("ref"))
    count = {"n": 0}

    def stop(r: int, res: Any) -> None:
        count["n"] += 1
        if count["n"] == 16:  # inside repeat 1
            raise KeyboardInterrupt

    models = lms("grp")
    with pytest.raises(KeyboardInterrupt):
        run_repeats(RunConfig(**{**vars(config), "out": str(tmp_path / "grp")}), 3, lms=models, progress=stop)
    (group,) = (tmp_path / "grp").iterdir()
    assert not (group / "repeat-2").exists() and not (group / "repeats.json").exists()
    done = resume_repeats(group, lms=models)
    assert [o.summary["accuracy"] for o in done.outcomes] == [o.summary["accuracy"] for o in ref.outcomes]
    assert done.stats["accuracy"] == ref.stats["accuracy"]
    answered = sum(models["default"].engine_impl._seen.values())
    assert answered == 3 * 12  # every call answered once over both sessions: nothing was asked twice


def test_retry_failed_sends_failed_examples_afresh(tmp_path: Path) -> None:
    with FakeServer(responder, fault_for=fault_prompts(0.3, seed=1)) as server:
        lms = RoleLMs({"default": server.lm(f"openai/retry-{time.time_ns()}")})
        config = RunConfig("zero-shot", "web_of_lies", limit=12, seed=2, out=str(tmp_path))
        first = run(config, lms=lms)
        failed = first.summary["failures"]
        assert failed > 0
        server.fault_for = None
        before = server.counts["requests"]
        plain = resume(first.run_dir, lms=lms)  # nothing missing: nothing sent, failures kept
        assert server.counts["requests"] == before and plain.summary["failures"] == failed
        retried = resume(first.run_dir, lms=lms, retry_failed=True)
        # The cached garbage is not served again: exactly the failed examples are sent once more.
        assert server.counts["requests"] - before == failed
        assert retried.summary["failures"] == 0 and retried.summary["n"] == 12
        assert len(set(server.served)) == len(server.served)
