"""A study proves its choice on new data: test scoring by default, each configuration once, honest budgets."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import courtroom
from courtroom.data.tasks import load_task
from courtroom.eval.harness import ExampleResult
from courtroom.models.lms import RoleLMs
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]


def _oracle(p: float = 0.7, test: int = 8) -> tuple[RoleLMs, Any]:
    parts = [
        load_task("boolean_expressions", data="generate", split=s, limit=n).examples
        for s, n in (("train", 4), ("dev", 8), ("test", test))
    ]
    gold = {e.case: e.label for part in parts for e in part}
    lm = oracle_lm(gold, LABELS, accuracy=p, cache=True)
    return RoleLMs({"default": lm}), lm.engine_impl


def _study(tmp_path: Path, lms: RoleLMs, **kw: Any) -> Any:
    args: dict[str, Any] = {
        "task": "boolean_expressions",
        "data": "generate",
        "train_limit": 4,
        "dev_limit": 8,
        "space": {"n_models": "1:5"},
        "storage": f"sqlite:///{tmp_path}/s.db",
        "out": str(tmp_path / "rep"),
        "lms": lms,
        "progress": False,
    }
    return courtroom.study("parallel-vote", **(args | kw))


def _configs(study: Any) -> list[int]:
    """n_models of every trial that ran (repeats that reused a stored value left out)."""
    return [t.params["n_models"] for t in study.trials if "duplicate_of" not in t.user_attrs]


def test_a_study_scores_its_winner_on_test_by_default_and_runs_each_configuration_once(tmp_path: Path) -> None:
    lms, engine = _oracle()
    answered = {"n": 0}
    original = engine.answer

    def counting(*args: Any, **kwargs: Any) -> Any:
        answered["n"] += 1
        return original(*args, **kwargs)

    engine.answer = counting
    outcome = _study(tmp_path, lms, trials=7, export_best=str(tmp_path / "best.json"))
    trials = outcome.study.trials
    assert trials[0].params == {"n_models": 3} and trials[0].user_attrs.get("paper_default"), "trial 0: the default"
    ran = _configs(outcome.study)
    assert sorted(ran) == [1, 2, 3, 4, 5], f"the 5 configurations once each, not {ran}"
    repeats = [t for t in trials if "duplicate_of" in t.user_attrs]
    for t in repeats:  # a repeat took its original's value, and sent nothing
        original_trial = trials[t.user_attrs["duplicate_of"]]
        assert t.params == original_trial.params and t.state == original_trial.state
        assert t.values == original_trial.values or t.state.name == "PRUNED"
        assert "calls" not in t.user_attrs
    # Held-out scoring with no --test-limit: the chosen trial, on as many test cases as dev's (8).
    best = outcome.best[0]
    assert set(outcome.test) == {best.number} and "duplicate_of" not in best.user_attrs
    scores = outcome.test[best.number]
    assert scores["n"] == 8 and scores["ci_low"] <= scores["accuracy"] <= scores["ci_high"]
    assert scores["dev"] == best.values[0]
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert recipe["test"]["n"] == 8 and recipe["trial"] == best.number
    summary = json.loads((tmp_path / "rep" / "study.json").read_text())
    assert summary["best"][0]["test"]["n"] == 8
    # Calls: dev (8 cases x up to 5 votes, shared by every n through the cache) and test (8 x 5 at most).
    assert answered["n"] <= 8 * 5 + 8 * 5


def test_test_limit_0_turns_the_held_out_scoring_off(tmp_path: Path) -> None:
    lms, _ = _oracle()
    outcome = _study(tmp_path, lms, trials=1, test_limit=0)
    assert outcome.test == {} and not (tmp_path / "rep" / "test.csv").exists()


def test_the_pareto_front_lists_each_configuration_once(tmp_path: Path) -> None:
    lms, _ = _oracle(test=6)
    outcome = _study(tmp_path, lms, trials=5, cost_objective=True, test_limit=6, space={"n_models": "1:3"})
    front = [t.params["n_models"] for t in outcome.best]
    assert len(front) == len(set(front)) and front, front
    assert sorted(_configs(outcome.study)) == [1, 2, 3]
    assert set(outcome.test) == {t.number for t in outcome.best}


def test_a_budget_that_fits_no_trial_says_so_before_any_request(tmp_path: Path, capsys: Any) -> None:
    from courtroom.cli import main

    with FakeServer() as server:
        code = main([
            "study", "parallel-vote", "--task", "boolean_expressions", "--data", "generate", "--trials", "3",
            "--dev-limit", "12", "--train-limit", "4", "--space", "n_models=1:5", "--max-calls", "40",
            "--lm", "openai/fake", "--api-base", server.url, "--storage", f"sqlite:///{tmp_path}/b.db",
            "--out", str(tmp_path / "rep"),
        ])  # fmt: skip
        err = capsys.readouterr().err
        assert code == 2, err
        assert "one trial costs up to 60 calls; --max-calls 40 fits none" in err
        assert server.counts["requests"] == 0


def _results(correct: list[list[bool]]) -> list[list[ExampleResult]]:
    """One result list per repeat; ``correct[case][repeat]``."""
    reps = len(correct[0])
    return [
        [
            ExampleResult(id=f"c{i}", input="", gold="True", prediction="True" if row[r] else "False")
            for i, row in enumerate(correct)
        ]
        for r in range(reps)
    ]


def test_repeats_interval_covers_the_case_sample() -> None:
    from courtroom.runner.repeats import OVER_BOTH, repeat_stats

    # Half the cases always right, half always wrong: every repeat scores 0.5, so an interval over
    # the repeats alone has no width, though 20 other cases could score quite differently.
    correct = [[True] * 3 if i % 2 else [False] * 3 for i in range(20)]
    summaries = [{"accuracy": 0.5, "macro_f1": 1 / 3, "calls": 20} for _ in range(3)]
    stats = repeat_stats(summaries, _results(correct), LABELS)
    acc = stats["accuracy"]
    assert acc["over"] == OVER_BOTH and acc["mean"] == 0.5
    assert acc["ci_low"] < 0.35 and acc["ci_high"] > 0.65, acc
    alone = repeat_stats(summaries)["accuracy"]
    assert alone["ci_high"] - alone["ci_low"] < 1e-9, "the old interval: repeats only"
    again = repeat_stats(summaries, _results(correct), LABELS)["accuracy"]
    assert (again["ci_low"], again["ci_high"]) == (acc["ci_low"], acc["ci_high"]), "seeded"
    # Repeats that disagree widen it further than the cases alone.
    noisy = [[(i + r) % 2 == 0 for r in range(3)] for i in range(20)]
    wide = repeat_stats(summaries, _results(noisy), LABELS)["accuracy"]
    assert wide["ci_low"] < 0.5 < wide["ci_high"]


def test_the_test_split_leaves_out_the_cases_the_trials_saw(tmp_path: Path) -> None:
    import csv

    def rows(lo: int, hi: int) -> list[tuple[str, str]]:
        return [(f"review {i}: it was {'great' if i % 2 else 'awful'}", "positive" if i % 2 else "negative")
                for i in range(lo, hi)]  # fmt: skip

    def write(name: str, part: list[tuple[str, str]]) -> str:
        with (tmp_path / name).open("w", newline="") as f:
            csv.writer(f).writerows([("text", "sentiment"), *part])
        return str(tmp_path / name)

    # The test file repeats 2 train and 2 dev texts: 8 of its 12 cases are held out.
    train, dev, test = rows(0, 8), rows(8, 16), [*rows(4, 6), *rows(10, 12), *rows(16, 24)]
    lm = oracle_lm(dict(train + dev + test), ["positive", "negative"], accuracy=0.7, cache=True)
    outcome = courtroom.study(
        "parallel-vote", dataset=write("train.csv", train), dev_data=write("dev.csv", dev),
        test_data=write("test.csv", test), text_field="text", label_field="sentiment", labels="positive,negative",
        train_limit=8, dev_limit=8, test_limit=12, space={"n_models": "1:2"}, trials=2,
        storage=f"sqlite:///{tmp_path}/s.db", out=str(tmp_path / "rep"), lms=RoleLMs({"default": lm}), progress=False,
    )  # fmt: skip
    (scores,) = outcome.test.values()
    assert scores["n"] == 8, "the test cases whose text is in train or dev are not held out"
    asked = " ".join(text for _, text in lm.engine_impl.prompts)
    assert not any(case in asked for case, _ in rows(4, 6)), "a seen train case was scored as held out"
