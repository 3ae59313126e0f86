"""Within one decision, independent calls run concurrently (SPEC §8): wall time follows the critical path."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
import warm
from _output import unwrapped

from courtroom.models._concurrency import REQUESTS, Slots, bounded_requests
from courtroom.programs import CourtroomLLM
from courtroom.testing import FakeServer

LATENCY = 0.3


def test_five_parallel_judges_take_about_three_latencies_not_eight(monkeypatch: pytest.MonkeyPatch) -> None:
    # Critical path: preliminary hearing -> both advocates at once -> all five judges at once.
    # k_precedents=0, so no reasoner calls sit on the path (and no training set is needed).
    # Five requests, not one with n=5 (tests/test_n_sampling.py covers that): the concurrency is the point.
    monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")
    with FakeServer(latency=LATENCY) as server:
        program = CourtroomLLM(
            ["True", "False"], lm=server.lm(cache=False), n_judges=5, judge_mode="parallel", k_precedents=0
        )
        program(case="warm-up case")  # first litellm call pays import and client set-up
        server.max_in_flight = 0
        start = time.perf_counter()
        out = program(case="the timed case")
        wall = time.perf_counter() - start
    assert len(out.votes) == 5
    # Five judges open at once is what puts them on one step of the critical path; wall time is not
    # asserted from above (a loaded machine stretches it), only that the path's 3 steps were waited.
    assert server.max_in_flight >= 5
    assert wall >= 3 * LATENCY


def _waiters(slots: Any) -> int:
    """Threads blocked on the request bound (a plain semaphore's own queue, on the code before Slots)."""
    waiting = getattr(slots, "waiting", None)
    return waiting if waiting is not None else len(slots._cond._waiters)


def test_a_freed_request_slot_goes_to_the_longest_waiter() -> None:
    # A decision that finishes a call and asks again at once (on to its next stage) must queue
    # behind a request already waiting, not take the slot back before the waiter runs.
    order: list[str] = []
    with bounded_requests(1):
        REQUESTS.on_lm_start("first", None, {})

        def other() -> None:
            REQUESTS.on_lm_start("waiter", None, {})
            order.append("waiter")
            REQUESTS.on_lm_end("waiter", None)

        thread = threading.Thread(target=other)
        thread.start()
        while not _waiters(REQUESTS._slots):
            time.sleep(0.001)
        REQUESTS.on_lm_end("first", None)
        REQUESTS.on_lm_start("again", None, {})
        order.append("again")
        REQUESTS.on_lm_end("again", None)
        thread.join()
    assert order == ["waiter", "again"]


def test_request_slots_are_fair_and_bounded_under_load() -> None:
    slots = Slots(3)
    held = peak = 0
    lock = threading.Lock()

    def worker() -> None:
        nonlocal held, peak
        for _ in range(200):
            slots.acquire()
            with lock:
                held += 1
                peak = max(peak, held)
            with lock:
                held -= 1
            slots.release()

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert peak <= 3
    assert slots.waiting == 0
    for _ in range(3):
        slots.acquire()  # every slot came back
    with pytest.raises(ValueError):
        Slots(1).release()


def test_concurrency_is_lowered_to_what_ulimit_n_can_hold(tmp_path) -> None:
    # Before: at `ulimit -n 128` and --concurrency 16 examples failed with "Too many open files".
    import os
    import resource
    import sys

    from courtroom.testing import FakeServer

    with FakeServer(latency=0.05) as server:
        args = ["run", "jot", "--limit", "16", "--loops", "1", "--lm", "openai/fake", "--api-base", server.url]
        done = warm.run(
            [sys.executable, "-m", "courtroom.cli", *args, "--concurrency", "16", "--out", str(tmp_path / "runs")],
            capture_output=True,
            text=True,
            timeout=300,
            rlimits={resource.RLIMIT_NOFILE: (128, 128)},
            env=os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")},
        )
    said = [x for x in unwrapped(done.stderr) if "ulimit -n allows 128" in x]
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(said) == 1 and "--concurrency 16 needs about" in said[0] and "running 2 at a time" in said[0]
    assert "Too many open files" not in done.stderr


def test_a_limit_too_low_for_one_example_is_refused_in_one_line(tmp_path) -> None:
    # Before: at `ulimit -n 64` compare died with "Too many open files" (exit 1, a traceback) and a
    # study blamed its storage; every command needs ~100 files before its first request.
    import os
    import resource
    import sys

    from courtroom.testing import FakeServer

    with FakeServer() as server:
        args = ["compare", "--frameworks", "jot,zero-shot", "--limit", "4", "--loops", "1", "--lm", "openai/fake"]
        done = warm.run(
            [sys.executable, "-m", "courtroom.cli", *args, "--api-base", server.url, "--out", str(tmp_path / "c")],
            capture_output=True,
            text=True,
            timeout=300,
            rlimits={resource.RLIMIT_NOFILE: (64, 64)},
            env=os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")},
        )
    errors = [x for x in done.stderr.splitlines() if x.startswith("error:")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert len(errors) == 1 and "only 64 open files" in errors[0] and "ulimit -n" in errors[0], errors
    assert server.counts["requests"] == 0  # refused before any request
