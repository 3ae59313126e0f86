"""Ctrl-C from outside: `courtroom run` as a subprocess against a slow fake server, then SIGINT."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import warm
from _output import unwrapped

from courtroom.testing import FakeServer

CONCURRENCY = 4


def _start(server: FakeServer, out: Path, seed: int, *extra: str) -> warm.WarmProcess:
    args = ["run", "jot", "--limit", "12", "--loops", "3", "--seed", str(seed), "--lm", "openai/fake"]
    args += ["--api-base", server.url, "--concurrency", str(CONCURRENCY), "--out", str(out), *extra]
    return warm.Popen(
        [sys.executable, "-m", "courtroom.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def _wait_for_requests(server: FakeServer, proc: warm.WarmProcess, n: int) -> None:
    deadline = time.monotonic() + 120
    while server.counts["requests"] < n:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the run never reached the server"
        time.sleep(0.02)


def _wait_for_line(proc: warm.WarmProcess, text: str) -> None:
    """Read ``proc``'s stderr until a line holds ``text`` (the lines read are kept for communicate)."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if text in line:
            return
    raise AssertionError(f"{text!r} never printed")


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
        line = [x for x in unwrapped(err) if "resume with: courtroom run --resume" in x]
        assert line, err
        assert "examples saved in" in line[0]
        # Requests already sent finish; nothing new starts (the in-flight bound is CONCURRENCY).
        assert after <= CONCURRENCY, after
        # No wait for the rest of the run (12 examples x 9 calls x 0.5 s / 4 at once = 13.5 s): the
        # count above shows no in-flight example went on, and the run is unfinished (below).
        hint = shlex.split(line[0].split("resume with: ")[1])
        run_dir = Path(hint[hint.index("--resume") + 1])
        assert hint[hint.index("--api-base") + 1] == server.url  # what no folder records, repeated
        assert not (run_dir / "summary.json").exists()

        server.latency = 0.0  # the resume is checked for what it sends, not for when
        resumed = warm.run(
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
    with FakeServer(latency=600.0) as server:
        proc = _start(server, tmp_path, seed=702)
        _wait_for_requests(server, proc, CONCURRENCY)
        proc.send_signal(signal.SIGINT)
        _wait_for_line(proc, "waiting for the requests already sent")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        assert "stopped at once" in err and "Traceback" not in err
        # The process is gone while its requests (600 s each) are still open at the server: not awaited.
        assert server.in_flight == CONCURRENCY


def test_ctrl_c_in_compile_keeps_its_answers_for_the_next_try(tmp_path):
    # compile writes no folder until it ends: the line says so, and the answers received before
    # the signal are in the cache, so the same command sends only what is missing.
    args = ["compile", "zero-shot", "--optimizer", "bootstrap", "--train-limit", "4", "--dev-limit", "30"]
    args += ["--test-limit", "0"]

    def command(cache: str) -> tuple[list[str], dict[str, str]]:
        line = [sys.executable, "-m", "courtroom.cli", *args, "--lm", "openai/fake", "--api-base", server.url]
        line += ["--concurrency", "2", "-o", str(tmp_path / f"{cache}.json")]
        return line, os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / cache)}

    with FakeServer() as server:
        line, env = command("uninterrupted")
        whole = warm.run(line, capture_output=True, text=True, env=env, timeout=180)
        assert whole.returncode == 0, whole.stderr
        needed = server.counts["requests"]
        start = server.counts["requests"]
        server.latency = 0.2  # slow enough to be stopped part-way
        line, env = command("interrupted")
        proc = warm.Popen(line, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        _wait_for_requests(server, proc, start + 6)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130 and "Traceback" not in err
        assert "no run folder was written" in err and "sends only what is missing" in err
        received = server.counts["requests"] - start
        server.latency = 0.0
        again = warm.run(line, capture_output=True, text=True, env=env, timeout=180)
        assert again.returncode == 0, again.stderr
        resent = server.counts["requests"] - start - received
    assert 0 < received < needed and resent == needed - received  # nothing received is asked again
