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


def test_a_samples_answers_do_not_depend_on_which_run_filled_the_cache(tmp_path, monkeypatch):
    """Issue 41: a k_samples=1 trial reading a k_samples=3 trial's cached samples scored differently.

    The three samples of one prompt reach the model concurrently; the fake drew by arrival, so the
    answer cached for sample 0 (the one k_samples=1 reads) was whichever arrived first. Here sample 0
    is made to arrive last, as a slow thread would: its answer must not change.
    """
    import threading

    from courtroom.data.tasks import load_task
    from courtroom.models.cache import configure_cache
    from courtroom.programs.baselines import SelfConsistency
    from courtroom.testing import oracle_lm

    examples = load_task("boolean_expressions", split="test", limit=12).examples
    gold, labels = {e.case: e.label for e in examples}, ["True", "False"]
    ask = SelfConsistency.ask
    done: dict[str, int] = {}
    changed = threading.Condition()

    def last_first(self, role, predictor, rollout=None, lm_config=None, **inputs):
        case = inputs.get("case")  # sample 0 of a k>1 trial waits for the case's other samples
        if self.k_samples > 1 and rollout == 0:
            with changed:
                changed.wait_for(lambda: done.get(case, 0) >= self.k_samples - 1, timeout=5)
            return ask(self, role, predictor, rollout, lm_config, **inputs)
        out = ask(self, role, predictor, rollout, lm_config, **inputs)
        with changed:
            done[case] = done.get(case, 0) + 1
            changed.notify_all()
        return out

    monkeypatch.setattr(SelfConsistency, "ask", last_first)
    monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")  # k requests at once (with n they go as one request)

    def trial(k, lm):
        results = evaluate(SelfConsistency(labels, lm=lm, k_shots=0, k_samples=k), examples, concurrency=4)
        return [r.prediction for r in results]

    seen = {}
    for n, order in enumerate([(1,), (3, 1), (1,), (3, 1)]):
        configure_cache(tmp_path / f"cache-{n}")  # each run starts cold, as an identical run elsewhere would
        done.clear()
        lm = oracle_lm(gold, labels, accuracy=0.6, cache=True)
        for k in order:
            seen.setdefault(k, []).append(trial(k, lm))
    assert all(run == seen[1][0] for run in seen[1]), seen[1]  # k=1 alone, or after k=3 filled the cache
    assert seen[3][0] == seen[3][1]


def test_the_disk_cache_is_opened_at_its_first_use_only(tmp_path, cli):
    # DSPy opens its 16 SQLite shards when the cache is made (~20 ms): in every test of this suite,
    # and in every command before its work, whether it ever called a model or not.
    from courtroom.models.cache import configure_cache

    folder = tmp_path / "lm-cache"
    configure_cache(folder)
    assert list(folder.iterdir()) == []
    os.environ["COURTROOM_CACHE_DIR"] = str(folder)  # the autouse fixture sets it again for the next test
    with FakeServer() as server:
        assert cli("run", "zero-shot", "--limit", "2", "--lm", "openai/m", "--api-base", server.url).returncode == 0
    assert _entries(folder) == 2


def test_identical_cache_misses_at_once_go_out_once():
    import threading

    from courtroom.models.lms import resolve_roles

    # Two trials asking the same uncached prompt at the same moment: one request, one answer for both.
    with FakeServer(latency=0.3) as server:
        lms = [resolve_roles(server.lm(f"openai/inflight-{os.getpid()}", cache=True)) for _ in range(2)]
        answers, start = [], threading.Barrier(4)

        def ask(lm):
            start.wait()
            answers.append(lm["default"](messages=[{"role": "user", "content": f"same prompt {os.getpid()}"}]))

        threads = [threading.Thread(target=ask, args=(lms[i % 2],)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert server.counts["requests"] == 1, server.counts
        assert len({str(a) for a in answers}) == 1


def test_memory_keeps_the_latest_answers_and_the_disk_the_rest(tmp_path, monkeypatch):
    """Issue 44: DSPy's memory cache held every answer of a run (4.4 KB a call, never given back)."""
    from courtroom.models import cache
    from courtroom.programs.baselines import ZeroShot
    from courtroom.testing import oracle_lm

    monkeypatch.setattr(cache, "MEMORY_ENTRIES", 3)
    cache.configure_cache(tmp_path / "cache")
    exs = [dspy.Example(case=f"memory bound {i}", label="True", id=str(i)).with_inputs("case") for i in range(8)]
    prog = ZeroShot(["True", "False"], lm=oracle_lm({e.case: e.label for e in exs}, ["True", "False"], cache=True))
    first = evaluate(prog, exs, concurrency=2)
    assert total_usage(first).sent == 8 and len(dspy.cache.memory_cache) == 3
    second = evaluate(prog, exs, concurrency=2)  # the older answers come from the disk
    assert total_usage(second).sent == 0 and total_usage(second).cached == 8
    assert [r.prediction for r in second] == [r.prediction for r in first]


def test_the_disk_cache_is_read_not_memory_mapped(tmp_path):
    """Issue 44: diskcache maps each shard (64 MB): the pages touched grew the resident set with the file."""
    import threading

    from courtroom.models import cache

    cache.configure_cache(tmp_path / "cache")
    disk = dspy.cache.disk_cache
    disk.set("k", "v")
    seen = []

    def connect() -> None:  # a worker's connection reads the setting from the shard's database
        seen.append(disk._shards[0]._sql("PRAGMA mmap_size").fetchall()[0][0])
        disk.close()

    worker = threading.Thread(target=connect)
    worker.start()
    worker.join()
    assert disk.sqlite_mmap_size == 0 and seen == [0]
    cache.configure_cache(tmp_path / "other")  # a second process, or a fresh folder: the same
    cache.configure_cache(tmp_path / "cache")
    assert dspy.cache.disk_cache.sqlite_mmap_size == 0 and dspy.cache.disk_cache.get("k") == "v"
