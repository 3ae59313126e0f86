"""Harness: bounded requests in flight, repeats with statistics, prices, prepare, CLI options."""

from __future__ import annotations

import contextlib
import json
import math
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from courtroom.cli import main
from courtroom.data.tasks import load_task
from courtroom.errors import DataError
from courtroom.eval.harness import ExampleResult, evaluate, summarize
from courtroom.eval.metrics import load_prices
from courtroom.models.lms import RoleLMs
from courtroom.programs import build_program
from courtroom.runner.repeats import mean_sd_ci, run_repeats
from courtroom.runner.runs import RunConfig, run
from courtroom.runner.salting import salted_lm
from courtroom.testing import FakeServer, oracle_lm


def test_concurrency_bounds_requests_in_flight_despite_fan_out() -> None:
    examples = load_task("web_of_lies", limit=4).examples
    with FakeServer(latency=0.05) as server:
        lms = RoleLMs({"default": server.lm(f"openai/inflight-{time.time_ns()}", cache=False)})
        program = build_program("courtroom-llm", ["Yes", "No"], knobs={"n_judges": 5, "k_precedents": 0}, lms=lms)
        results = evaluate(program, examples, concurrency=2)
        assert all(r.error is None for r in results)
        assert server.max_in_flight <= 2
        server.max_in_flight = 0
        evaluate(program, examples, concurrency=2, max_in_flight=50)
        assert server.max_in_flight > 2  # five parallel judges per example: the bound is what held it


def test_failures_are_listed_and_count_as_wrong() -> None:
    results = [
        ExampleResult("a", "x", "True", "True"),
        ExampleResult("b", "x", "False", None, error="LMTimeoutError: t"),
        ExampleResult("c", "x", "False", "False"),
        ExampleResult("d", "x", "True", None, error="AdapterParseError: p"),
    ]
    s = summarize(results, ["True", "False"], 2.0)
    assert s["n"] == 4 and s["failures"] == 2 and s["accuracy"] == 0.5 and s["failed_ids"] == ["b", "d"]
    assert s["per_class"]["True"]["recall"] == 0.5 and s["per_class"]["False"]["precision"] == 1.0


def test_scores_counted_by_hand_agree_with_scikit_learn() -> None:
    import random

    from sklearn.metrics import f1_score, precision_recall_fscore_support

    from courtroom.eval.metrics import FAILED, score

    rng = random.Random(7)
    for trial in range(200):
        labels = ["a", "b", "c"][: rng.randint(1, 3)]
        n = rng.randint(1, 12)
        golds = [rng.choice(labels) for _ in range(n)]
        # Predictions outside the label space and failures count as wrong, as in a real run.
        preds = [rng.choice([*labels, "other", None]) for _ in range(n)]
        ours = score(golds, preds, labels)
        filled = [p if p is not None else FAILED for p in preds]
        f1 = f1_score(golds, filled, labels=labels, average="macro", zero_division=0)
        p, r, _, support = precision_recall_fscore_support(golds, filled, labels=labels, zero_division=0)
        assert ours["macro_f1"] == pytest.approx(f1), (trial, golds, preds)
        for i, lab in enumerate(labels):
            assert ours["per_class"][lab] == {
                "precision": pytest.approx(p[i]),
                "recall": pytest.approx(r[i]),
                "support": int(support[i]),
            }
    assert score([], [], ["a"]) == {"n": 0, "accuracy": 0.0, "macro_f1": 0.0, "failures": 0}


def test_cost_uses_the_user_table_then_litellm_price() -> None:
    usage = {"calls": 1, "sent": 1, "prompt_tokens": 1000, "completion_tokens": 1000}

    def result(model: str) -> ExampleResult:
        return ExampleResult(
            "a",
            "x",
            "True",
            "True",
            usage={
                **usage,
                "by_model": {model: {"sent": 1, "prompt_tokens": 1000, "completion_tokens": 1000}},
            },
        )

    assert summarize([result("openai/my-local")], ["True", "False"], 1.0)["cost"] is None
    mine = summarize([result("openai/my-local")], ["True", "False"], 1.0, {"openai/my-local": [1.0, 3.0]})
    assert math.isclose(mine["cost"], 0.004)
    known = summarize([result("openai/gpt-4o-mini")], ["True", "False"], 1.0, {"openai/gpt-4o-mini": [100.0, 100.0]})
    assert math.isclose(known["cost"], 0.2)  # the user's price wins over LiteLLM's
    litellm = summarize([result("openai/gpt-4o-mini")], ["True", "False"], 1.0, {"other/model": [100.0, 100.0]})
    assert math.isclose(litellm["cost"], 1000 * 0.15e-6 + 1000 * 0.6e-6)  # LiteLLM fills the gaps


def test_price_tables(tmp_path: Path) -> None:
    (tmp_path / "p.json").write_text(json.dumps({"a/b": [1, 2], "c/d": {"input": 0.5, "output": 1}}))
    assert load_prices(tmp_path / "p.json") == {"a/b": [1.0, 2.0], "c/d": [0.5, 1.0]}
    (tmp_path / "p.csv").write_text("model,input,output\na/b,1,2\n")
    assert load_prices(tmp_path / "p.csv") == {"a/b": [1.0, 2.0]}
    (tmp_path / "bad.csv").write_text("model,price\na/b,1\n")
    with pytest.raises(DataError, match="missing column input, output"):
        load_prices(tmp_path / "bad.csv")
    with pytest.raises(DataError, match="cannot read price table"):
        load_prices(tmp_path / "none.json")


def test_mean_sd_ci() -> None:
    s = mean_sd_ci([0.5, 0.6, 0.7])
    assert math.isclose(s["mean"], 0.6) and math.isclose(s["sd"], 0.1)
    half = 4.302652729911275 * 0.1 / math.sqrt(3)  # t(0.975, 2)
    assert math.isclose(s["ci_low"], 0.6 - half) and math.isclose(s["ci_high"], 0.6 + half)
    assert mean_sd_ci([0.4])["ci_low"] is None and mean_sd_ci([])["mean"] is None
    wide = mean_sd_ci([0.0, 0.5], bounds=(0.0, 1.0))
    assert wide["ci_low"] == 0.0 and wide["ci_high"] == 1.0  # clipped to the metric's range


def test_repeats_sample_fresh_answers_and_rerun_from_the_cache(tmp_path: Path) -> None:
    data = load_task("web_of_lies", limit=30, seed=2)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], accuracy=0.6, cache=True, model=f"fake/rep-{time.time_ns()}")
    config = RunConfig("zero-shot", "web_of_lies", limit=30, seed=2, out=str(tmp_path))
    group = run_repeats(config, 4, lms=RoleLMs({"default": lm}))
    accs = [o.summary["accuracy"] for o in group.outcomes]
    assert len(set(accs)) > 1  # salted repeats are distinct samples
    assert all(o.summary["sent"] == 30 for o in group.outcomes)
    stats = group.stats["accuracy"]
    assert math.isclose(stats["mean"], sum(accs) / 4) and stats["ci_low"] < stats["mean"] < stats["ci_high"]
    assert (group.group_dir / "repeats.md").read_text().count("|") > 10
    assert sorted(p.name for p in group.group_dir.glob("repeat-*")) == [f"repeat-{r}" for r in range(4)]
    again = run_repeats(config, 4, lms=RoleLMs({"default": lm}))
    assert [o.summary["accuracy"] for o in again.outcomes] == accs
    assert all(o.summary["sent"] == 0 and o.summary["cached"] == 30 for o in again.outcomes)


def test_salted_lm_keeps_the_model_and_shares_the_engine() -> None:
    lm = oracle_lm({}, ["Yes", "No"])
    twin = salted_lm(lm, 3)
    assert twin.model == lm.model and twin.engine_impl is lm.engine_impl and isinstance(twin, type(lm))


def test_run_prepares_the_program_on_the_train_split(tmp_path: Path) -> None:
    data = load_task("web_of_lies", limit=6)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], accuracy=0.9, model=f"fake/prep-{time.time_ns()}")
    config = RunConfig(
        "courtroom-llm", "web_of_lies", limit=6, knobs={"k_precedents": 2}, out=str(tmp_path), train_limit=40
    )
    outcome = run(config, lms=RoleLMs({"default": lm}))
    assert outcome.summary["failures"] == 0
    assert all(len(r.fields["precedents"]) == 2 * 2 for r in outcome.results)  # k=2 for each of A1 and A2
    train = {ex.case for ex in load_task("web_of_lies", split="train").examples}
    precedents = {p["case"] for r in outcome.results for p in r.fields["precedents"]}
    assert precedents <= train and not precedents & {r.input for r in outcome.results}
    prepared = json.loads((outcome.run_dir / "prepare.json").read_text())
    assert len(prepared["train_ids"]) == 40 and not set(prepared["train_ids"]) & {r.id for r in outcome.results}
    assert prepared["usage"]["calls"] == 0  # TF-IDF index only; reasons are written lazily per precedent


def test_cli_custom_dataset_with_repeats_and_prices(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"q": f"is {i} even?", "a": "yes" if i % 2 == 0 else "no"} for i in range(40)]
    pd.DataFrame(rows).to_csv(tmp_path / "even.csv", index=False)
    (tmp_path / "prices.json").write_text(json.dumps({"openai/even-model": [1.0, 2.0]}))
    with FakeServer() as server:
        code = main(
            [
                "run",
                "zero-shot",
                "--dataset",
                str(tmp_path / "even.csv"),
                "--text-field",
                "q",
                "--label-field",
                "a",
                "--labels",
                "yes,no",
                "--lm",
                "openai/even-model",
                "--api-base",
                server.url,
                "--repeats",
                "2",
                "--limit",
                "5",
                "--prices",
                str(tmp_path / "prices.json"),
                "--out",
                str(tmp_path / "runs"),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "repeat group:" in out and "| accuracy |" in out and "95% CI" in out
    (group,) = (tmp_path / "runs").iterdir()
    meta = json.loads((group / "repeat-0" / "meta.json").read_text())
    assert meta["task"]["name"] == "custom:even" and len(meta["example_ids"]) == 5
    summary = json.loads((group / "repeat-1" / "summary.json").read_text())
    assert summary["cost"] is not None and summary["cost"] > 0


def test_cli_dataset_options_need_each_other(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    data = tmp_path / "x.csv"  # a file that is there: what it needs, not "no such file"
    data.write_text("text,label\nIs it?,yes\n")
    assert main(["run", "zero-shot", "--dataset", str(data), "--lm", "openai/x"]) == 2
    assert "--dataset needs --labels (its fields: text, label)" in " ".join(capsys.readouterr().err.split())
    assert main(["run", "--resume", "/nonexistent"]) == 2
    assert "not a run folder" in capsys.readouterr().err


@pytest.mark.parametrize("stop", [False, True])
def test_a_worker_keeps_its_cache_connections_across_examples_and_closes_them(monkeypatch, stop) -> None:
    """Issue 44: each example reopened its thread's cache connection (~0.6 ms of CPU per example)."""
    import sqlite3
    import threading

    import dspy
    from diskcache import core

    from courtroom.eval import harness
    from courtroom.programs.baselines import ZeroShot

    connect = core.sqlite3.connect
    opened: list[Any] = []

    class Watched(sqlite3.Connection):
        closed = False

        def close(self) -> None:
            self.closed = True
            super().close()

    def watched(*args: Any, **kwargs: Any) -> Any:
        con = connect(*args, factory=Watched, **kwargs)
        if threading.current_thread().name.startswith("courtroom-eval"):
            opened.append(con)
        return con

    monkeypatch.setattr(core.sqlite3, "connect", watched)
    monkeypatch.setattr(harness, "REOPEN_EVERY", 1000)  # (every 16 examples in a run: a connection's memory)
    exs = [dspy.Example(case=f"reuse {i}", label="True", id=str(i)).with_inputs("case") for i in range(40)]
    prog = ZeroShot(["True", "False"], lm=oracle_lm({e.case: e.label for e in exs}, ["True", "False"], cache=True))
    assert dspy.cache.disk_cache is not None  # opened here (it opens at its first use: its own 16 connections)

    def halt(res: ExampleResult) -> None:
        if stop and res.id == "20":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) if stop else contextlib.nullcontext():
        evaluate(prog, exs, concurrency=2, on_result=halt)
    assert 0 < len(opened) <= 2 * 16  # a worker opens a shard once (16 shards), not once per example
    assert all(con.closed for con in opened)  # and closes it, in its own thread, before it ends


def test_an_evaluation_keeps_its_calls_out_of_dspy_history() -> None:
    """Issue 44: every call stayed in DSPy's four history lists (~5.5 KB a call), forced on."""
    import dspy
    from dspy.clients import base_lm

    from courtroom.programs.baselines import ZeroShot

    exs = [dspy.Example(case=f"history {i}", label="True", id=str(i)).with_inputs("case") for i in range(6)]
    lm = oracle_lm({e.case: e.label for e in exs}, ["True", "False"], accuracy=1.0, cache=False)
    prog = ZeroShot(["True", "False"], lm=lm)
    before = list(base_lm.GLOBAL_HISTORY)
    results = evaluate(prog, exs, concurrency=2)
    assert [r.prediction for r in results] == ["True"] * 6
    assert base_lm.GLOBAL_HISTORY == before and lm.history == [] and prog.history == []
