"""Settle, then trial in studies: its space (panel, threshold, which trial and the trial's knobs),
designs without knobs as single points of a study across designs, and the dry run's bound."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import dspy
import optuna
import pytest

from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study.designs import DesignStudyConfig, design_space, parse_frameworks, run_design_study
from courtroom.optimize.study.spaces import build_space, default_params, sample, split_params
from courtroom.programs import build_program
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=6).examples
    dev = load_task("boolean_expressions", split="dev", limit=6).examples
    return train, dev, {e.case: e.label for e in train + dev}


def test_the_settle_space_draws_the_chosen_trials_knobs_only() -> None:
    space = build_space("settle")
    names = {p.name for p in space}
    assert {"panel_size", "threshold", "trial", "show_panel", "jot.n_loops", "courtroom-llm.n_judges"} <= names
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=1))
    seen = set()
    for _ in range(30):
        trial = study.ask()
        params = sample(space, trial)
        drawn = {k.split(".")[0] for k in trial.params if "." in k}
        assert drawn <= {params["trial"]}, (params["trial"], trial.params)
        knobs, _, _ = split_params(params)
        assert not any("." in k for k in knobs)
        program = build_program("settle", LABELS, lm=oracle_lm({}, LABELS), knobs=knobs)
        assert program.trial.name == params["trial"]
        own = {k.split(".", 1)[1]: v for k, v in params.items() if k.startswith(params["trial"] + ".")}
        assert {k: getattr(program.trial, k) for k in own} == own, "the drawn trial knobs reach the trial"
        seen.add(params["trial"])
        study.tell(trial, 0.5)
    assert seen == {"courtroom-llm", "jot", "debate-feedback", "khan-debate"}


def test_the_paper_default_of_settle_is_its_class_default() -> None:
    knobs, _, _ = split_params(default_params("settle", build_space("settle")))
    program = build_program("settle", LABELS, lm=oracle_lm({}, LABELS), knobs=knobs)
    fresh = build_program("settle", LABELS, lm=oracle_lm({}, LABELS))
    assert program.trial.config() == fresh.trial.config()
    assert {k: v for k, v in program.config().items() if k != "trial_knobs"} == {
        k: v for k, v in fresh.config().items() if k != "trial_knobs"
    }


def test_space_overrides_reach_the_trial_knobs() -> None:
    config = DesignStudyConfig(frameworks=["jot", "settle"], space={"settle.trial": "jot", "settle.jot.n_loops": "2"})
    by_name = {p.name: p for p in design_space(config)}
    assert by_name["settle.trial"].choices == ("jot",)
    assert (by_name["settle.jot.n_loops"].low, by_name["settle.jot.n_loops"].high) == (2, 2)
    assert (by_name["jot.n_loops"].low, by_name["jot.n_loops"].high) == (1, 5), "the jot design is not narrowed"


def test_designs_without_knobs_join_a_study_across_designs() -> None:
    assert parse_frameworks("zero-shot,cot,few-shot,jot") == ["zero-shot", "cot", "few-shot", "jot"]
    space = design_space(DesignStudyConfig(frameworks=["zero-shot", "jot"]))
    assert [p.name for p in space if p.name.startswith("zero-shot")] == []


def test_a_study_of_one_knobless_design_is_refused() -> None:
    from courtroom.optimize.study.pipeline import study_config
    from courtroom.spec import Experiment

    spec = Experiment.build("study", framework="zero-shot")
    with pytest.raises(ConfigError, match="zero-shot has no knobs to search"):
        study_config(spec)


def test_study_across_designs_scores_a_knobless_design_once_and_finds_settle(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    config = DesignStudyConfig(
        frameworks=["zero-shot", "jot", "settle"],
        trials=12,
        dev=len(dev),
        storage=f"sqlite:///{tmp_path}/s.db",
        cost_objective=True,
        cost="calls",
        space={"settle.trial": "jot", "settle.jot.n_loops": "1", "jot.n_loops": "1:2", "settle.panel_size": "1:3"},
        concurrency=2,
    )
    lms = RoleLMs({"default": oracle_lm(gold, LABELS, 0.7, cache=True)})
    out = run_design_study(config, lms=lms, trainset=train, devset=dev, labels=LABELS)
    trials = out.study.trials
    complete = [t for t in trials if t.state.name == "COMPLETE"]
    zero = [t for t in complete if t.user_attrs["design"] == "zero-shot" and "duplicate_of" not in t.user_attrs]
    assert len(zero) == 1, "a design without knobs is scored once"
    assert zero[0].values[1] == 1.0, "one call per example"
    repeats = [t for t in trials if t.user_attrs.get("duplicate_of") is not None]
    for t in repeats:  # a repeated configuration is not run: it takes its original's value
        original = trials[t.user_attrs["duplicate_of"]]
        assert t.params == original.params and "duplicate_of" not in original.user_attrs
        assert t.user_attrs["design"] != "zero-shot" or original.number == zero[0].number
    settle = [t for t in complete if t.user_attrs["design"] == "settle"]
    assert settle and all("trial_knobs" not in t.user_attrs["config"] for t in settle)
    front = {t.number for t in out.best}
    assert zero[0].number in front, "the cheapest design is on the front"
    assert {t.user_attrs["design"] for t in trials} == {"zero-shot", "jot", "settle"}


def test_the_dry_run_of_a_settle_study_bounds_its_dearest_trial() -> None:
    from courtroom.cost.dry_run import dearest_point, max_points
    from courtroom.runner.runs import RunConfig

    space = build_space(
        "settle", overrides={"trial": "jot,khan-debate", "jot.n_loops": "1:2", "khan-debate.n_rounds": "1:4"}
    )
    points = max_points(space)
    assert {p["trial"] for p in points} == {"jot", "khan-debate"}
    assert all(p["panel_size"] == 5 for p in points)
    config = RunConfig("settle", "boolean_expressions", data="generate", limit=3, lm="openai/fake", split="dev")
    point, est = dearest_point(config, space)
    # khan-debate, 4 rounds: 8 debater calls and a judge, after 5 panel calls; jot, 2 rounds: 6 after 5.
    assert point["trial"] == "khan-debate" and point["trial_knobs"] == "n_rounds=4"
    assert est.calls == 3 * (5 + 9) and est.min_calls == 3 * 5


def test_a_knobless_best_trial_exports_a_recipe_without_stray_knobs(data: Any, tmp_path: Path) -> None:
    import json

    import courtroom

    train, dev, gold = data
    courtroom.study(
        task="boolean_expressions",
        frameworks=["zero-shot", "jot"],
        space={"design": "zero-shot"},
        trials=2,
        train_limit=4,
        dev_limit=4,
        storage=f"sqlite:///{tmp_path}/z.db",
        out=str(tmp_path / "rep"),
        export_best=str(tmp_path / "best.json"),
        lms=RoleLMs({"default": oracle_lm(gold, LABELS, 0.7, cache=True)}),
        progress=False,
    )
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert recipe["framework"] == "zero-shot" and recipe["knobs"] == {}
