"""Structural knobs in the search spaces: Debate-Feedback's gate, sides and memory, Courtroom-LLM's
previous_judges. Listed and conditional, priced at their dearest by the dry run, searched by a study
on the fakes, exported and accepted back by compile and run, and held to the study's identity."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import optuna
import pytest

from courtroom.optimize.study.designs import DesignStudyConfig, design_space
from courtroom.optimize.study.spaces import build_space, default_params, sample, split_params
from courtroom.programs import FRAMEWORKS, build_program
from courtroom.programs._debate import SIDES
from courtroom.programs.courtroom_llm import PREVIOUS_JUDGES
from courtroom.programs.debate_feedback import GATES
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]
NEW = {"debate-feedback": ("gate", "sides", "memory"), "courtroom-llm": ("previous_judges",)}


def test_each_space_lists_the_structural_knobs_with_every_valid_value() -> None:
    df = {p.name: p for p in build_space("debate-feedback")}
    assert set(df["gate"].choices) == set(GATES) and df["gate"].only_if == ("variant", ("assistant",))
    assert set(df["sides"].choices) == set(SIDES) and df["sides"].only_if is None
    assert set(df["memory"].choices) == {False, True} and df["memory"].only_if == ("n_rounds", (2, 3, 4))
    cl = {p.name: p for p in build_space("courtroom-llm")}
    assert set(cl["previous_judges"].choices) == set(PREVIOUS_JUDGES)
    assert cl["previous_judges"].only_if == ("judge_mode", ("sequential",))
    # The same knobs in a study across designs and in the trials settle convenes.
    across = {p.name for p in design_space(DesignStudyConfig(frameworks=["debate-feedback", "courtroom-llm"]))}
    settle = {p.name for p in build_space("settle")}
    for fw, knobs in NEW.items():
        assert {f"{fw}.{k}" for k in knobs} <= across and {f"{fw}.{k}" for k in knobs} <= settle
    # --space narrows them as any choice; values outside are refused.
    narrowed = {p.name: p for p in build_space("debate-feedback", overrides={"memory": "true", "gate": "mean,comment"})}
    assert narrowed["memory"].choices == (True,) and narrowed["gate"].choices == ("mean", "comment")
    with pytest.raises(Exception, match="outside"):
        build_space("debate-feedback", overrides={"sides": "left"})


def test_the_knobs_are_drawn_only_where_they_change_the_trial_and_reach_the_program() -> None:
    for fw in NEW:
        space = build_space(fw)
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=3))
        seen: dict[str, set[Any]] = {k: set() for k in NEW[fw]}
        for _ in range(40):
            trial = study.ask()
            params = sample(space, trial)
            if fw == "debate-feedback":
                assert ("gate" in trial.params) == (params["variant"] == "assistant")
                assert ("memory" in trial.params) == (params["n_rounds"] > 1)
            else:
                sequential = params["judge_mode"] == "sequential"
                assert ("previous_judges" in trial.params) == (sequential and params["n_judges"] >= 3)
                assert ("judge_mode" in trial.params) == (params["n_judges"] >= 2)
            knobs, _, _ = split_params(params)
            program = build_program(fw, LABELS, lm=oracle_lm({}, LABELS), knobs=knobs)
            for k in NEW[fw]:
                assert getattr(program, k) == params[k]
                if k in trial.params:
                    seen[k].add(params[k])
            study.tell(trial, 0.5)
        assert all(len(v) > 1 for v in seen.values()), seen
        # Trial 0 is the paper's configuration: the class's defaults.
        knobs, _, _ = split_params(default_params(fw, space))
        defaults = FRAMEWORKS[fw].knobs()
        assert all(defaults[k] == v for k, v in knobs.items())


def test_the_dry_run_prices_a_trial_at_the_dearest_value_of_each_knob() -> None:
    from courtroom.cost.dry_run import dearest_point
    from courtroom.cost.estimate import estimate_run
    from courtroom.runner.runs import RunConfig

    config = RunConfig(
        "debate-feedback", "boolean_expressions", data="generate", limit=2, train_limit=5, lm="openai/gpt-4o-mini"
    )
    space = build_space("debate-feedback", overrides={"n_rounds": "2", "n_debaters": "2"})
    point, bound = dearest_point(config, space)
    assert (point["variant"], point["gate"], point["sides"], point["memory"]) == ("assistant", "any", "split", True)
    trials = [
        {"variant": "single", "sides": "none", "memory": False},
        {"variant": "assistant", "gate": "mean", "sides": "split", "memory": True},
        {"variant": "assistant", "gate": "comment", "sides": "none", "memory": False},
    ]
    for knobs in trials:
        est = estimate_run(replace(config, knobs={"n_rounds": 2, "n_debaters": 2, **knobs}))
        assert est.calls <= bound.calls and est.prompt_tokens <= bound.prompt_tokens, knobs
    narrowed = build_space("courtroom-llm", overrides={"n_judges": "3", "k_precedents": "0"})
    point, _ = dearest_point(replace(config, framework="courtroom-llm"), narrowed)
    assert (point["judge_mode"], point["previous_judges"]) == ("sequential", "all")


def _study(main: Any, server: Any, tmp_path: Path, framework: str, trials: int, *space: str, name: str) -> Any:
    args = ["study", framework, "--trials", str(trials), "--dev-limit", "2", "--train-limit", "4"]
    args += [a for s in space for a in ("--space", s)]
    args += ["--storage", f"sqlite:///{tmp_path}/s.db", "--study-name", name, "--out", str(tmp_path / name)]
    args += ["--export-best", str(tmp_path / f"{name}.json"), "--lm", "openai/fake-knobs", "--api-base", server.url]
    return main(args)


SEARCHED = {
    "debate-feedback": (6, ("variant=assistant", "n_rounds=2", "n_debaters=2")),
    "courtroom-llm": (4, ("judge_mode=sequential", "n_judges=3", "k_precedents=0")),
}
"""Framework -> (trials, the space narrowed to where every new knob is drawn)."""
OTHER_THAN_DEFAULT = {
    "debate-feedback": ("gate=comment", "sides=none", "memory=true"),
    "courtroom-llm": ("previous_judges=last",),
}


@pytest.mark.parametrize("framework", list(SEARCHED))
def test_a_study_searches_the_knobs_and_its_recipe_round_trips_through_compile_and_run(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    framework: str,
) -> None:
    from courtroom.cli import main

    knobs, (trials, space) = NEW[framework], SEARCHED[framework]
    fixed = space + OTHER_THAN_DEFAULT[framework]
    with FakeServer() as server:
        assert _study(main, server, tmp_path, framework, trials, *space, name="wide") == 0, capsys.readouterr()
        study = optuna.load_study(study_name="wide", storage=f"sqlite:///{tmp_path}/s.db")
        for k in knobs:
            assert len({t.params[k] for t in study.trials}) > 1, (k, [t.params for t in study.trials])
        # Continuing it under another space is refused, naming --space (the identity rule).
        assert _study(main, server, tmp_path, framework, 1, *space, OTHER_THAN_DEFAULT[framework][0], name="wide") == 2
        assert "--space" in capsys.readouterr().err

        # A study narrowed to values other than the defaults exports them; compile and run take them back.
        assert _study(main, server, tmp_path, framework, 1, *fixed, name="narrow") == 0, capsys.readouterr()
        recipe = json.loads((tmp_path / "narrow.json").read_text())
        got = {k: v for k, v in recipe["knobs"].items() if k in knobs}
        assert got == {k: {"true": True}.get(v, v) for k, v in (f.split("=") for f in OTHER_THAN_DEFAULT[framework])}
        common = ["--lm", "openai/fake-knobs", "--api-base", server.url, "--train-limit", "2", "--dev-limit", "2"]
        code = main(
            ["compile", "--config", str(tmp_path / "narrow.json"), "--optimizer", "labeled", "--opt", "k=1"]
            + ["--test-limit", "0", "-o", str(tmp_path / "p.json"), *common]
        )
        assert code == 0, capsys.readouterr()
        compiled = json.loads((tmp_path / "p.json").read_text())["metadata"]["courtroom"]["config"]
        assert {k: compiled[k] for k in knobs} == got
        (tmp_path / "run.json").write_text(json.dumps({"framework": framework, "set": recipe["knobs"], "limit": 2}))
        capsys.readouterr()
        code = main(["run", "--config", str(tmp_path / "run.json"), "--out", str(tmp_path / "runs"), *common[:4]])
        out = capsys.readouterr().out
        assert code == 0, out
    folder = Path([x for x in out.splitlines() if x.startswith("run folder:")][-1].split(":", 1)[1].strip())
    meta = json.loads((folder / "meta.json").read_text())
    assert {k: meta["framework_config"][k] for k in knobs} == got


def _heard(framework: str, knobs: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (role, prompt) of ``framework`` with ``knobs`` deciding three cases (seeded oracle, no cache)."""
    from courtroom.models._concurrency import serial

    lm = oracle_lm({}, LABELS, seed=1)
    program = build_program(framework, LABELS, lm=lm, knobs=knobs)
    token = serial.set(True)  # one call after another: the same draws in every run, recorded in one order
    try:
        if framework == "debate-feedback" and knobs.get("variant") == "assistant":
            program.prepare([])
        for case in ("True and not False is", "not True or False is", "False or True is"):
            program(case=case)
    finally:
        serial.reset(token)
    return list(lm.engine_impl.prompts)


DEAD = {
    # parameter: (framework, the configuration where it does nothing, two values, where it acts)
    "previous_judges": (
        "courtroom-llm",
        {"n_judges": 2, "judge_mode": "sequential", "k_precedents": 0},
        ("all", "last"),
        {"n_judges": 3},
    ),
    "judge_mode": ("courtroom-llm", {"n_judges": 1, "k_precedents": 0}, ("parallel", "sequential"), {"n_judges": 2}),
    "threshold": (
        "debate-feedback",
        {"variant": "single", "n_rounds": 1, "n_debaters": 2},
        (0.05, 0.95),
        {"variant": "assistant", "reliability": "llm"},
    ),
}


@pytest.mark.parametrize("name", list(DEAD))
def test_a_parameter_is_not_drawn_where_it_changes_nothing_and_is_where_it_does(name: str) -> None:
    """No dead dimension for the sampler: where a study does not draw a parameter, every prompt and
    answer is the same whatever its value; where it draws it, some prompt differs."""
    framework, dead, (a, b), live = DEAD[name]
    assert _heard(framework, dead | {name: a}) == _heard(framework, dead | {name: b})
    assert _heard(framework, dead | live | {name: a}) != _heard(framework, dead | live | {name: b})
    space = build_space(
        framework, overrides={k: str(v) for k, v in dead.items() if k in {p.name for p in build_space(framework)}}
    )
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    for _ in range(10):
        trial = study.ask()
        params = sample(space, trial)
        assert name not in trial.params and params[name] == FRAMEWORKS[framework].knobs()[name]
        study.tell(trial, 0.0)
