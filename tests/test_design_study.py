"""One study over designs: a conditional space, paper defaults per design, cost in calls or tokens
(compile included), Pareto front and cache reuse per design, the CLI, export of the compiled best
program, and mixed panels drawn by the search."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import dspy
import optuna
import pandas as pd
import pytest

import courtroom
from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study.designs import DESIGN, DesignStudyConfig, design_space, run_design_study
from courtroom.programs import FRAMEWORKS
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]
DESIGNS = ["jot", "courtroom-llm", "self-consistency"]


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=6).examples
    dev = load_task("boolean_expressions", split="dev", limit=6).examples
    return train, dev, {e.case: e.label for e in train + dev}


def _oracle(gold: dict[str, str]) -> RoleLMs:
    return RoleLMs({"default": oracle_lm(gold, LABELS, 0.7, cache=True)})


def test_the_design_comes_first_and_each_space_is_conditional_on_it() -> None:
    narrowed = {"self-consistency.k_samples": "2:4", "design": "jot,self-consistency"}
    config = DesignStudyConfig(frameworks=DESIGNS, space=narrowed)
    space = design_space(config)
    assert space[0].name == DESIGN and space[0].choices == ("jot", "self-consistency")
    by_name = {p.name: p for p in space}
    assert (by_name["self-consistency.k_samples"].low, by_name["self-consistency.k_samples"].high) == (2, 4)
    assert by_name["jot.n_loops"].only_if == (DESIGN, ("jot",))
    assert by_name["jot.use_prosecutor"].only_if == ("jot.use_lawyer", (True,))
    study = optuna.create_study()
    from courtroom.optimize.study.spaces import sample

    for _ in range(12):
        trial = study.ask()
        params = sample(space, trial)
        design = params[DESIGN]
        assert {k.split(".")[0] for k in trial.params if k != DESIGN} <= {design}, trial.params
        study.tell(trial, 0.5)
    defaults = config.paper_defaults(space)
    assert [d[DESIGN] for d in defaults] == DESIGNS
    assert defaults[0]["jot.n_loops"] == courtroom.programs.get_framework("jot").knobs()["n_loops"]


def test_one_study_over_designs_with_cost_and_compile(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    config = DesignStudyConfig(
        frameworks=DESIGNS,
        trials=8,
        dev=len(dev),
        storage=f"sqlite:///{tmp_path}/s.db",
        cost_objective=True,
        cost="calls",
        compile="bootstrap",
        compile_settings={"max_bootstrapped_demos": 1},
        concurrency=2,
    )
    out = run_design_study(config, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS)
    # Eight configurations ran; a trial that drew one again took its value (duplicate_of), uncounted.
    trials = [t for t in out.study.trials if "duplicate_of" not in t.user_attrs]
    assert len(trials) == 8
    defaults = [t for t in trials if t.user_attrs.get("paper_default")]
    assert [t.user_attrs["design"] for t in defaults] == DESIGNS, "trial 0 of every design is its paper default"
    done = [t for t in trials if t.state.name == "COMPLETE"]
    assert done
    for t in done:
        eval_calls = t.user_attrs["calls"] - 0  # program calls on dev plus the compile's
        assert t.user_attrs["compile_calls"] > 0, "bootstrap ran the program on the train split"
        per_example = t.user_attrs["cost_per_example"]
        assert per_example == pytest.approx(eval_calls / len(dev), rel=0.01), (t.number, t.user_attrs)
    from courtroom.optimize.study._design_report import write_design_report

    written = write_design_report(out.study, tmp_path / "report")
    pareto = pd.read_csv(written["pareto_table"])
    assert set(pareto["design"]) <= set(DESIGNS) and len(pareto) >= 1
    designs = pd.read_csv(written["designs"])
    assert set(designs["design"]) == set(DESIGNS) and "cached" in designs.columns
    assert written["pareto"].exists()


def test_token_cost_does_not_depend_on_the_cache(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    lms = _oracle(gold)
    costs = []
    for name in ("first", "second"):  # the second study finds every call in the cache
        config = DesignStudyConfig(
            frameworks=["self-consistency"],
            trials=1,
            dev=len(dev),
            storage=f"sqlite:///{tmp_path}/{name}.db",
            cost_objective=True,
            cost="tokens",
        )
        t = run_design_study(config, lms=lms, trainset=train, devset=dev, labels=LABELS).study.trials[0]
        costs.append((t.values[1], t.user_attrs["sent"], t.user_attrs["cached"]))
    (first, sent1, _), (second, sent2, cached2) = costs
    assert sent1 > 0 and sent2 == 0 and cached2 > 0
    assert first == second > 0


def test_cli_searches_designs_resumes_and_exports_the_compiled_best(tmp_path: Path, courtroom_cli: Any) -> None:
    def _cli(*args: str, cwd: Path) -> Any:
        done = courtroom_cli("study", *args, cwd=cwd)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
        return done

    model = f"openai/designs-{uuid.uuid4().hex[:6]}"
    with FakeServer() as server:
        common = [
            "--frameworks", "self-consistency,parallel-vote,courtroom-llm",
            "--lm", model, "--api-base", server.url,
            "--storage", f"sqlite:///{tmp_path}/s.db", "--study-name", "d",
            "--dev-limit", "3", "--train-limit", "4", "--cost-objective",
            "--compile", "labeled", "--opt", "k=2",
            "--space", "courtroom-llm.k_precedents=0",
        ]  # fmt: skip
        first = _cli(*common, "--trials", "4", cwd=tmp_path)
        assert "Pareto front across designs" in first.stdout and "cached" in first.stdout
        second = _cli(*common, "--trials", "6", "--export-best", str(tmp_path / "best.json"), cwd=tmp_path)
        assert "trial(s) in storage" in second.stdout
    trials = pd.read_csv(tmp_path / "studies" / "d" / "trials.csv")
    ran = trials if "duplicate_of" not in trials.columns else trials[trials["duplicate_of"].isna()]
    assert len(ran) == 6, "the study holds 6 configurations (a repeated one reuses its value, uncounted)"
    pareto = pd.read_csv(tmp_path / "studies" / "d" / "pareto.csv")
    assert {"design", "score", "cost_per_example"} <= set(pareto.columns)
    assert (pareto["cost_unit"] == "tokens").all()
    program = courtroom.load(tmp_path / "best.json", lm="openai/x", api_base="http://127.0.0.1:9/v1")
    meta = program.saved_metadata
    assert meta["study"]["name"] == "d" and isinstance(meta["study"]["trial"], int)
    assert meta["framework"] in ("self-consistency", "parallel-vote", "courtroom-llm")
    assert any(p.demos for _, p in program.named_predictors()), "the exported program is the compiled one"


def test_the_search_can_draw_a_mixed_panel_for_repeated_roles(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    tag = uuid.uuid4().hex[:6]
    a, b = f"openai/pa-{tag}", f"openai/pb-{tag}"
    with FakeServer() as server:
        config = DesignStudyConfig(
            frameworks=["self-consistency"],
            models=[a, b],
            trials=1,
            dev=2,
            storage=f"sqlite:///{tmp_path}/p.db",
            api_base=server.url,
            space={"k_samples": "4"},
        )
        space = {p.name: p for p in design_space(config)}
        assert space["self-consistency.model:classifier"].choices == (a, b, f"{a},{b}")
        from courtroom.optimize.study import create_study

        study = create_study(config, list(space.values()))
        study.enqueue_trial({DESIGN: "self-consistency", "self-consistency.model:classifier": f"{a},{b}"})
        config.trials = 2
        out = run_design_study(config, trainset=train, devset=dev[:2], labels=LABELS)
        assert out.study.trials[1].params["self-consistency.model:classifier"] == f"{a},{b}"
        # trial 0: 4 samples on a, one request with n=4 per case (courtroom.models.sampling); the
        # panel sends samples 1 and 3 to b (a request each: a panel takes no n), while samples 0 and 2
        # go to a under the same rollouts as trial 0: the cache answers them
        assert server.models[b.split("/")[1]] == 2 * 2
        demos = FRAMEWORKS["self-consistency"].knobs()["k_shots"]  # zero-shot CoT demos, made once on a
        assert server.models[a.split("/")[1]] == 1 * 2 + demos
        assert out.study.trials[1].user_attrs["cached"] == 2 * 2 + demos  # and the demos, made again
    assert json.loads(json.dumps(out.study.trials[1].user_attrs["config"]))


@pytest.mark.parametrize(("optimizer", "settings"), [("labeled", {"k": 2}), ("mipro", {})])
def test_compile_calls_count_in_the_trial_cost(data: Any, tmp_path: Path, optimizer: str, settings: Any) -> None:
    train, dev, gold = data
    config = DesignStudyConfig(
        frameworks=["self-consistency"],
        trials=1,
        dev=len(dev),
        storage=f"sqlite:///{tmp_path}/c.db",
        cost_objective=True,
        cost="calls",
        compile=optimizer,
        compile_settings=settings,
    )
    t = run_design_study(config, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS).study.trials[0]
    assert t.state.name == "COMPLETE", t.user_attrs
    compile_calls = t.user_attrs["compile_calls"]  # prepare (zero-shot CoT demos) and the optimizer
    plain = replace(config, compile=None, compile_settings={}, storage=f"sqlite:///{tmp_path}/plain.db")
    prepared = run_design_study(plain, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS).study.trials[0]
    prepare_calls = prepared.user_attrs["compile_calls"]
    added = compile_calls - prepare_calls
    assert (added > 0) is (optimizer == "mipro"), "LabeledFewShot makes no call; MIPROv2 light does"
    eval_calls = t.user_attrs["calls_per_example"] * len(dev)
    assert t.values[1] == pytest.approx((eval_calls + compile_calls) / len(dev))


def test_dollar_cost_uses_the_price_table(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    base = dict(frameworks=["self-consistency"], trials=1, dev=len(dev), cost_objective=True)
    priced = DesignStudyConfig(
        **base, storage=f"sqlite:///{tmp_path}/d.db", cost="dollars", prices={"fake/oracle": [1e6, 3e6]}
    )
    t = run_design_study(priced, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS).study.trials[0]
    tokens = t.user_attrs["tokens_per_example"]
    assert t.user_attrs["cost_unit"] == "dollars"
    assert tokens < t.values[1] < 3 * tokens, "input tokens at $1, output tokens at $3 each"
    unpriced = DesignStudyConfig(**base, storage=f"sqlite:///{tmp_path}/u.db", cost="dollars")
    # No price: the study stops at its first trial, in one line, rather than costing nothing.
    with pytest.raises(ConfigError, match="no price for fake/oracle: pass --prices FILE"):
        run_design_study(unpriced, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS)


def test_single_framework_studies_offer_the_panel_to_repeated_roles_only() -> None:
    from courtroom.optimize.study.spaces import build_space

    space = {p.name: p.choices for p in build_space("courtroom-llm", models=["openai/a", "openai/b"])}
    assert space["model:judge"] == ("openai/a", "openai/b", "openai/a,openai/b")
    assert space["model:clerk"] == ("openai/a", "openai/b"), "the clerk is called once: no panel"
    narrowed = build_space("courtroom-llm", models=["openai/a", "openai/b"], overrides={"model:judge": "openai/b"})
    assert {p.name: p.choices for p in narrowed}["model:judge"] == ("openai/b",)


def test_single_objective_design_study_runs_threads_and_reports_for_pruning(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    config = DesignStudyConfig(
        frameworks=["self-consistency", "parallel-vote"],
        trials=6,
        workers=2,
        dev=len(dev),
        chunks=3,
        storage=f"journal:{tmp_path}/t.journal",
        objective="f1",
    )
    study = run_design_study(config, lms=_oracle(gold), trainset=train, devset=dev, labels=LABELS).study
    trials = [t for t in study.trials if "duplicate_of" not in t.user_attrs]  # the trials that ran
    assert len(trials) == 6 and len(study.directions) == 1
    assert sum(bool(t.user_attrs.get("paper_default")) for t in trials) == 2
    assert {t.user_attrs["worker"] for t in trials} and all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    finished = [t for t in trials if t.state.name == "COMPLETE"]
    assert all(sorted(t.intermediate_values) == [2, 4] for t in finished), "partial scores reported per chunk"
    assert all(t.value == t.user_attrs["macro_f1"] for t in finished)
    assert type(study.pruner).__name__ == "MedianPruner"
