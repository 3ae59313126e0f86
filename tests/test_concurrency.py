"""Within one decision, independent calls run concurrently (SPEC §8): wall time follows the critical path."""

from __future__ import annotations

import time

from courtroom.programs import CourtroomLLM
from courtroom.testing import FakeServer

LATENCY = 0.3


def test_five_parallel_judges_take_about_three_latencies_not_eight() -> None:
    # Critical path: preliminary hearing -> both advocates at once -> all five judges at once.
    # k_precedents=0, so no reasoner calls sit on the path (and no training set is needed).
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
