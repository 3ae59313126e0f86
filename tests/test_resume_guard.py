"""Resume: refuse settings that would change the answers; one writer per run folder."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import warm
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer, answer_for_schema


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.fixture(scope="module")
def run_dir(server, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("runs")
    args = ["run", "jot", "--limit", "2", "--loops", "1", "--seed", "31", "--lm", "openai/fake-guard"]
    assert main([*args, "--role", "judge=openai/fake-guard-judge", "--api-base", server.url, "--out", str(out)]) == 0
    return next(out.iterdir())


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--lm", "openai/other"], "lawyer openai/other (the run has openai/fake-guard)"),
        (["--role", "judge=openai/other-judge"], "judge openai/other-judge (the run has openai/fake-guard-judge)"),
        (["--set", "n_loops=2"], "--set n_loops=2 (the run has --set n_loops=1)"),
        (["--loops", "3"], "--set n_loops=3"),
        (["--seed", "9"], "--seed 9 (the run has --seed 31)"),
        (["--temperature", "0.7"], "--temperature 0.7"),
        (["--max-tokens", "99"], "--max-tokens 99"),
        (["--task", "sports_understanding"], "task sports_understanding"),
        (["zero-shot"], "framework zero-shot (the run has framework jot)"),
    ],
)
def test_resume_refuses_what_changes_the_answers(run_dir, server, extra, needle, capsys):
    code = main(["run", *extra, "--resume", str(run_dir), "--api-base", server.url])
    _, err = capsys.readouterr()
    assert code != 0
    assert needle in " ".join(err.split()), err
    assert len(unwrapped(err.strip())) == 1 and "Traceback" not in err


def test_resume_allows_what_does_not_change_the_answers(run_dir, server, capsys):
    same = ["--lm", "openai/fake-guard", "--role", "judge=openai/fake-guard-judge", "--seed", "31", "jot"]
    code = main(
        [
            "run",
            *same,
            "--resume",
            str(run_dir),
            "--api-base",
            server.url,
            "--concurrency",
            "2",
            "--fail-on-error",
            "0.5",
        ]
    )
    _, err = capsys.readouterr()
    assert code == 0, err


def _cli(*args: str) -> warm.WarmProcess:
    return warm.Popen(
        [sys.executable, "-m", "courtroom.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_two_resumes_at_once_one_writes_the_other_fails(tmp_path):
    # Each stage waits for a state, never for a clock: the server holds every answer after the
    # first example's judgment (the first run is then a writer that cannot finish), and again
    # while the two resumes race for the folder, until the loser has exited.
    first_judgment = threading.Event()

    def responder(prompt: str, schema: dict) -> dict:
        if "decision" in (schema.get("properties") or {}) and not first_judgment.is_set():
            first_judgment.set()
            server.hold()  # the answers to come wait; this one goes out
        return answer_for_schema(schema, {}, "fake server reply")

    with FakeServer(responder) as server:
        common = ["--api-base", server.url]
        first = _cli(
            "run",
            "jot",
            "--limit",
            "10",
            "--loops",
            "1",
            "--seed",
            "32",
            "--lm",
            "openai/fake-lock",
            "--concurrency",
            "2",
            "--out",
            str(tmp_path),
            *common,
        )
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("*/results.jsonl")) or not next(tmp_path.glob("*/results.jsonl")).read_text():
            assert first.poll() is None and time.monotonic() < deadline, first.communicate()
            time.sleep(0.05)
        folder = next(tmp_path.iterdir())
        # A writer is running: a resume of its folder fails at once, naming the holder.
        busy = warm.run(
            [sys.executable, "-m", "courtroom.cli", "run", "--resume", str(folder), *common],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert busy.returncode != 0
        said = unwrapped(busy.stderr.strip())
        assert f"is being written by pid {first.pid}" in said[0] and len(said) == 1
        first.send_signal(signal.SIGKILL)  # dies holding the lock: the kernel drops it
        first.wait()
        server.release()
        while server.in_flight:  # the killed run's requests still complete on the server
            time.sleep(0.01)
        ids = json.loads((folder / "meta.json").read_text())["example_ids"]
        served_before = len(server.served)
        server.hold()  # the winner cannot finish before the loser has tried

        a, b = _cli("run", "--resume", str(folder), *common), _cli("run", "--resume", str(folder), *common)
        while a.poll() is None and b.poll() is None:
            assert time.monotonic() < deadline + 120, "neither resume exited while the other held the folder"
            time.sleep(0.01)
        server.release()
        (_, err_a), (_, err_b) = a.communicate(timeout=300), b.communicate(timeout=300)
        codes = sorted([a.returncode, b.returncode])
        assert codes[0] == 0 and codes[1] != 0, (err_a, err_b)
        loser = err_a if a.returncode else err_b
        assert "is being written by pid" in " ".join(loser.split()) and len(unwrapped(loser.strip())) == 1
        rows = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines() if x.endswith("}")]
        assert sorted({r["id"] for r in rows}) == sorted(ids) and len(rows) <= len(ids) + 2  # + cut-off lines
        new = server.served[served_before:]
        assert len(new) == len(set(new)), "a paid call was sent twice"
        assert json.loads((folder / "summary.json").read_text())["n"] == len(ids)
