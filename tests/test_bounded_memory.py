"""Issue 44: a run's memory per call is bounded: it streams each result to its folder and keeps none.

bench/scale.py measures the resident set (3,000 calls at concurrency 64: 5.9 KB a call while every
result was held, 2.2 KB after); these tests pin the causes: no result, future, queued example or DSPy
trace entry outlives its case, and the summary counted as results arrive is the one summarized from
them all (the disk cache's memory map: tests/test_cache.py).
"""

from __future__ import annotations

import gc
import json
import random
import time
import weakref
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.dsp.utils.settings import main_thread_config

from courtroom.data.tasks import load_task
from courtroom.eval.harness import ExampleResult, evaluate, summarize
from courtroom.eval.tally import Tally
from courtroom.models.lms import RoleLMs
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.runner.stored import StoredResults
from courtroom.testing import oracle_lm


def test_a_run_keeps_no_result_of_a_finished_case(tmp_path: Path) -> None:
    data = load_task("web_of_lies", limit=40, seed=4)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], accuracy=0.7, model=f"fake/held-{time.time_ns()}")
    refs: list[weakref.ref[ExampleResult]] = []
    alive: list[int] = []

    def watch(res: ExampleResult) -> None:
        if len(refs) % 8 == 7:  # every 8th case (a collection is a tenth of a second)
            gc.collect()
            alive.append(sum(r() is not None for r in refs))  # earlier cases' results still in memory
        refs.append(weakref.ref(res))

    trace = len(main_thread_config["trace"])
    config = RunConfig("zero-shot", "web_of_lies", limit=40, seed=4, concurrency=2, out=str(tmp_path))
    # The worker's heap from earlier tests is frozen: a collection scans what the run made (40 full
    # collections of a late worker's heap took 23 s).
    gc.collect()
    gc.freeze()
    try:
        outcome = run(config, lms=RoleLMs({"default": lm}), progress=watch)
        gc.collect()
    finally:
        gc.unfreeze()
    assert (
        len(refs) == 40 and len(alive) == 5 and max(alive) <= 4
    )  # the old run held all 40 (results, futures, the outcome)
    assert sum(r() is not None for r in refs) == 0
    assert len(main_thread_config["trace"]) == trace  # DSPy's process-wide trace got none of the 40 calls
    # What the outcome gives back is read from the folder: the same lines, in input order.
    assert isinstance(outcome.results, StoredResults)
    _, rows, summary = load_run(outcome.run_dir)
    assert [r.to_dict() for r in outcome.results] == rows and len(outcome.results) == 40
    assert outcome.results[3].id == rows[3]["id"]
    assert summary == outcome.summary == json.loads(json.dumps(outcome.summary))
    figures = summarize(list(outcome.results), ["Yes", "No"], outcome.summary["wall_seconds"])
    assert {k: v for k, v in outcome.summary.items() if k in figures} == figures


def _result(i: int, rng: random.Random) -> ExampleResult:
    labels = ["A", "B", "C"]
    gold, pred = rng.choice(labels), rng.choice([*labels, None])
    fields: dict = {}
    if rng.random() < 0.5:
        fields["votes"] = [rng.choice(labels) for _ in range(3)]
    if rng.random() < 0.3:
        fields |= {"position_consistent": rng.choice([True, False, None]), "debias": rng.choice(["swap", "swap-vote"])}
    transcript = [
        {"role": rng.choice(["lawyer", "prosecutor"]), "round": 1, "text": "w " * rng.randint(1, 9),
         "extra": {"label": side}}
        for side in rng.sample(labels, rng.randint(0, 2))
    ]  # fmt: skip
    models = rng.sample(["fake/a", "fake/b", "fake/c"], rng.randint(1, 2))
    by_model = {
        m: {"sent": 1, "prompt_tokens": rng.randint(1, 999), "completion_tokens": rng.randint(1, 99)} for m in models
    }
    usage = {
        "calls": len(models),
        "sent": len(models),
        "prompt_tokens": 7,
        "completion_tokens": 2,
        "by_model": by_model,
    }
    confidence = None if pred is None or rng.random() < 0.2 else rng.random()
    return ExampleResult(
        str(i), "case", gold, pred, transcript, usage, None if pred else f"E: {i}", fields, 0.1, confidence
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_the_summary_counted_in_any_order_is_the_summary_of_the_results(seed: int) -> None:
    rng = random.Random(seed)
    results = [_result(i, rng) for i in range(300)]
    prices = {"fake/a": [1.0, 2.0], "fake/b": [0.3, 0.7], "fake/c": [5.0, 9.0]}
    arrived = list(enumerate(results))
    rng.shuffle(arrived)  # as cases finish at concurrency > 1
    tally = Tally(["A", "B", "C"])
    for position, res in arrived:
        tally.add(res, position)
    assert tally.summary(2.5, prices) == summarize(results, ["A", "B", "C"], 2.5, prices)
    assert tally.errors() == [r.error for r in results if r.prediction is None]


def test_a_callers_trace_still_collects_an_evaluations_calls() -> None:
    from courtroom.programs.baselines import ZeroShot

    exs = [dspy.Example(case=f"traced {i}", label="True", id=str(i)).with_inputs("case") for i in range(3)]
    prog = ZeroShot(["True", "False"], lm=oracle_lm({e.case: e.label for e in exs}, ["True", "False"], cache=False))
    with dspy.context(trace=[]):
        evaluate(prog, exs, concurrency=1)
        assert len(dspy.settings.trace) == 3  # an optimizer's own trace (dspy.context) is honoured


def test_an_evaluation_queues_a_few_examples_per_worker_not_all(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each queued example holds its context copy (~2.4 KB): queued all at once, memory grew with the examples."""
    from concurrent.futures import ThreadPoolExecutor

    from courtroom.eval import harness
    from courtroom.programs.baselines import ZeroShot

    submitted, ahead = [0], []
    real = ThreadPoolExecutor.submit

    def counted(self: ThreadPoolExecutor, fn: Any, /, *args: Any, **kwargs: Any) -> Any:
        submitted[0] += 1
        return real(self, fn, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "submit", counted)
    exs = [dspy.Example(case=f"queued {i}", label="True", id=str(i)).with_inputs("case") for i in range(60)]
    prog = ZeroShot(["True", "False"], lm=oracle_lm({e.case: e.label for e in exs}, ["True", "False"], cache=False))
    done = evaluate(prog, exs, concurrency=3, on_result=lambda res: ahead.append(submitted[0] - len(ahead) - 1))
    assert [r.id for r in done] == [e.id for e in exs]  # every example ran, results in input order
    assert max(ahead) <= harness.AHEAD * 3 + 1  # queued or running at any time; the old loop queued all 60
