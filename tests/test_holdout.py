"""``study --test-limit N``: the chosen trial(s) scored on the test split beside the dev score that chose them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import courtroom
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]


def _oracle() -> RoleLMs:
    """Wrong on every train and dev case, right on every test case: a test score can only come from test cases."""
    parts = {s: load_task("boolean_expressions", data="generate", split=s, limit=12).examples for s in ("train", "dev")}
    test = load_task("boolean_expressions", data="generate", split="test", limit=6).examples
    gold = {e.case: e.label for e in [*parts["train"], *parts["dev"], *test]}
    lm = oracle_lm(gold, LABELS, accuracy=0.0, case_accuracy=dict.fromkeys((e.case for e in test), 1.0), cache=True)
    return RoleLMs({"default": lm})


def test_the_best_trial_is_scored_on_the_test_split(tmp_path: Path) -> None:
    outcome = courtroom.study(
        "jot",
        task="boolean_expressions",
        data="generate",
        trials=3,
        train_limit=4,
        dev_limit=6,
        test_limit=6,
        space={"n_loops": "1:2"},
        storage=f"sqlite:///{tmp_path}/s.db",
        out=str(tmp_path / "rep"),
        export_best=str(tmp_path / "best.json"),
        lms=_oracle(),
        progress=False,
    )
    best = outcome.best[0]  # the exported trial: every trial scores 0 on dev, the first to reach it
    assert set(outcome.test) == {best.number}
    scores = outcome.test[best.number]
    assert scores["n"] == 6 and scores["accuracy"] == 1.0, "scored on the test cases, where the oracle is right"
    assert scores["dev"] == best.values[0] == 0.0 and scores["dev_n"] == 6
    assert scores["ci_low"] == pytest.approx(0.61, abs=0.01) and scores["ci_high"] == pytest.approx(1.0), (
        "Wilson, 6 of 6"
    )
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert recipe["test"]["accuracy"] == 1.0 and recipe["values"] == [0.0]
    summary = json.loads((tmp_path / "rep" / "study.json").read_text())
    assert summary["best"][0]["test"]["n"] == 6
    table = (tmp_path / "rep" / "test.csv").read_text()
    assert "dev accuracy" in table and "test 95% CI" in table


def test_every_point_of_a_pareto_front_is_scored(tmp_path: Path) -> None:
    outcome = courtroom.study(
        task="boolean_expressions",
        data="generate",
        frameworks=["zero-shot", "jot"],
        trials=4,
        train_limit=4,
        dev_limit=4,
        test_limit=3,
        cost_objective=True,
        cost_unit="calls",
        space={"jot.n_loops": "1:2"},
        storage=f"sqlite:///{tmp_path}/d.db",
        out=str(tmp_path / "rep"),
        lms=_oracle(),
        progress=False,
    )
    front = {t.number for t in outcome.best}  # each configuration once
    assert set(outcome.test) == front
    assert all(s["n"] == 3 and s["design"] in ("zero-shot", "jot") for s in outcome.test.values())


def test_the_cli_prints_test_beside_dev_and_the_dry_run_counts_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from courtroom.cli import main
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        common = ["--lm", "openai/fake-model", "--api-base", server.url, "--storage", f"sqlite:///{tmp_path}/c.db"]
        args = ["study", "jot", "--trials", "2", "--dev-limit", "3", "--test-limit", "4", "--space", "n_loops=1"]
        code = main([*args, "--dry-run", *common])
        out = capsys.readouterr().out
        assert code == 0 and "test split: 1 chosen trial(s), at most" in out
        assert server.counts["requests"] == 0
        code = main([*args, "--out", str(tmp_path / "rep"), *common])
        out = capsys.readouterr().out
    assert code == 0, out
    assert "on the test split, beside the dev score" in out and "test 95% CI" in out


def test_test_limit_is_checked_before_anything_runs(capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.cli import main

    assert main(["study", "jot", "--test-limit", "-1"]) == 2
    assert "--test-limit" in capsys.readouterr().err


def test_scores_survive_on_the_study(tmp_path: Path) -> Any:
    from courtroom.optimize.study.holdout import KEY, stored

    outcome = courtroom.study(
        "jot",
        task="boolean_expressions",
        data="generate",
        trials=1,
        train_limit=4,
        dev_limit=3,
        test_limit=2,
        space={"n_loops": "1"},
        storage=f"sqlite:///{tmp_path}/k.db",
        out=str(tmp_path / "rep"),
        lms=_oracle(),
        progress=False,
    )
    assert KEY in outcome.study.user_attrs
    assert stored(outcome.study) == outcome.test
