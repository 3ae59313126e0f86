"""Studies: search spaces, trial 0, pruning, Pareto front, storage, resume, reuse across trials, CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import dspy
import pytest

from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study import StudyConfig, create_study, run_study, spaces
from courtroom.optimize.study.report import trials_table, write_report
from courtroom.optimize.study.spaces import build_space, default_params
from courtroom.programs import FRAMEWORKS
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=4).examples
    dev = load_task("boolean_expressions", split="dev", limit=8).examples
    return train, dev, {e.case: e.label for e in train + dev}


def fresh_lm(gold: dict[str, str]) -> Any:
    """A cached oracle with a unique model name, so no other test's cache entries count here."""
    return oracle_lm(
        gold,
        LABELS,
        accuracy={"judge": 0.8, "default": 0.7},
        cache=True,
        model=f"fake/oracle-{uuid.uuid4().hex[:8]}",
    )


def study(data: Any, tmp_path: Path, framework: str = "jot", lm: Any = None, **kw: Any) -> Any:
    train, dev, gold = data
    kw.setdefault("storage", f"sqlite:///{tmp_path}/s.db")
    config = StudyConfig(framework, **kw)
    return run_study(config, lms=RoleLMs({"default": lm or fresh_lm(gold)}), trainset=train, devset=dev, labels=LABELS)


# -- spaces ------------------------------------------------------------------------------------------


def test_spaces_match_the_issue_and_the_classes() -> None:
    jot = {p.name: p for p in build_space("jot")}
    assert (jot["n_loops"].low, jot["n_loops"].high) == (1, 5)
    assert {"use_lawyer", "use_prosecutor", "use_feedback"} <= set(jot)
    cl = {p.name: p for p in build_space("courtroom-llm")}
    assert (cl["n_judges"].low, cl["n_judges"].high, cl["k_precedents"].low, cl["k_precedents"].high) == (
        1,
        5,
        0,
        3,
    )
    assert set(cl["judge_mode"].choices) == {"parallel", "sequential"} and set(cl["assignment"].choices) == {
        "fixed",
        "random",
    }
    assert "max_argument_sentences" in cl
    df = {p.name: p for p in build_space("debate-feedback")}
    assert (df["n_rounds"].low, df["n_rounds"].high, df["n_debaters"].low, df["n_debaters"].high) == (
        1,
        4,
        2,
        4,
    )
    assert (df["smoothing"].kind, df["smoothing"].low, df["smoothing"].high) == ("float", 0.0, 1.0)
    assert "threshold" in df
    for name, params in spaces.SPACES.items():
        knobs = FRAMEWORKS[name].knobs()
        for p in params:
            design, _, knob = p.name.rpartition(".")
            # settle draws its trial's knobs as {trial}.{knob}
            assert p.name in knobs or (name in spaces.CONVENES and knob in FRAMEWORKS[design].knobs()), p.name


def test_models_and_temperatures_per_role() -> None:
    names = {p.name for p in build_space("jot", models=["openai/a", "openai/b"], temperatures=True)}
    for role in ("lawyer", "prosecutor", "judge"):
        assert f"model:{role}" in names and f"temperature:{role}" in names
    assert not any(n.startswith("model:") for n in (p.name for p in build_space("jot", models=["openai/a"])))


def test_space_naming_a_missing_knob_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(spaces.SPACES, "jot", (spaces.Int("n_gavels", 1, 3),))
    with pytest.raises(ConfigError, match="n_gavels.*does not have"):
        build_space("jot")


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ({"n_loops": "0:7"}, "outside its bounds"),
        ({"n_judges": "2"}, "has no parameter 'n_judges'"),
        ({"use_feedback": "maybe"}, "outside"),
        ({"n_loops": "4:2"}, "empty"),
    ],
)
def test_overrides_outside_bounds_fail(override: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build_space("jot", overrides=override)


def test_overrides_narrow_and_trial_zero_is_the_paper_default() -> None:
    narrowed = {p.name: p for p in build_space("jot", overrides={"n_loops": "2:4", "use_feedback": "true"})}
    assert (narrowed["n_loops"].low, narrowed["n_loops"].high) == (2, 4)
    assert narrowed["use_feedback"].choices == (True,)
    assert default_params("courtroom-llm", build_space("courtroom-llm")) == {
        k: v
        for k, v in FRAMEWORKS["courtroom-llm"].knobs().items()
        if k
        in {
            "n_judges",
            "judge_mode",
            "k_precedents",
            "precedent_scope",
            "reason_sentences",
            "assignment",
            "max_argument_sentences",
            "early_stop",
        }
    }


# -- running ---------------------------------------------------------------------------------------------


def test_study_records_trials_usage_and_prunes_on_partial_scores(data: Any, tmp_path: Path) -> None:
    out = study(data, tmp_path, trials=6, chunks=4, space={"n_loops": "1:3"})
    trials = out.study.trials
    ran = [t for t in trials if "duplicate_of" not in t.user_attrs]  # a repeated configuration is not run
    assert len(ran) == 6
    assert trials[0].user_attrs.get("paper_default") and trials[0].params == default_params("jot", out.space)
    done = [t for t in ran if t.state.name == "COMPLETE"]
    assert done
    for t in done:
        a = t.user_attrs
        assert a["calls"] == a["sent"] + a["cached"] and a["calls"] > 0
        assert sorted(t.intermediate_values) == [2, 4, 6], "partial scores reported for pruning"
    assert out.best[0].value == max(t.value for t in done)
    df = trials_table(out.study)
    assert {"number", "state", "accuracy", "calls", "sent", "cached", "n_loops"} <= set(df.columns)
    written = write_report(out.study, tmp_path / "report")
    assert {"trials", "history", "summary"} <= set(written) and (tmp_path / "report" / "trials.csv").is_file()


def test_cost_objective_reports_a_pareto_front(data: Any, tmp_path: Path) -> None:
    import optuna

    out = study(
        data,
        tmp_path,
        framework="courtroom-llm",
        trials=5,
        cost_objective=True,
        space={"k_precedents": "0:1"},
    )
    assert isinstance(out.study.sampler, optuna.samplers.NSGAIISampler)
    front = out.best
    assert front
    done = [t for t in out.study.trials if t.state.name == "COMPLETE"]
    for f in front:  # nobody dominates a Pareto member
        assert not any(t.values[0] >= f.values[0] and t.values[1] <= f.values[1] and t.values != f.values for t in done)
    written = write_report(out.study, tmp_path / "report")
    assert "pareto_table" in written and "pareto" in written


def test_resume_and_name_conflicts(data: Any, tmp_path: Path) -> None:
    study(data, tmp_path, trials=2, study_name="s1")
    again = study(data, tmp_path, trials=4, study_name="s1")  # --trials: what the study holds when done
    assert len([t for t in again.study.trials if "duplicate_of" not in t.user_attrs]) == 4
    assert sum(bool(t.user_attrs.get("paper_default")) for t in again.study.trials) == 1
    with pytest.raises(ConfigError, match="already exists with framework jot .you asked framework courtroom-llm."):
        study(data, tmp_path, framework="courtroom-llm", trials=1, study_name="s1")
    with pytest.raises(ConfigError, match="already exists with task .* .you asked task web_of_lies."):
        create_study(StudyConfig("jot", task="web_of_lies", storage=f"sqlite:///{tmp_path}/s.db", study_name="s1"))


def test_unreachable_storage_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot reach storage postgresql://bob:PASSWORD@127.0.0.1:1/x") as err:
        create_study(StudyConfig("jot", storage="postgresql://bob:topsecret@127.0.0.1:1/x"))
    assert "topsecret" not in str(err.value)
    with pytest.raises(ConfigError, match="unsupported storage"):
        create_study(StudyConfig("jot", storage="redis://127.0.0.1:1"))


def test_the_creation_lock_leaves_optunas_journal_lock_name_free(tmp_path: Path) -> None:
    # Our lock file once sat at FILE.lock, the name of Optuna's own journal lock (a symlink it
    # creates and removes): each journal study then waited out Optuna's 30 s stale-lock grace.
    from optuna.storages.journal._file import LOCK_FILE_SUFFIX

    from courtroom.optimize.study._storage import creation_lock

    url = f"journal:{tmp_path}/study.journal"
    assert creation_lock(url).lock_file != tmp_path / f"study.journal{LOCK_FILE_SUFFIX}"
    create_study(StudyConfig("jot", storage=url, trials=1))
    assert (tmp_path / "study.journal").is_file()
    assert not os.path.lexists(tmp_path / f"study.journal{LOCK_FILE_SUFFIX}")  # Optuna released its own


def test_stale_trials_of_dead_workers_are_marked_failed(data: Any, tmp_path: Path) -> None:
    import socket

    storage = f"journal:{tmp_path}/study.journal"
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    s = create_study(StudyConfig("jot", storage=storage, trials=1))
    stuck = s.ask()
    stuck.set_user_attr("worker", f"{socket.gethostname()}:{dead.pid}")
    out = study(data, tmp_path, storage=storage, trials=1)
    states = {t.number: t.state.name for t in out.study.trials}
    assert states[stuck.number] == "FAIL"
    assert list(states.values()).count("COMPLETE") >= 1


# -- reuse across trials ---------------------------------------------------------------------------------


def test_deeper_trials_reuse_shallower_ones(data: Any, tmp_path: Path) -> None:
    _, dev, gold = data
    lm = fresh_lm(gold)
    fixed = {"use_lawyer": "true", "use_prosecutor": "true", "use_feedback": "true"}
    three = study(data, tmp_path, lm=lm, trials=1, study_name="l3", space=fixed | {"n_loops": "3"}, prune=False)
    five = study(data, tmp_path, lm=lm, trials=1, study_name="l5", space=fixed | {"n_loops": "5"}, prune=False)
    a, b = three.study.trials[0].user_attrs, five.study.trials[0].user_attrs
    n = len(dev)
    assert (a["calls"], a["cached"]) == (9 * n, 0)
    # Rounds 1-2 (lawyer, prosecutor, judge) are shared; round 3 is the 3-loop trial's closing round.
    assert (b["calls"], b["cached"], b["sent"]) == (15 * n, 6 * n, 9 * n)


def test_more_judges_reuse_fewer_judges_votes(data: Any, tmp_path: Path) -> None:
    _, dev, gold = data
    lm = fresh_lm(gold)
    fixed = {
        "judge_mode": "parallel",
        "k_precedents": "0",
        "assignment": "fixed",
        "max_argument_sentences": "1",
    }
    three = study(
        data,
        tmp_path,
        framework="courtroom-llm",
        lm=lm,
        trials=1,
        study_name="j3",
        space=fixed | {"n_judges": "3"},
        prune=False,
    )
    five = study(
        data,
        tmp_path,
        framework="courtroom-llm",
        lm=lm,
        trials=1,
        study_name="j5",
        space=fixed | {"n_judges": "5"},
        prune=False,
    )
    a, b = three.study.trials[0].user_attrs, five.study.trials[0].user_attrs
    n = len(dev)
    assert (a["calls"], a["cached"]) == (6 * n, 0)  # clerk, 2 advocates, 3 judges
    # Only judges 4 and 5 are new: one request with n=2 per case (courtroom.models.sampling).
    assert (b["calls"], b["cached"], b["sent"]) == (8 * n, 6 * n, 1 * n)


# -- CLI ---------------------------------------------------------------------------------------------


def test_cli_study_exports_a_config_that_compile_accepts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.cli import main
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        common = ["--lm", "openai/fake-model", "--api-base", server.url]
        code = main(
            [
                "study",
                "jot",
                "--trials",
                "3",
                "--dev-limit",
                "4",
                "--space",
                "n_loops=1:2",
                "--storage",
                f"sqlite:///{tmp_path}/cli.db",
                "--out",
                str(tmp_path / "rep"),
                "--export-best",
                str(tmp_path / "best.json"),
                *common,
            ]
        )
        out = capsys.readouterr().out
        assert code == 0, out
        assert "best trial" in out and (tmp_path / "rep" / "trials.csv").is_file()
        best = json.loads((tmp_path / "best.json").read_text())
        assert best["kind"] == "courtroom-config" and best["framework"] == "jot" and 1 <= best["knobs"]["n_loops"] <= 2
        assert "api_base" not in json.dumps(best) and server.url not in json.dumps(best)
        code = main(
            [
                "compile",
                "--config",
                str(tmp_path / "best.json"),
                "--optimizer",
                "labeled",
                "--opt",
                "k=1",
                "--train-limit",
                "2",
                "--dev-limit",
                "2",
                "--test-limit",
                "0",
                "-o",
                str(tmp_path / "p.json"),
                *common,
            ]
        )
        assert code == 0, capsys.readouterr()
    meta = json.loads((tmp_path / "p.json").read_text())["metadata"]["courtroom"]
    assert meta["config"]["n_loops"] == best["knobs"]["n_loops"]
    code = main(["study", "jot", "--trials", "1", "--space", "n_loops=9", "--storage", f"sqlite:///{tmp_path}/x.db"])
    assert code == 2 and "outside its bounds" in capsys.readouterr().err


def test_run_study_is_exported() -> None:
    import courtroom

    assert courtroom.run_study is run_study
    assert os.environ.get("COURTROOM_CACHE_DIR")


def test_conditional_parameters_are_not_drawn_when_meaningless() -> None:
    import optuna

    space = build_space("jot")
    s = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    seen = []
    for _ in range(40):
        trial = s.ask()
        params = spaces.sample(space, trial)
        seen.append(params)
        assert params["use_lawyer"] or params["use_prosecutor"], "never an empty courtroom"
        if params["n_loops"] == 1:
            assert "use_feedback" not in trial.params and params["use_feedback"] is True
        s.tell(trial, 0.0)
    assert any(not p["use_lawyer"] for p in seen) and any(not p["use_prosecutor"] for p in seen)


def test_threaded_workers_on_sqlite(data: Any, tmp_path: Path) -> None:
    out = study(data, tmp_path, trials=4, workers=2, space={"n_loops": "1:2"}, study_name="threads")
    trials = out.study.trials
    assert len([t for t in trials if "duplicate_of" not in t.user_attrs]) == 4, "4 configurations ran"
    assert len({t.number for t in trials}) == len(trials)
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)


def test_cli_study_whose_every_trial_failed_exits_2_naming_the_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """It printed 'no trial completed' and exited 0, so a script took a study of failures for a result."""
    from courtroom.cli import main
    from courtroom.optimize.study import _trials
    from courtroom.testing import FakeServer

    def broken(*args: Any, **kwargs: Any) -> Any:
        def build(trial: Any, params: Any) -> Any:
            raise RuntimeError("boom in the program")

        return build

    monkeypatch.setattr(_trials, "framework_builder", broken)
    with FakeServer() as server:
        code = main(
            ["study", "jot", "--trials", "2", "--dev-limit", "2", "--storage", f"sqlite:///{tmp_path}/f.db",
             "--out", str(tmp_path / "rep"), "--lm", "openai/fake-model", "--api-base", server.url]
        )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 2, captured.out + captured.err
    assert "no trial completed: 2 of 2 failed (the last: RuntimeError: boom in the program)" in " ".join(
        captured.err.split()
    )


def test_our_plot_title_replaces_optunas(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Optuna titles its importances on the left; ours went in the centre, drawn over it (unreadable)."""
    import optuna
    from optuna.importance import FanovaImportanceEvaluator
    from optuna.visualization import matplotlib as vis

    from courtroom.optimize.study.report import _plot
    from courtroom.reporting.plots import plt

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("y", 0, 3), n_trials=8)
    monkeypatch.setattr(plt, "close", lambda *a: None)  # keep the figure to read its titles
    draw = lambda: vis.plot_param_importances(study, evaluator=FanovaImportanceEvaluator(seed=0))  # noqa: E731
    assert _plot("importances", draw, tmp_path, title="s: parameter importances (fANOVA)") is not None
    ax = plt.gcf().axes[0]
    titles = [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
    monkeypatch.undo()
    plt.close("all")
    assert titles == ["", "s: parameter importances (fANOVA)", ""], titles


def test_a_study_on_the_default_storage_names_it_in_its_report(tmp_path: Path, cli: Any) -> None:
    """No --storage: the default SQLite file, which study.json and the report's header name (not "in memory")."""
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        done = cli("study", "self-consistency", "--space", "k_samples=1:2", "--trials", "1", "--dev-limit", "2",
                   "--test-limit", "0", "--lm", "openai/m", "--api-base", server.url, "--out", "st")  # fmt: skip
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "st" / "study.json").read_text())["config"]
    assert config["storage"] == "sqlite:///courtroom-studies.db" and (tmp_path / "courtroom-studies.db").is_file()
    assert cli("report", "st", "-o", "st.html").returncode == 0
    page = (tmp_path / "st.html").read_text()
    assert "<th>storage</th><td>sqlite:///courtroom-studies.db</td>" in page and "in memory" not in page
