"""Racing on shared dev cases, the set tied with the best, and ``--trials`` on a continued study.

The learners are shown to learn where the truth is known: parallel-vote with one vote of a model
chosen among oracle models of set accuracies (no two configurations share a call), on generated
cases. With a clearly worse model the race stops it and the set leaves it out; with models that
are all equal the set holds them all (no significant difference claimed).
"""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

import optuna
import pytest
from _output import unwrapped
from scipy.stats import binomtest

from courtroom import _stop
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study import StudyConfig, run_study
from courtroom.optimize.study import race as race_mod
from courtroom.optimize.study._dedupe import Duplicate, claim
from courtroom.optimize.study.tied import holm, tied_set
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]


def _models(tmp_path: Path, accuracies: list[float], dev_n: int, seed: int = 0) -> tuple[Any, dict[str, Any]]:
    """Everything a study of one vote per case needs, its model chosen among oracles of ``accuracies``."""
    dev = load_task("boolean_expressions", data="generate", split="dev", limit=dev_n, seed=seed).examples
    train = load_task("boolean_expressions", data="generate", split="train", limit=4, seed=seed).examples
    gold = {e.case: e.label for e in [*dev, *train]}
    tag = uuid.uuid4().hex[:6]
    objects = {
        f"fake/m{round(a * 100)}-{i}-{tag}": oracle_lm(
            gold, LABELS, accuracy=a, seed=seed, cache=True, model=f"fake/m{round(a * 100)}-{i}-{tag}"
        )
        for i, a in enumerate(accuracies)
    }

    def config(**kw: Any) -> StudyConfig:
        kw.setdefault("trials", len(objects))
        return StudyConfig(
            "parallel-vote",
            dev=dev_n,
            train=4,
            seed=seed,
            storage=f"sqlite:///{tmp_path}/s-{tag}.db",
            study_name="s",
            space={"n_models": "1", "model:classifier": ",".join(objects)},
            models=list(objects),
            concurrency=1,  # the oracle's draws in one order: the same study every run
            **kw,
        )

    def run(callbacks: Any = (), **kw: Any) -> Any:
        return run_study(
            config(**kw),
            callbacks=callbacks,
            lms=RoleLMs({"default": next(iter(objects.values()))}),
            model_objects=objects,
            trainset=train,
            devset=dev,
            labels=LABELS,
        )

    return run, {"config": config, "objects": objects}


def _model_of(trial: Any) -> str:
    return str(trial.user_attrs["config"]["model:classifier"])


# -- the statistics ----------------------------------------------------------------------------------


@pytest.mark.parametrize(("losses", "wins"), [(0, 0), (3, 0), (8, 2), (12, 4), (5, 5), (2, 9), (30, 12)])
def test_the_paired_test_is_the_exact_one_sided_mcnemar(losses: int, wins: int) -> None:
    expected = 1.0 if losses + wins == 0 else binomtest(losses, losses + wins, 0.5, alternative="greater").pvalue
    assert race_mod.one_sided_p(losses, wins) == pytest.approx(min(expected, 1.0) if losses > wins else 1.0)


def test_holm_adjusts_step_down_and_keeps_the_order() -> None:
    # Holm (1979): sorted p times (m - rank), made monotone; 1 at most.
    assert holm([0.01, 0.04, 0.03, 0.2]) == pytest.approx([0.04, 0.09, 0.09, 0.2])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_pairs_only_the_cases_both_saw() -> None:
    # the incumbent saw 6 cases; the trial 4: its last two count nowhere
    assert race_mod.discordant("1100", "011011") == (1, 1)
    assert race_mod.discordant("0000", "1111") == (4, 0)


# -- learning where the truth is known --------------------------------------------------------------


def test_the_race_stops_a_clearly_worse_configuration_and_the_set_leaves_it_out(tmp_path: Path) -> None:
    run, parts = _models(tmp_path, [0.95, 0.3, 0.9], dev_n=40)
    study = run().study  # trial 0 is the paper default: the first model, which becomes the incumbent
    weak = next(t for t in study.trials if _model_of(t).startswith("fake/m30"))
    assert weak.state.name == "PRUNED", "worse than the incumbent on shared cases: stopped"
    assert weak.user_attrs["examples"] < 40 and weak.user_attrs["race"]["stop"]
    assert weak.user_attrs["race"]["against"] == 0
    assert weak.user_attrs["race"]["p"] < race_mod.level(3) / weak.user_attrs[race_mod.LOOKS]  # 3 trials
    found = tied_set(study)
    assert found is not None
    tied = {_model_of(next(t for t in study.trials if t.number == m.number)) for m in found.tied}
    assert any(m.startswith("fake/m95") for m in tied) and not any(m.startswith("fake/m30") for m in tied)
    assert sum(t.user_attrs.get("sent", 0) for t in study.trials) < 3 * 40, "the stopped configuration saved calls"


def test_with_nothing_to_learn_the_set_holds_every_configuration(tmp_path: Path) -> None:
    for seed in range(3):
        run, _ = _models(tmp_path, [0.7, 0.7, 0.7], dev_n=30, seed=seed)
        study = run().study
        found = tied_set(study)
        assert found is not None and len(found.tied) == 3, [m.to_dict() for m in found.members]
        assert all(t.state.name == "COMPLETE" for t in study.trials), "no equal configuration stopped"


def test_a_stopped_configuration_whose_stop_stands_is_not_run_again(tmp_path: Path) -> None:
    # Drawn again, a configuration still clearly worse than the incumbent is settled: a repeat of its
    # stopped trial, nothing sent (before: it continued, and extra trials finished every stopped one).
    # A stop that no longer holds is continued: test_race_cap.test_a_stop_that_no_longer_holds_is_continued.
    run, parts = _models(tmp_path, [0.95, 0.3, 0.9], dev_n=40)
    study = run(trials=3).study
    weak = next(t for t in study.trials if _model_of(t).startswith("fake/m30"))
    assert weak.state.name == "PRUNED" and race_mod.stop_stands(study, weak)
    sent = sum(int(t.user_attrs.get("sent", 0)) for t in study.trials)
    trial = study.ask()
    with pytest.raises(Duplicate) as repeat:
        claim(trial, dict(weak.params), parts["config"]().storage, block=10)
    assert repeat.value.original.number == weak.number
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    again = run(trials=4).study  # every configuration of the space is settled: nothing runs
    assert sum(int(t.user_attrs.get("sent", 0)) for t in again.trials) == sent
    assert not any(t.user_attrs.get(race_mod.CONTINUES) is not None for t in again.trials)


# -- --trials: what the study holds -----------------------------------------------------------------


def test_a_study_stopped_and_continued_with_the_same_command_holds_the_trials_asked_for(tmp_path: Path) -> None:
    run, _ = _models(tmp_path, [0.9, 0.8, 0.7, 0.6], dev_n=8)

    def stop_after_the_first(study: Any, trial: Any) -> None:
        _stop.request_stop()

    try:
        first = run(trials=4, callbacks=[stop_after_the_first]).study
    finally:
        _stop.reset()
    assert len([t for t in first.trials if "duplicate_of" not in t.user_attrs]) == 1
    study = run(trials=4).study  # the printed resume command is the same command
    ran = [t for t in study.trials if "duplicate_of" not in t.user_attrs]
    assert len(ran) == 4, "before: the continued study ran 4 more trials"
    keys = [t.user_attrs["config_key"] for t in ran]
    assert len(set(keys)) == len(keys), "no configuration evaluated twice"


def test_what_counts_against_trials() -> None:
    from optuna.distributions import FloatDistribution
    from optuna.trial import TrialState, create_trial

    from courtroom.optimize.study._dedupe import counts

    def trial(state: Any, **attrs: Any) -> Any:
        values = {"value": 0.5} if state == TrialState.COMPLETE else {}
        return create_trial(state=state, params={"x": 0.1}, distributions={"x": FloatDistribution(0, 1)},
                            user_attrs=attrs, **values)  # fmt: skip

    assert counts(trial(TrialState.COMPLETE)) and counts(trial(TrialState.PRUNED))
    assert not counts(trial(TrialState.COMPLETE, duplicate_of=0)), "a repeat took a stored value"
    assert not counts(trial(TrialState.PRUNED, interrupted=True)), "cut short by Ctrl-C: runs again"
    assert not counts(trial(TrialState.FAIL)), "its worker died: runs again"
    assert counts(trial(TrialState.FAIL, error="ValueError: x")), "it failed on its own"


# -- what the user sees ------------------------------------------------------------------------------


def test_the_cli_shows_the_tied_set_and_writes_it_to_the_report_and_the_recipe(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        # The fake server answers from the case text alone: every configuration answers alike, all tied.
        done = cli("study", "parallel-vote", "--trials", "3", "--dev-limit", "8", "--space", "n_models=1:3",
                   "--storage", f"sqlite:///{tmp_path}/s.db", "--out", str(tmp_path / "rep"),
                   "--export-best", str(tmp_path / "best.json"), "--prefer", "cheapest",
                   "--lm", f"openai/tied-{uuid.uuid4().hex[:6]}", "--api-base", server.url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "tied with the best: 3 of 3 configuration(s), on up to 8 dev cases" in " ".join(done.stdout.split())
    assert "chosen, exported and tested: trial" in done.stdout and "the cheapest of the tied set" in done.stdout
    summary = json.loads((tmp_path / "rep" / "study.json").read_text())
    tied = summary["tied"]
    assert tied["prefer"] == "cheapest" and len(tied["members"]) == 3 and all(m["tied"] for m in tied["members"])
    cheapest = min(tied["members"], key=lambda m: m["cost_per_case"])
    assert tied["exported"] == cheapest["trial"] and cheapest["config"] == {"n_models": 1}
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["knobs"]["n_models"] == 1 and best["tied"]["exported"] == best["trial"]
    assert summary["best"][0]["number"] == best["trial"], "the test split scores what is exported"
    page = cli("report", str(tmp_path / "rep"), "-o", str(tmp_path / "study.html"))
    assert page.returncode == 0, page.stderr
    assert "Tied with the best" in (tmp_path / "study.html").read_text()


def test_repeats_are_hidden_from_the_table_unless_asked_for(tmp_path: Path, cli: Any) -> None:
    import optuna

    from courtroom.testing import FakeServer

    storage = f"sqlite:///{tmp_path}/s.db"
    with FakeServer() as server:
        args = ["study", "parallel-vote", "--dev-limit", "4", "--space", "n_models=1:3", "--storage", storage,
                "--lm", f"openai/rep-{uuid.uuid4().hex[:6]}", "--api-base", server.url]  # fmt: skip
        assert cli(*args, "--trials", "0").returncode == 0  # only create it (trial 0, the paper default, queued)
        study = optuna.load_study(study_name="parallel-vote-boolean_expressions", storage=storage)
        study.enqueue_trial(study.trials[0].params)  # the same configuration again: a repeat
        quiet = cli(*args, "--trials", "3")
        loud = cli(*args, "--trials", "3", "--show-repeats")
    assert quiet.returncode == 0 and loud.returncode == 0, quiet.stderr + loud.stderr
    assert re.search(r"\d+ trial\(s\) repeated a configuration", quiet.stdout), quiet.stdout
    assert "--show-repeats lists them" in quiet.stdout
    assert "reused from" not in quiet.stdout, "the repeat's row is hidden"
    assert "reused from" in loud.stdout


@pytest.mark.parametrize(
    ("flag", "value", "says"),
    [("--pruner", "fast", "use race or median"), ("--prefer", "cheap", "use best or cheapest")],
)
def test_a_pruner_or_preference_that_is_not_one_is_refused_in_one_line(
    flag: str, value: str, says: str, cli: Any
) -> None:
    done = cli("study", "jot", "--trials", "1", flag, value)
    assert (
        done.returncode == 2 and says in " ".join(done.stderr.split()) and len(unwrapped(done.stderr.strip())) == 1
    ), done.stderr
