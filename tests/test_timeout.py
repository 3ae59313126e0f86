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
from _output import unwrapped

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
    # Every request hangs 150 s; 0.3 s per attempt, 4 attempts and the suite's short backoff
    # (COURTROOM_RETRY_WAIT, tests/conftest.py) bound each call.
    with FakeServer(faults={"timeout": 1.0}, hang=HANG) as server:
        proc, wall = _cli([*command, "--timeout", "0.3", "--lm", "openai/fake", "--api-base", server.url], tmp_path)
    assert "no such option" not in proc.stderr.lower(), proc.stderr[-500:]
    print(f"{command[0]}: {wall:.1f} s, {server.counts['requests']} requests")  # for the log, not asserted
    assert server.counts["requests"] >= 2  # retried, each attempt cut at the timeout
    # The client gave up on each attempt (a read timeout): the server never answered, as it would
    # have only after 150 s. Seconds are not asserted: a loaded machine stretches them.
    if command[0] == "run":
        meta = json.loads(next((tmp_path / "runs").glob("*/meta.json")).read_text())
        assert meta["config"]["timeout"] == 0.3
        rows = [json.loads(x) for x in next((tmp_path / "runs").glob("*/results.jsonl")).read_text().splitlines()]
        errors = [r["error"] for r in rows]
    else:
        errors = [x for x in unwrapped(proc.stderr) if "first error" in x]
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


# Two requests as llama.cpp's server logs them, on a machine at a load of about 20 (2 cores).
SERVER_LOG = """\
INFO:     127.0.0.1:38914 - "GET /v1/models HTTP/1.1" 200 OK
llama_perf_context_print:        load time =       0.50 ms
llama_perf_context_print: prompt eval time = 0.12 ms / 231 tokens (0.00 ms per token, 1862903.23 tokens per second)
llama_perf_context_print:        eval time = 17342.56 ms / 39 runs (444.68 ms per token, 2.25 tokens per second)
llama_perf_context_print:       total time =   31589.18 ms /   270 tokens
INFO:     127.0.0.1:38922 - "POST /v1/chat/completions HTTP/1.1" 200 OK
llama_perf_context_print:       total time =    8410.82 ms /   130 tokens
"""


def test_the_embedded_models_timeout_follows_its_measured_speed() -> None:
    """`make demo` at a load of 20 failed every case at the fixed 300 s: the timeout grows with the measured time."""
    from courtroom.models.local._lm import LOCAL_TIMEOUT, PROMPT_TOKENS, timeout_for
    from courtroom.models.local._server import speed_in

    speed = speed_in(SERVER_LOG)
    assert speed == pytest.approx((31.58918 + 8.41082) / 400)  # 0.1 s per token
    assert speed_in("INFO: started\n") is None
    assert timeout_for(None, 384, 4) == LOCAL_TIMEOUT  # nothing measured yet: the floor
    assert timeout_for(0.0005, 384, 1) == LOCAL_TIMEOUT  # an idle machine: the floor
    # Four requests in flight, each waiting for those ahead (the server runs one at a time), three times over.
    assert timeout_for(speed, 384, 4) == pytest.approx(3 * 4 * (PROMPT_TOKENS + 384) * 0.1)
    assert timeout_for(speed, 384, 4) > timeout_for(speed, 384, 1) > LOCAL_TIMEOUT


def test_each_request_to_the_embedded_model_gets_the_timeout_of_its_moment() -> None:
    from types import SimpleNamespace

    from courtroom.models.local._lm import LlamaCppLM, timeout_for

    lm = LlamaCppLM("openai/smollm2", api_base="http://127.0.0.1:1/v1", api_key="x", engine="litellm", timeout=300)
    call = SimpleNamespace(legacy={"timeout": 300.0, "max_tokens": 64})
    with lm.sending(call):
        assert call.legacy["timeout"] == 300.0  # no speed: a --timeout given is kept
    lm.speed = lambda: 0.1
    with lm.sending(call), lm.sending(other := SimpleNamespace(legacy={"max_tokens": 64})):
        assert other.legacy["timeout"] == timeout_for(0.1, 64, 2)  # the second request waits for the first
    assert call.legacy["timeout"] == timeout_for(0.1, 64, 1) and LlamaCppLM._in_flight == 0


def test_a_run_failed_by_timeouts_names_the_option() -> None:
    from courtroom.eval.status import status

    errors = ["LMTimeoutError: Request timed out after 300 s"] * 3
    reason = status(3, 3, 0.1, errors)["status_reason"]
    assert reason.startswith("3 of 3 examples failed") and "--timeout SECONDS" in reason, reason
    assert "--timeout" not in status(3, 3, 0.1, ["LMProviderError: 500"] * 3)["status_reason"]
