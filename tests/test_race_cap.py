"""``--race-calls`` is a cap on the study's requests, refused where it cannot act; a finite space ends when settled.

The requests are counted where they arrive: the oracle models' engines (a cache hit never reaches
one), or the fake server. Parallel-vote with one vote per case of a model chosen among oracles of
set accuracies: one request per case, no two configurations sharing a call.
"""

from __future__ import annotations

import logging
import uuid
from pathlib import Path
from typing import Any

import pytest

from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study import StudyConfig, run_study
from courtroom.optimize.study import race as race_mod
from courtroom.optimize.study.extend import SENT
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]


def _study(
    tmp_path: Path, accuracies: list[float], dev_n: int, seed: int = 0, reserve_n: int = 0, **kw: Any
) -> tuple[Any, int]:
    """(the study, the requests its models answered): one vote per case of a model chosen among oracles."""
    pool = load_task("boolean_expressions", data="generate", split="dev", limit=dev_n + reserve_n, seed=seed).examples
    dev, reserve = pool[:dev_n], pool[dev_n:]
    train = load_task("boolean_expressions", data="generate", split="train", limit=4, seed=seed).examples
    gold = {e.case: e.label for e in [*pool, *train]}
    tag = uuid.uuid4().hex[:6]
    objects = {
        f"fake/m{round(a * 100)}-{i}-{tag}": oracle_lm(
            gold, LABELS, accuracy=a, seed=seed, cache=True, model=f"fake/m{round(a * 100)}-{i}-{tag}"
        )
        for i, a in enumerate(accuracies)
    }
    kw.setdefault("trials", len(objects))
    config = StudyConfig(
        "parallel-vote", dev=dev_n, train=4, seed=seed, storage=f"sqlite:///{tmp_path}/s-{tag}.db", study_name="s",
        space={"n_models": "1", "model:classifier": ",".join(objects)}, models=list(objects), **kw,
    )  # fmt: skip
    study = run_study(
        config, lms=RoleLMs({"default": next(iter(objects.values()))}), model_objects=objects, trainset=train,
        devset=dev, labels=LABELS, reserve=reserve or None,
    ).study  # fmt: skip
    answered = sum(sum(lm.engine_impl.counts.values()) for lm in objects.values())
    return study, answered


# -- a cap, always -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accuracies", "cap", "concurrency", "seed"),
    [
        ([0.7, 0.7, 0.7], 29, 1, 0),  # nothing stops: the trials alone would send 36
        ([0.9, 0.2, 0.9], 23, 4, 2),  # four requests in flight at once
    ],
)
def test_the_study_never_sends_more_than_race_calls(
    tmp_path: Path, accuracies: list[float], cap: int, concurrency: int, seed: int
) -> None:
    # The dev split no larger than --dev-limit (no reserve), the case the issue measured: before, the
    # trials ran whatever the cap said (36 requests for a cap of 29).
    study, answered = _study(tmp_path, accuracies, 12, seed=seed, race_calls=cap, concurrency=concurrency)
    assert answered <= cap, answered
    assert answered == sum(int(t.user_attrs.get("sent", 0)) for t in study.trials), "every request recorded"


def test_the_trials_and_the_extra_cases_together_stay_within_the_cap(tmp_path: Path) -> None:
    for seed, cap in ((0, 43),):
        study, answered = _study(tmp_path, [0.8, 0.75, 0.3], 12, seed=seed, reserve_n=36, race_calls=cap)
        sent = sum(int(t.user_attrs.get("sent", 0)) for t in study.trials) + int(study.user_attrs.get(SENT, 0))
        assert answered <= cap and answered == sent, (seed, answered, sent)


def test_a_trial_cut_by_the_cap_gives_its_place_back_and_one_line_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        study, answered = _study(tmp_path, [0.7, 0.7, 0.7], 12, race_calls=18)
    assert answered <= 18
    cut = [t for t in study.trials if "budget" in t.user_attrs]
    assert cut and all("--race-calls 18" in t.user_attrs["budget"] for t in cut)
    lines = [r.getMessage() for r in caplog.records if "--race-calls 18 reached" in r.getMessage()]
    assert len(lines) == 1 and "after 1 of 3 trial(s)" in lines[0], lines


# -- refused where it cannot act ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (["--race-calls", "200", "--no-prune"], "--no-prune scores every trial"),
        (["--race-calls", "200", "--pruner", "median"], "--pruner median does not race"),
        (["--race-calls", "200", "--objective", "f1"], "--objective f1 does not race"),
        (["--race-calls", "200", "--max-calls", "500"], "drop --race-calls or --max-calls"),
        (["--race-calls", "200", "--max-cost", "5"], "drop --race-calls or --max-cost"),
        (["--race-calls", "1"], "--race-calls 1 is below one block's requests"),
        (["--pruner", "race", "--no-prune"], "--pruner race and --no-prune contradict"),
        (["--pruner", "race", "--objective", "f1"], "use --pruner median"),
    ],
)
def test_a_cap_or_pruner_that_cannot_act_is_refused_before_anything_is_written_or_sent(
    tmp_path: Path, cli: Any, flags: list[str], says: str
) -> None:
    with FakeServer() as server:
        done = cli("study", "parallel-vote", "--trials", "3", "--dev-limit", "8", "--space", "n_models=1:3",
                   "--storage", f"sqlite:///{tmp_path}/s.db", "--out", str(tmp_path / "rep"),
                   "--lm", f"openai/cap-{uuid.uuid4().hex[:6]}", "--api-base", server.url, *flags)  # fmt: skip
        asked = server.counts["requests"]
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert asked == 0 and not list(tmp_path.iterdir()), "nothing sent, nothing written"


def test_the_api_refuses_the_same(tmp_path: Path) -> None:
    import courtroom
    from courtroom.errors import ConfigError

    with pytest.raises(ConfigError, match="--no-prune scores every trial"):
        courtroom.study("parallel-vote", race_calls=50, prune=False, storage=f"sqlite:///{tmp_path}/s.db")
    with pytest.raises(ConfigError, match="--pruner median does not race"):
        run_study(StudyConfig("parallel-vote", race_calls=50, pruner="median", storage=f"sqlite:///{tmp_path}/s.db"))
    assert not list(tmp_path.iterdir())


# -- a finite space ends when every configuration is settled ----------------------------------------


def test_extra_trials_do_not_finish_what_the_race_stopped(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # Four configurations, --trials 20: two clearly worse ones are stopped; before, every stopped
    # configuration was drawn again (queued once the sampler repeated itself) and finished.
    for seed in range(2):
        caplog.clear()
        with caplog.at_level(logging.WARNING):
            study, answered = _study(tmp_path, [0.95, 0.1, 0.95, 0.15], 24, seed=seed, trials=20)
        ran = [t for t in study.trials if "duplicate_of" not in t.user_attrs and t.state.name != "WAITING"]
        weak = [t for t in ran if str(t.user_attrs["config"]["model:classifier"]).startswith(("fake/m10", "fake/m15"))]
        assert weak and all(t.state.name == "PRUNED" and t.user_attrs["examples"] < 24 for t in weak), [
            (t.number, t.state.name, t.user_attrs.get("examples")) for t in weak
        ]
        assert answered < 4 * 24, "what the stops saved is not spent finishing them"
        said = [r.getMessage() for r in caplog.records if "is settled" in r.getMessage()]
        assert len(said) == 1 and "not 20" in said[0], said


def test_a_stop_that_no_longer_holds_is_continued() -> None:
    import optuna

    from courtroom.optimize.study._attrs import KEY
    from courtroom.optimize.study._dedupe import claim

    study = optuna.create_study(direction="maximize")
    dist = {"n": optuna.distributions.IntDistribution(0, 9)}

    def add(n: int, state: Any, record: str, **attrs: Any) -> None:
        value = {"value": record.count("1") / len(record)} if state == optuna.trial.TrialState.COMPLETE else {}
        own = {race_mod.OUTCOMES: record, "examples": len(record), KEY: f'{{"n": {n}}}', **attrs}
        study.add_trial(optuna.trial.create_trial(state=state, params={"n": n}, distributions=dist, user_attrs=own,
                                                  **value))  # fmt: skip

    # Trial 1 lost its first 4 cases to the incumbent, trial 0: stopped at a (large) level of 0.1.
    add(0, optuna.trial.TrialState.COMPLETE, "11110000")
    add(1, optuna.trial.TrialState.PRUNED, "0000", race={"stop": True, "p": 0.0625, "alpha": 0.1})
    assert race_mod.stop_stands(study, study.trials[1])
    # A better configuration becomes the incumbent, and trial 1 is not clearly worse than it.
    add(2, optuna.trial.TrialState.COMPLETE, "00011111")
    assert not race_mod.stop_stands(study, study.trials[1])
    trial = study.ask({"n": dist["n"]})
    claim(trial, {"n": 1}, "sqlite:///:memory:", block=2)
    attrs = study.trials[trial.number].user_attrs
    assert attrs[race_mod.CONTINUES] == 1 and attrs[race_mod.FLOOR] == 6
