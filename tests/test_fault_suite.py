"""The fault suite: JoT, Courtroom-LLM and Debate-Feedback against the fake server's faults.

Invariants, with counts: the server's request count equals the summary's sent count (retries
included); ``--max-calls N`` never reaches the server more than N times; ``--max-cost`` is never
passed by more than one request; after a torn tail a resume ends with every example exactly once
and no answered call re-sent; a damaged cache is named and the run completes. (SIGTERM and a full
disk need a process of their own: ``test_signals.py``, ``test_full_disk.py``.)
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from courtroom.cost.budget import Budget, BudgetExhausted
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer, answer_for_schema, fault_prompts

FRAMEWORKS = {
    "jot": {"n_loops": 1},
    "courtroom-llm": {"n_judges": 3, "k_precedents": 0},
    "debate-feedback": {"n_rounds": 1},
}
FAULTS = {"429": 0.05, "500": 0.05, "timeout": 0.02, "garbage": 0.04, "truncated": 0.04}
PRICES = {"openai/fake": [1000.0, 2000.0]}  # dollars per 1M tokens: about half a dollar a request


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURTROOM_RETRY_WAIT", "0.01")


def _config(framework: str, server: FakeServer, out: Path, limit: int = 8, **kw: Any) -> RunConfig:
    kw.setdefault("concurrency", 4)
    kw.setdefault("timeout", 10.0)  # only the hang fault should time out, not a loaded machine
    return RunConfig(
        framework,
        "boolean_expressions",
        data="generate",
        limit=limit,
        seed=7,
        knobs=FRAMEWORKS[framework],
        lm="openai/fake",
        api_base=server.url,
        out=str(out),
        **kw,
    )


def responder(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Answers that depend on the prompt: no two examples send the same request."""
    h = int(hashlib.sha256(prompt.encode()).hexdigest(), 16)
    values = {n: p["enum"][h % len(p["enum"])] for n, p in (schema.get("properties") or {}).items() if "enum" in p}
    return answer_for_schema(schema, values, f"argument {h % 99991}")


def _answered_once(
    framework: str, server: FakeServer, tmp: Path, answered: Counter[str], env: pytest.MonkeyPatch, **kw: Any
) -> None:
    """The answered requests equal an uninterrupted run's (same requests, each once): nothing answered was re-sent.

    Parallel judges send the same messages under distinct rollout ids, so the server cannot tell a
    re-sent call from a sample; an uninterrupted run on an empty cache says how often each is due.
    """
    with env.context() as reference:
        reference.setenv("COURTROOM_CACHE_DIR", str(tmp / "reference-cache"))
        before = len(server.served)
        run(_config(framework, server, tmp / "reference", **kw))
    assert answered == Counter(server.served[before:])


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_request_the_server_gets_is_counted_once(framework: str, tmp_path: Path) -> None:
    from courtroom.reporting.progress import ProgressDisplay

    with FakeServer(responder, faults=FAULTS, hang=1.0, retry_after=0.01, seed=11) as server:
        with ProgressDisplay(enabled=False) as display:
            bar = display.track(framework)
            config = _config(framework, server, tmp_path, timeout=0.5)  # the hang (1 s) times out
            outcome = run(config, progress=bar.result, on_start=bar.start)
        received = server.counts["requests"]
    s = outcome.summary
    assert bar.sent == received  # the progress display counts every request too
    faults = {k: server.counts[k] for k in FAULTS}
    print(f"{framework}: server received {received}, summary sent {s['sent']}; faults {faults}")
    assert s["n"] == 8
    assert server.counts["429"] + server.counts["500"] + server.counts["timeout"] > 0  # retries happened
    assert s["sent"] == s["session"]["sent"] == received  # LiteLLM/DSPy retries hid some before
    assert sum(r.usage["sent"] for r in outcome.results) == received


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_max_calls_is_never_passed_even_with_retries(framework: str, tmp_path: Path) -> None:
    with FakeServer(responder, faults={"429": 0.15, "500": 0.15}, retry_after=0.01, seed=12) as server:
        with pytest.raises(BudgetExhausted) as stop:
            run(_config(framework, server, tmp_path, limit=12), budget=Budget(max_calls=30))
        at_stop = server.counts["requests"]
        run_dir = Path(stop.value.resume.split()[-1])
        outcome = resume(run_dir, api_base=server.url)
        received = server.counts["requests"]
    print(f"{framework}: --max-calls 30 -> server received {at_stop}, budget counted {stop.value.budget.spent_calls}")
    assert at_stop <= 30 and stop.value.budget.spent_calls == at_stop
    assert outcome.summary["n"] == 12 and outcome.summary["sent"] == received  # both sessions, retries included


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_max_cost_is_passed_by_at_most_one_request(framework: str, tmp_path: Path) -> None:
    # No --max-tokens: the completion length is unknown, so the first request goes alone.
    max_cost = 3.0
    with FakeServer(responder, latency=0.02) as server:
        with pytest.raises(BudgetExhausted) as stop:
            run(_config(framework, server, tmp_path, concurrency=8), budget=Budget(max_cost=max_cost, prices=PRICES))
    price_in, price_out = (p / 1e6 for p in PRICES["openai/fake"])
    costs = [p * price_in + c * price_out for _, p, c in server.billed]
    spent = sum(costs)
    print(f"{framework}: --max-cost {max_cost} -> spent ${spent:.2f} in {len(costs)} requests")
    assert len(costs) > 1
    assert spent <= max_cost + max(costs)  # before: a first wave of 8 requests went out unpriced
    assert stop.value.budget.spent_cost == pytest.approx(spent)


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_a_torn_tail_resumes_to_every_example_once(
    framework: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(responder, latency=0.002) as server:
        seen: list[str] = []

        def stop(res: Any) -> None:
            seen.append(res.id)
            if len(seen) == 5:
                raise KeyboardInterrupt

        config = _config(framework, server, tmp_path / "runs", limit=10, concurrency=2)
        with pytest.raises(KeyboardInterrupt):
            run(config, progress=stop)
        (run_dir,) = (tmp_path / "runs").iterdir()
        results = run_dir / "results.jsonl"
        data = results.read_bytes()
        results.write_bytes(data[: len(data) - 40])  # the last line cut off, no newline
        outcome = resume(run_dir, api_base=server.url)
        received = server.counts["requests"]
        answered = Counter(server.served)
        _answered_once(framework, server, tmp_path, answered, monkeypatch, limit=10, concurrency=2)
    _, rows, summary = load_run(run_dir)
    assert summary is not None and summary["n"] == len(rows) == 10  # every example exactly once
    assert outcome.summary["sent"] == received


def test_a_damaged_cache_is_named_moved_aside_and_the_run_completes(
    tmp_path: Path, cold_cache: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from courtroom.models import cache as lm_cache

    with FakeServer() as server:
        run(_config("jot", server, tmp_path / "first"))
        first = server.counts["requests"]
        shards = sorted(cold_cache.glob("*/cache.db"))
        assert shards
        for db in shards:  # every page but the first (the schema) overwritten
            size = db.stat().st_size
            with db.open("r+b") as f:
                f.seek(4096)
                f.write(b"\xde\xad\xbe\xef" * ((size - 4096) // 4))
        lm_cache._configured = None  # a new process: nothing in memory, every lookup reads the disk
        lm_cache.configure_cache(cold_cache)
        start = time.perf_counter()
        with caplog.at_level(logging.WARNING):
            outcome = run(_config("jot", server, tmp_path / "second"))
        seconds = time.perf_counter() - start
    warnings = [r.message for r in caplog.records if "is damaged" in r.message]
    print(f"damaged cache: {len(warnings)} warning(s), run took {seconds:.1f} s; {warnings[:1]}")
    assert len(warnings) == 1 and str(cold_cache) in warnings[0] and "moved it to" in warnings[0]
    assert outcome.summary["failures"] == 0 and outcome.summary["n"] == 8  # before: every example failed
    assert server.counts["requests"] == 2 * first  # the lost answers were asked again
    assert list(cold_cache.parent.glob(f"{cold_cache.name}.damaged-*"))


def test_retry_failed_reuses_every_answer_that_parsed_and_counts_what_it_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer(responder) as clean, monkeypatch.context() as env:
        env.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "reference-cache"))
        run(_config("debate-feedback", clean, tmp_path / "reference", limit=12))
        due = Counter(clean.served)  # each request, as often as an uninterrupted run without faults sends it
    # The same prompts fault on every attempt of the first run (chosen by prompt, not by arrival
    # order, so some example fails in every run), and answer on the retry.
    garbage, truncated = fault_prompts(0.12, "garbage", seed=5), fault_prompts(0.05, "truncated", seed=6)
    faulting = [True]

    def fault_for(prompt: str, schema: dict[str, Any]) -> str | None:
        return (garbage(prompt, schema) or truncated(prompt, schema)) if faulting[0] else None

    with FakeServer(responder, fault_for=fault_for) as server:
        first = run(_config("debate-feedback", server, tmp_path, limit=12))
        assert first.summary["failures"] > 0
        faulting[0] = False
        answered = len(server.served)  # requests answered with JSON that parsed
        outcome = resume(first.run_dir, api_base=server.url, retry_failed=True)
        received = server.counts["requests"]
    twice = Counter(server.served) - due  # answered more often than the calls need: re-sent after parsing
    print(
        f"retry-failed: {first.summary['failures']} failed example(s) rerun with {received - first.summary['sent']} "
        f"request(s) ({len(server.served) - answered} answered), {sum(twice.values())} of them re-sent after "
        f"parsing; summary sent {outcome.summary['sent']} of {received} received"
    )
    assert not twice  # before: every call of a failed example was sent again
    assert outcome.summary["failures"] < first.summary["failures"]
    assert outcome.summary["sent"] == received  # the attempts it replaced stay counted


def test_a_study_never_passes_max_calls_under_faults(tmp_path: Path) -> None:
    from courtroom.cost.dry_run import estimate_study
    from courtroom.cost.study_budget import study_run_config
    from courtroom.optimize.study import StudyConfig, run_study
    from courtroom.optimize.study.spaces import build_space

    with FakeServer(responder, faults={"429": 0.15, "500": 0.15}, retry_after=0.01, seed=13) as server:
        config = StudyConfig(
            "self-consistency",
            trials=10,
            dev=4,
            train=4,
            data="generate",
            storage=f"sqlite:///{tmp_path}/s.db",
            models=["openai/fake"],
            api_base=server.url,
            prune=False,
            fail_on_error=1.0,
        )
        # The dry run's bound of one trial: the first trial is admitted, and its retries are what could pass it.
        max_calls = estimate_study(study_run_config(config), build_space("self-consistency"), 1).calls
        with pytest.raises(BudgetExhausted) as stop:
            run_study(config, budget=Budget(max_calls=max_calls))
        received = server.counts["requests"]
    counted = stop.value.budget.spent_calls
    print(f"study --max-calls {max_calls}: server received {received}, budget counted {counted}; {stop.value.line}")
    assert server.counts["429"] + server.counts["500"] > 0
    assert received <= max_calls and counted == received  # before: 25 of 23 at the server
    import optuna

    study = optuna.load_study(study_name=config.name, storage=config.storage)
    done = len([t for t in study.trials if t.state.name == "COMPLETE"])
    assert stop.value.left == 10 - done  # a trial cut short is run again by the resume command


def test_a_study_with_prices_and_no_max_tokens_stays_within_max_cost(tmp_path: Path) -> None:
    from courtroom.optimize.study import StudyConfig, run_study

    max_cost = 6.0
    with FakeServer(responder) as server:
        config = StudyConfig(
            "self-consistency",
            trials=10,
            dev=4,
            train=4,
            data="generate",
            storage=f"sqlite:///{tmp_path}/s.db",
            models=["openai/fake"],
            api_base=server.url,
            prune=False,
        )
        with pytest.raises(BudgetExhausted) as stop:
            run_study(config, budget=Budget(max_cost=max_cost, prices=PRICES))
    price_in, price_out = (p / 1e6 for p in PRICES["openai/fake"])
    costs = [p * price_in + c * price_out for _, p, c in server.billed]
    print(f"study --max-cost {max_cost}: spent ${sum(costs):.2f} in {len(costs)} requests")
    assert len(costs) > 1
    assert sum(costs) <= max_cost + max(costs)  # before: the first trial went out unbounded (14x)
    assert stop.value.budget.spent_cost == pytest.approx(sum(costs))


def test_a_compile_never_passes_max_calls_under_faults(tmp_path: Path) -> None:
    import courtroom
    from courtroom.api import experiment
    from courtroom.api._compile import compile_estimate, with_recipe

    options: dict[str, Any] = {
        "task": "boolean_expressions",
        "data": "generate",
        "optimizer": "bootstrap",
        "train_limit": 6,
        "dev_limit": 6,
        "lm": "openai/fake",
        "knobs": {"n_loops": 1},
        "fail_on_error": 1.0,
    }
    with FakeServer(responder, faults={"429": 0.15, "500": 0.15}, retry_after=0.01, seed=14) as server:
        spec, models = with_recipe(experiment("compile", framework="jot", api_base=server.url, **options), None)
        bound = compile_estimate(spec, models)[0].calls  # the dry run's bound: the compile is allowed to start
        try:
            courtroom.compile(
                "jot", api_base=server.url, max_calls=bound, out=str(tmp_path / "p.json"), progress=False, **options
            )
            outcome = "finished"
        except BudgetExhausted as stop:
            outcome = stop.line
            assert stop.budget is not None and stop.budget.spent_calls == server.counts["requests"]
        received = server.counts["requests"]
    print(f"compile --max-calls {bound}: server received {received}; {outcome}")
    assert received <= bound  # before: past its own dry-run bound under retries, exit 0
    assert server.counts["429"] + server.counts["500"] > 0
