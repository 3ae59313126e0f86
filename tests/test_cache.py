import os

import dspy

from courtroom.cache import cache_dir
from courtroom.eval.harness import evaluate, total_usage
from courtroom.programs import JudgmentOfThought
from courtroom.testing import FakeServer


def _examples(tag):
    return [dspy.Example(case=f"{tag} True and not False {i} is", label="True", id=str(i)).with_inputs("case")
            for i in range(4)]


def test_identical_evaluation_sends_zero_requests_the_second_time():
    with FakeServer() as server:
        prog = JudgmentOfThought(["True", "False"], lm=server.lm(), n_loops=2)
        exs = _examples("cache-test")
        first = evaluate(prog, exs, concurrency=2)
        sent_first = server.counts["requests"]
        assert sent_first == 4 * 2 * 3
        assert total_usage(first).sent == sent_first
        second = evaluate(prog, exs, concurrency=2)
        assert server.counts["requests"] == sent_first
        usage = total_usage(second)
        assert usage.sent == 0 and usage.cached == usage.calls == sent_first
        assert [r.prediction for r in first] == [r.prediction for r in second]


def test_cache_lives_in_courtroom_cache_dir():
    assert str(cache_dir()) == os.environ["COURTROOM_CACHE_DIR"]
    assert dspy.cache.disk_cache.directory == str(cache_dir())
