import os

import dspy

from courtroom.eval.harness import evaluate, total_usage
from courtroom.models.cache import cache_dir
from courtroom.programs import JudgmentOfThought
from courtroom.testing import FakeServer


def _examples(tag):
    return [
        dspy.Example(case=f"{tag} True and not False {i} is", label="True", id=str(i)).with_inputs("case")
        for i in range(4)
    ]


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


def _entries(folder):
    """Responses stored in a DSPy disk cache folder (diskcache's own count can lag other processes)."""
    import sqlite3
    from pathlib import Path

    return sum(
        sqlite3.connect(db).execute("select count(*) from Cache").fetchone()[0]
        for db in Path(folder).glob("*/cache.db")
    )


def test_compile_answers_from_and_into_the_courtroom_cache(tmp_path, courtroom_process):
    # compile once used DSPy's default cache (~/.dspy_cache, shared by every process and run on
    # the machine, and storing base URLs unredacted) instead of $COURTROOM_CACHE_DIR.
    env = {"COURTROOM_CACHE_DIR": str(tmp_path / "cache"), "DSPY_CACHEDIR": str(tmp_path / "dspy")}
    args = ["compile", "zero-shot", "--optimizer", "bootstrap", "--train-limit", "2", "--dev-limit", "3"]
    args += ["--test-limit", "0"]
    sent = []
    with FakeServer() as server:
        for _ in range(2):
            out = ["-o", str(tmp_path / "program.json")]
            # A real process: DSPy reads DSPY_CACHEDIR when it is imported.
            done = courtroom_process(*args, "--lm", "openai/m", "--api-base", server.url, *out, env=env)
            assert done.returncode == 0, done.stderr
            sent.append(server.counts["requests"] - sum(sent))
    assert sent[0] > 0 and sent[1] == 0  # the second compile was answered from the cache
    assert _entries(tmp_path / "cache") == sent[0] and _entries(tmp_path / "dspy") == 0
