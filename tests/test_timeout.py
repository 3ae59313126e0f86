"""``--timeout SECONDS``: a hung request fails after the timeout (per attempt), not LiteLLM's 600 s."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import warm

from courtroom.models.lms import DEFAULT_TIMEOUT, LMSpec, build_lm, resolve_roles
from courtroom.programs import build_program
from courtroom.testing._fake_server import FakeServer

HANG = 150.0


def _cli(args: list[str], cwd: Path) -> tuple[subprocess.CompletedProcess[str], float]:
    env = os.environ | {"COURTROOM_CACHE_DIR": str(cwd / "cache")}
    start = time.monotonic()
    proc = warm.run(
        [sys.executable, "-m", "courtroom.cli", *args], capture_output=True, text=True, cwd=cwd, env=env, timeout=300
    )
    return proc, time.monotonic() - start


@pytest.mark.parametrize(
    "command",
    [
        ["run", "zero-shot", "--limit", "2", "--concurrency", "2"],
        [
            "compile",
            "zero-shot",
            "--optimizer",
            "bootstrap",
            "--opt",
            "max_bootstrapped_demos=1",
            "--train-limit",
            "1",
            "--dev-limit",
            "1",
            "--test-limit",
            "0",
            "-o",
            "p.json",
        ],
    ],  # fmt: skip
    ids=["run", "compile"],
)
def test_hung_requests_fail_after_the_timeout(command: list[str], tmp_path: Path) -> None:
    # Every request hangs 150 s; 1 s per attempt, 4 attempts and the suite's short backoff
    # (COURTROOM_RETRY_WAIT, tests/conftest.py) bound each call.
    with FakeServer(faults={"timeout": 1.0}, hang=HANG) as server:
        proc, wall = _cli([*command, "--timeout", "1", "--lm", "openai/fake", "--api-base", server.url], tmp_path)
    assert "no such option" not in proc.stderr.lower(), proc.stderr[-500:]
    print(f"{command[0]}: {wall:.1f} s, {server.counts['requests']} requests")  # for the log, not asserted
    assert server.counts["requests"] >= 2  # retried, each attempt cut at the timeout
    # The client gave up on each attempt (a read timeout): the server never answered, as it would
    # have only after 150 s. Seconds are not asserted: a loaded machine stretches them.
    if command[0] == "run":
        meta = json.loads(next((tmp_path / "runs").glob("*/meta.json")).read_text())
        assert meta["config"]["timeout"] == 1
        rows = [json.loads(x) for x in next((tmp_path / "runs").glob("*/results.jsonl")).read_text().splitlines()]
        errors = [r["error"] for r in rows]
    else:
        errors = [x for x in proc.stderr.splitlines() if "first error" in x]
    assert errors and all("timed out" in e for e in errors), errors


def test_models_get_a_timeout_by_default() -> None:
    assert build_lm(LMSpec("openai/gpt-4o-mini")).kwargs["timeout"] == DEFAULT_TIMEOUT < 60
    lm = build_lm(LMSpec("openai/x", api_base="http://127.0.0.1:1/v1", timeout=7))
    assert lm.engine.timeout == 7  # the server engine owns the connection and its timeout
    assert build_lm(LMSpec("openai/x", api_base="http://127.0.0.1:1/v1")).engine.timeout == DEFAULT_TIMEOUT


def test_timeout_does_not_change_the_cache_key(tmp_path: Path) -> None:
    # It does not change answers, so a resume with another --timeout reuses the cached calls.
    from courtroom.models.cache import configure_cache

    configure_cache(tmp_path / "cache")
    try:
        with FakeServer() as server:
            for seconds in (5, 9):
                lms = resolve_roles("openai/fake", api_base=server.url, timeout=seconds)
                build_program("zero-shot", ["True", "False"], knobs={}, lms=lms)(case="True and True")
        assert server.counts["requests"] == 1
    finally:
        configure_cache(os.environ["COURTROOM_CACHE_DIR"])
