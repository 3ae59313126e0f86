"""``--concurrency N``: at most N LM requests in flight for the whole process, in every command.

Each command runs in process (the bound is the process's) against the fake server, which answers
slowly enough that requests overlap, and records the most that were open at once.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from courtroom.testing._fake_server import FakeServer

N = 3
LATENCY = 0.06  # long enough that a case's concurrent calls overlap at the server; each command sends dozens
FIVE_JUDGES = ["--set", "n_judges=5", "--set", "k_precedents=0"]


@pytest.fixture
def _cli(courtroom_cli: Any) -> Any:
    def call(*args: str, cwd: Path) -> None:
        env = {"COURTROOM_CACHE_DIR": str(cwd / "cache")}  # no answer comes from another test
        proc = courtroom_cli(*args, cwd=cwd, env=env)
        assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]

    return call


COMMANDS = {
    "run": ["run", "courtroom-llm", "--limit", "6", *FIVE_JUDGES],
    "compare": ["compare", "--frameworks", "courtroom-llm,jot", "--limit", "4", "--set", "n_judges=5"],
    "compile-bootstrap-rs": [
        "compile", "courtroom-llm", "--optimizer", "bootstrap-rs", "--opt", "num_candidate_programs=1",
        "--opt", "max_bootstrapped_demos=2", "--train-limit", "4", "--dev-limit", "2", "--test-limit", "0",
        *FIVE_JUDGES, "-o", "p.json",
    ],
    "compile-copro": [
        "compile", "jot", "--optimizer", "copro", "--opt", "breadth=2", "--opt", "depth=1",
        "--train-limit", "4", "--dev-limit", "2", "--test-limit", "0", "--loops", "1", "-o", "p.json",
    ],
    "compile-mipro": [
        "compile", "jot", "--optimizer", "mipro", "--opt", "num_candidates=2", "--opt", "num_trials=2",
        "--opt", "max_bootstrapped_demos=1", "--opt", "minibatch=false", "--train-limit", "6", "--dev-limit", "2",
        "--test-limit", "0", "--loops", "1", "-o", "p.json",
    ],
    "study-workers-2": [
        "study", "courtroom-llm", "--workers", "2", "--trials", "3", "--dev-limit", "4", "--train-limit", "2",
        "--no-prune", "--space", "n_judges=5", "--space", "k_precedents=0", "--search-temperature",
        "--storage", "sqlite:///s.db",
    ],
}  # fmt: skip


@pytest.mark.parametrize("command", list(COMMANDS))
def test_concurrency_bounds_requests_in_flight(command: str, tmp_path: Path, _cli: Any) -> None:
    with FakeServer(latency=LATENCY) as server:
        model = f"openai/fake-{command}-{time.time_ns()}"  # nothing from the shared test cache
        _cli(*COMMANDS[command], "--concurrency", str(N), "--lm", model, "--api-base", server.url, cwd=tmp_path)
    print(f"{command}: peak {server.max_in_flight} in flight, {server.counts['requests']} requests")
    assert server.counts["requests"] > 2 * N
    assert server.max_in_flight <= N, f"{command}: {server.max_in_flight} requests in flight at --concurrency {N}"


def test_predict_bounds_requests_in_flight(tmp_path: Path, _cli: Any) -> None:
    with FakeServer(latency=LATENCY) as server:
        common = ["--lm", "openai/fake", "--api-base", server.url]
        _cli("compile", "courtroom-llm", "--optimizer", "labeled", "--opt", "k=1", "--train-limit", "2",
             "--dev-limit", "1", "--test-limit", "0",
             *FIVE_JUDGES, "-o", "p.json", *common, cwd=tmp_path)  # fmt: skip
        (tmp_path / "cases.jsonl").write_text("".join(json.dumps({"case": f"True or {i}"}) + "\n" for i in range(6)))
        server.max_in_flight = 0
        _cli("predict", "p.json", "--input", "cases.jsonl", "--out", "out.jsonl", "--concurrency", str(N),
             "--api-base", server.url, cwd=tmp_path)  # fmt: skip
    print(f"predict: peak {server.max_in_flight} in flight")
    assert server.max_in_flight <= N


def test_concurrency_n_means_n_in_flight_when_the_model_is_slower_than_the_client(tmp_path: Path, _cli: Any) -> None:
    # Where the client's own work is not the limit (here 0.4 s a request), one call per case keeps
    # exactly N open: the bound is reached, not only respected.
    with FakeServer(latency=0.4) as server:
        model = f"openai/fake-full-{time.time_ns()}"
        args = ["run", "zero-shot", "--limit", "48", "--concurrency", "16", "--lm", model, "--api-base", server.url]
        _cli(*args, cwd=tmp_path)
    assert server.counts["requests"] == 48 and server.max_in_flight == 16
