"""Ctrl-C from outside: `courtroom run` as a subprocess against a slow fake server, then SIGINT."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from courtroom.testing import FakeServer

CONCURRENCY = 4


def _start(server: FakeServer, out: Path, seed: int, *extra: str) -> subprocess.Popen:
    args = ["run", "jot", "--limit", "12", "--loops", "3", "--seed", str(seed), "--lm", "openai/fake"]
    args += ["--api-base", server.url, "--concurrency", str(CONCURRENCY), "--out", str(out), *extra]
    return subprocess.Popen(
        [sys.executable, "-m", "courtroom.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def _wait_for_requests(server: FakeServer, proc: subprocess.Popen, n: int) -> None:
    deadline = time.monotonic() + 120
    while server.counts["requests"] < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the server"
        time.sleep(0.02)


def test_ctrl_c_stops_new_calls_exits_130_and_resumes(tmp_path):
    with FakeServer(latency=0.5) as server:
        proc = _start(server, tmp_path, seed=701)
        _wait_for_requests(server, proc, 2 * CONCURRENCY + 1)
        sent_before, t0 = server.counts["requests"], time.monotonic()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
        exit_seconds = time.monotonic() - t0
        after = server.counts["requests"] - sent_before
        print(f"Ctrl-C: exit after {exit_seconds:.2f} s, {after} request(s) reached the server after the signal")
        assert proc.returncode == 130, err
        assert "Traceback" not in err
        line = [x for x in err.splitlines() if "resume with: courtroom run --resume" in x]
        assert line, err
        assert "examples saved in" in line[0]
        # Requests already sent finish; nothing new starts (the in-flight bound is CONCURRENCY).
        assert after <= CONCURRENCY, after
        # Not the ~3 s each in-flight example still needed (6 calls x 0.5 s), let alone the run.
        assert exit_seconds < 2.5, exit_seconds
        run_dir = Path(line[0].rsplit("--resume", 1)[1].strip())
        assert not (run_dir / "summary.json").exists()

        resumed = subprocess.run(
            [sys.executable, "-m", "courtroom.cli", "run", "--resume", str(run_dir), "--api-base", server.url],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
        summary = json.loads((run_dir / "summary.json").read_text())
        assert summary["n"] == 12 and summary["failures"] == 0
        rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
        assert sorted(r["id"] for r in rows) == sorted(json.loads((run_dir / "meta.json").read_text())["example_ids"])
        assert len(server.served) == len(set(server.served)), "a successful call was sent twice"


def test_second_ctrl_c_stops_at_once(tmp_path):
    with FakeServer(latency=6.0) as server:
        proc = _start(server, tmp_path, seed=702)
        _wait_for_requests(server, proc, CONCURRENCY)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.3)
        t0 = time.monotonic()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "stopped at once" in err and "Traceback" not in err
        assert time.monotonic() - t0 < 2.0  # the requests in flight (6 s each) are not awaited
