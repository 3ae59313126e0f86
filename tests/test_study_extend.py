"""What the race's stops saved buys the configurations still tied with the best: cases beyond --dev-limit."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study import StudyConfig, run_study
from courtroom.optimize.study.extend import EXTENDED, SENT, marks, saved, sent_by_trials
from courtroom.optimize.study.tied import tied_set
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]


def _study(tmp_path: Path, accuracies: list[float], dev_n: int, reserve_n: int, **kw: Any) -> Any:
    """A study of one vote per case, its model chosen among oracles of ``accuracies``; ``reserve_n`` more cases."""
    pool = load_task("boolean_expressions", data="generate", split="dev", limit=dev_n + reserve_n).examples
    dev, reserve = pool[:dev_n], pool[dev_n:]
    train = load_task("boolean_expressions", data="generate", split="train", limit=4).examples
    gold = {e.case: e.label for e in [*pool, *train]}
    tag = uuid.uuid4().hex[:6]
    objects = {
        f"fake/m{round(a * 100)}-{i}-{tag}": oracle_lm(
            gold, LABELS, accuracy=a, seed=i, cache=True, model=f"fake/m{round(a * 100)}-{i}-{tag}"
        )  # fmt: skip
        for i, a in enumerate(accuracies)
    }
    config = StudyConfig(
        "parallel-vote", trials=len(objects), dev=dev_n, train=4, storage=f"sqlite:///{tmp_path}/s-{tag}.db",
        study_name="s", space={"n_models": "1", "model:classifier": ",".join(objects)}, models=list(objects),
        concurrency=1, **kw,
    )  # fmt: skip
    return run_study(config, lms=RoleLMs({"default": next(iter(objects.values()))}), model_objects=objects,
                     trainset=train, devset=dev, labels=LABELS, reserve=reserve or None).study  # fmt: skip


def _model(study: Any, number: int) -> str:
    return str(study.trials[number].user_attrs["config"]["model:classifier"])


def test_what_stopping_saved_gives_the_close_configurations_more_cases(tmp_path: Path) -> None:
    # Two close models and two weak ones: the race stops the weak, and the close two get reserve cases.
    study = _study(tmp_path, [0.8, 0.1, 0.1, 0.8], dev_n=40, reserve_n=60)
    weak = [t for t in study.trials if "m10" in _model(study, t.number) and "duplicate_of" not in t.user_attrs]
    assert {t.state.name for t in weak} == {"PRUNED"} and all(t.user_attrs["examples"] < 40 for t in weak)
    extended = study.user_attrs.get(EXTENDED) or {}
    assert not {str(t.number) for t in weak} & set(extended), "a stopped configuration gets no reserve case"
    close = [t for t in study.trials if t.state.name == "COMPLETE" and "duplicate_of" not in t.user_attrs]
    assert {str(t.number) for t in close} == set(extended), extended
    lengths = {len(marks(study, t)) for t in close}
    assert len(lengths) == 1 and lengths.pop() > 40, "both scored together on the same reserve cases"
    assert all(t.user_attrs["examples"] == 40 for t in close), "Optuna's values stay the --dev-limit scores"
    # The rounds cost no more than the stop saved: its skipped cases at its rate per case.
    assert 0 < study.user_attrs[SENT] <= saved(study, 40)
    found = tied_set(study)
    assert found is not None and found.cases == len(marks(study, close[0]))
    assert {m.cases for m in found.members if m.number not in {t.number for t in weak}} == {found.cases}


def test_a_call_budget_is_spent_on_the_configurations_the_set_cannot_separate(tmp_path: Path) -> None:
    # Nothing stopped, so nothing saved; a budget for the whole study pays for the extra cases, within it.
    study = _study(tmp_path, [0.7, 0.7], dev_n=20, reserve_n=60, race_calls=100)
    assert saved(study, 20) == 0
    extended = study.user_attrs[EXTENDED]
    ran = {str(t.number) for t in study.trials if "duplicate_of" not in t.user_attrs}
    # 100 - 2 x 20 leaves 60 requests: 6 rounds of a block (5 cases) for each of the two.
    assert set(extended) == ran and {len(m) for m in extended.values()} == {50}, extended
    assert sent_by_trials(study) + study.user_attrs[SENT] <= 100


def test_no_reserve_no_other_pruner_and_nothing_saved_leave_the_study_as_it_was(tmp_path: Path) -> None:
    assert EXTENDED not in _study(tmp_path, [0.8, 0.2, 0.8], dev_n=20, reserve_n=0).user_attrs
    assert EXTENDED not in _study(tmp_path, [0.8, 0.2, 0.8], dev_n=20, reserve_n=40, pruner="median").user_attrs
    # Nothing stopped, nothing saved: no round fits.
    study = _study(tmp_path, [0.7, 0.7], dev_n=20, reserve_n=40)
    assert saved(study, 20) == 0 and EXTENDED not in study.user_attrs


def test_race_calls_is_a_study_option_on_every_path() -> None:
    import pytest

    from courtroom.cli._options import OPTIONS
    from courtroom.errors import ConfigError
    from courtroom.optimize.study.pipeline import study_config
    from courtroom.spec import Experiment

    assert any("--race-calls" in o.flags for o in OPTIONS)
    spec = Experiment.build("study", framework="parallel-vote", race_calls=40)
    assert study_config(spec).race_calls == 40
    with pytest.raises(ConfigError, match="--race-calls must be >= 1"):
        Experiment.build("study", framework="parallel-vote", race_calls=0).validate()


def test_the_last_round_spends_what_the_budget_still_holds(tmp_path: Path) -> None:
    # 97 - 2 x 20 leaves 57 requests: 5 rounds of a block (5 cases) for each of the two take 50, and
    # the last 7 pay 3 more cases each, the same cases for both (before: 7 requests left unspent).
    study = _study(tmp_path, [0.7, 0.7], dev_n=20, reserve_n=60, race_calls=97)
    assert {len(m) for m in study.user_attrs[EXTENDED].values()} == {48}, study.user_attrs[EXTENDED]
    assert sent_by_trials(study) + study.user_attrs[SENT] == 96


def _handmade(records: dict[int, str], sent_per_case: float = 1.0) -> Any:
    """An in-memory study of completed trials whose dev records are ``records`` (trial number -> marks)."""
    import optuna

    from courtroom.optimize.study.race import OUTCOMES

    study = optuna.create_study(direction="maximize")
    for number, record in sorted(records.items()):
        dist = {"n": optuna.distributions.IntDistribution(0, 99)}
        attrs = {OUTCOMES: record, "examples": len(record), "sent": int(len(record) * sent_per_case),
                 "calls_per_example": 1.0}  # fmt: skip
        study.add_trial(optuna.trial.create_trial(value=record.count("1") / len(record), params={"n": number},
                                                  distributions=dist, user_attrs=attrs))  # fmt: skip
    return study


def test_the_rounds_go_to_the_leader_and_its_closest_challenger() -> None:
    from courtroom.optimize.study.extend import extend

    # Trial 0 leads (16 of 20); trial 1 is one case behind it; trial 2 four cases behind, still tied
    # (p = 1/16 before any correction). Every configuration is right on every reserve case.
    study = _handmade({0: "1" * 16 + "0" * 4, 1: "1" * 15 + "0" * 5, 2: "1" * 12 + "0" * 8})
    asked: list[int] = []

    def score(trial: Any, examples: Any) -> tuple[str, int]:
        asked.append(trial.number)
        return "1" * len(examples), len(examples)

    found = tied_set(study)
    assert found is not None and [m.number for m in found.tied] == [0, 1, 2]
    # 60 requests for the trials' 60, 30 for the rounds: 15 more cases each for the leader and trial 1,
    # none for trial 2 (before: every member of the set got 10, two rounds of 5).
    rounds = extend(study, 20, list(range(40)), 5, score, calls=90)
    lengths = {n: len(r) for n, r in study.user_attrs[EXTENDED].items()}
    assert rounds == 3 and lengths == {"0": 35, "1": 35}, lengths
    assert set(asked) == {0, 1} and study.user_attrs[SENT] == 30


def test_a_pair_with_no_case_left_passes_to_the_next_challenger() -> None:
    from courtroom.optimize.study.extend import contenders, plan

    study = _handmade({0: "1" * 16 + "0" * 4, 1: "1" * 15 + "0" * 5, 2: "1" * 12 + "0" * 8})
    found = tied_set(study)
    assert found is not None
    assert contenders(found, {0: 20, 1: 20, 2: 20}, 60) == [0, 1]
    assert contenders(found, {0: 60, 1: 60, 2: 20}, 60) == [0, 2], "the leader's reserve is used up with trial 1"
    assert contenders(found, {0: 60, 1: 60, 2: 60}, 60) == []
    # The pair goes a block past the longer record; the last round takes what the budget holds.
    assert plan({0: 20, 1: 20}, {0: 1.0, 1: 1.0}, 5, 60, 100) == 25
    assert plan({0: 20, 1: 20}, {0: 1.0, 1: 1.0}, 5, 60, 7) == 23
    assert plan({0: 40, 1: 20}, {0: 1.0, 1: 2.0}, 5, 60, 1000) == 45, "the challenger catches up on the same cases"
    assert plan({0: 20, 1: 20}, {0: 1.0, 1: 1.0}, 5, 60, 1) == 0, "not one case for both: no round"


def test_a_configuration_the_cache_answered_in_its_trial_is_not_a_free_round() -> None:
    from courtroom.optimize.study.extend import extend

    # Both trials read every call from the cache (another configuration had asked them): their
    # trials sent nothing, yet a reserve case sends. The rounds stay within the 10 requests
    # (before: a round was estimated free, and they ran through the whole reserve, 80 requests).
    study = _handmade({0: "1" * 16 + "0" * 4, 1: "1" * 15 + "0" * 5}, sent_per_case=0.0)

    def score(trial: Any, examples: Any) -> tuple[str, int]:
        return "1" * len(examples), len(examples)

    extend(study, 20, list(range(40)), 5, score, calls=10)
    assert study.user_attrs[SENT] == 10, study.user_attrs[SENT]
