"""Fault injection over real HTTP: every fault becomes a counted, listed failure; the run completes."""

from __future__ import annotations

import time

import pytest

from courtroom.data.tasks import load_task
from courtroom.eval.harness import evaluate, summarize
from courtroom.models.lms import RoleLMs
from courtroom.programs import build_program
from courtroom.testing import FakeServer

N = 200
TIMEOUT, HANG = 1.0, 1.6  # a hung answer comes after the timeout; every other answer comes at once


@pytest.fixture(scope="module")
def examples() -> list:
    return (
        load_task("boolean_expressions", split="test", limit=N, seed=11).examples
        + load_task("boolean_expressions", split="train", seed=11).examples[: N - 300 if N > 300 else 0]
    )


def _evaluate(server: FakeServer, examples: list, timeout: float = TIMEOUT, **lm_kwargs: object) -> tuple[list, dict]:
    lm = server.lm(f"openai/fault-{time.time_ns()}", cache=False, timeout=timeout, **lm_kwargs)
    program = build_program("zero-shot", ["True", "False"], lms=RoleLMs({"default": lm}))
    results = evaluate(program, examples, concurrency=16)
    return results, summarize(results, ["True", "False"], 1.0)


@pytest.mark.parametrize("fault", ["429", "500", "timeout", "garbage", "truncated"])
def test_twenty_percent_of_one_fault_is_counted_exactly(fault: str, examples: list) -> None:
    assert len(examples) == N
    with FakeServer(faults={fault: 0.2}, hang=HANG, seed=3) as server:
        # Only the hang should time out: a loaded machine must not turn a slow answer into a failure.
        results, summary = _evaluate(server, examples, timeout=TIMEOUT if fault == "timeout" else 30.0)
    assert len(results) == N and summary["n"] == N  # the run completes, nothing is dropped
    faulted = server.counts[fault]
    failed = [r for r in results if r.prediction is None]
    assert all(r.error for r in failed)
    assert sum(r.usage["failed"] for r in results) == faulted  # each faulted request is one failed call
    if fault in ("garbage", "truncated"):
        # A bad answer is asked once more under a new rollout id; the example fails if both are bad.
        retries = server.counts["requests"] - N
        assert 20 <= retries <= 60  # ~20% of 200 first answers
        assert faulted == retries + len(failed) and 0 < len(failed) < retries
        assert all(r.usage["failed"] == 2 for r in failed)
    else:
        assert 20 <= faulted <= 60  # ~20% of 200 requests
        assert server.counts["requests"] == N  # zero-shot: one request per example, no retries configured
        assert len(failed) == faulted == N - server.counts["ok"], {r.error for r in results}
    assert summary["failures"] == len(failed)
    assert sorted(summary["failed_ids"]) == sorted(r.id for r in failed)
    # A failure is a wrong answer: accuracy is over all 200, failures included.
    correct = sum(r.prediction == r.gold for r in results)
    assert summary["accuracy"] == correct / N
    assert summary["sent"] == server.counts["requests"]  # every request counted, failed ones included
    assert summary["cached"] == 0  # cache=False: nothing was answered from the cache


def test_all_faults_at_twenty_percent_each_over_two_hundred_examples(examples: list) -> None:
    """Each kind at 20% (100% in all): with the LM's retries, rate limits and 5xx recover or fail."""
    faults = {k: 0.2 for k in ("429", "500", "timeout", "garbage", "truncated")}
    with FakeServer(faults=faults, hang=HANG, seed=4) as server:
        results, summary = _evaluate(server, examples)
    assert len(results) == N
    assert summary["failures"] == N  # every request faulted; every example is listed as failed
    assert len(summary["failed_ids"]) == N
    kinds = {k: server.counts[k] for k in faults}
    assert sum(kinds.values()) == server.counts["requests"] and min(kinds.values()) > 15
    # Bad answers (garbage, cut off) are asked once more; transport faults are not (num_retries=0).
    retried = sum(1 for r in results if r.usage["calls"] == 2)
    assert server.counts["requests"] == N + retried and 40 < retried < 120
    errors = {r.error.split(":")[0] for r in results}
    assert len(errors) >= 3  # rate limit, server error, timeout, parse errors are told apart


def test_mixed_faults_with_retries_recover_rate_limits(examples: list) -> None:
    with FakeServer(faults={"429": 0.2, "garbage": 0.05}, seed=5) as server:
        # Failed once in a suite run (7 failed, 6 garbage): the draws follow arrival order, so five 429s
        # in a row could exhaust 4 retries (~3% of runs), and a slow answer on a loaded machine could
        # pass the 2 s timeout. Nine 429s in a row is 5e-7 an example; no fault here hangs.
        results, summary = _evaluate(server, examples[:100], timeout=30.0, num_retries=8)
    assert server.counts["429"] > 0
    # A 429 is retried (retry-after: 0) until it succeeds; a garbage answer is asked once more.
    assert sum(r.usage["failed"] for r in results) == server.counts["garbage"] > 0
    assert summary["failures"] == sum(1 for r in results if r.usage["failed"] == 2)
    assert summary["failures"] < server.counts["garbage"]
    assert all("429" not in (r.error or "") and "RateLimit" not in (r.error or "") for r in results)
