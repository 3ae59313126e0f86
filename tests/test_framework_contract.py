"""The contract every registered framework and baseline meets (STYLE §2): runs on the oracle fake,
gives a label from the label space, a transcript showing every role it called, one predictor per
role, predictors that do not depend on knobs, and a JSON save/load round trip."""

from __future__ import annotations

import json
from typing import Any

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.programs import FRAMEWORKS, CourtroomProgram
from courtroom.testing import oracle_lm

BINARY = ["True", "False"]
SIX = ["sadness", "joy", "love", "anger", "fear", "surprise"]


def _data(labels: list[str], n: int = 8) -> tuple[list[dspy.Example], dict[str, str]]:
    train = [
        dspy.Example(
            case=f"training story {i} about {labels[i % len(labels)]} things",
            label=labels[i % len(labels)],
            id=f"t{i}",
        ).with_inputs("case")
        for i in range(n)
    ]
    gold = {ex.case: ex.label for ex in train} | {"the test case text": labels[0]}
    return train, gold


def _tracked(program: Any) -> set[str]:
    """Wrap ``program.ask`` to record which roles were called."""
    used: set[str] = set()
    original = program.ask

    def ask(role: str, *args: Any, **kwargs: Any) -> Any:
        used.add(role)
        return original(role, *args, **kwargs)

    program.ask = ask
    return used


CASES = [(name, labels) for name in FRAMEWORKS for labels in (BINARY, SIX)]


@pytest.mark.parametrize(("name", "labels"), CASES, ids=[f"{n}-{len(lab)}" for n, lab in CASES])
def test_contract(name: str, labels: list[str], tmp_path: Any) -> None:
    cls = FRAMEWORKS[name]
    train, gold = _data(labels)
    lm = oracle_lm(gold, labels, accuracy=0.8)
    if cls.binary_only and len(labels) > 2:
        with pytest.raises(ConfigError):
            cls(labels, lm=lm)
        return
    program = cls(labels, lm=lm)
    program.prepare(train)
    used = _tracked(program)
    out = program(case="the test case text")

    assert out.label in labels
    assert out.transcript, "empty transcript"
    shown = {t.role.split("-")[0] for t in out.transcript}
    assert used <= shown, f"roles called but not in the transcript: {used - shown}"
    assert used <= set(cls.roles)

    names = [n for n, _ in program.named_predictors()]
    subs = {n.split(".")[0] for n in names if "." in n}
    if not subs:
        assert sorted(names) == sorted(cls.roles), "one predictor per role, named after it"
    else:
        # A design that convenes another program (settle): its own roles' predictors, then the
        # convened program's under its attribute (trial.judge), each named after its role.
        for sub in subs:
            inner = getattr(program, sub)
            assert isinstance(inner, CourtroomProgram)
            assert sorted(n.split(".", 1)[1] for n in names if n.startswith(sub + ".")) == sorted(type(inner).roles)
        own = [n for n in names if "." not in n]
        assert own and set(own) <= set(cls.roles)
        assert {r for sub in subs for r in type(getattr(program, sub)).roles} <= set(cls.roles)

    path = tmp_path / "program.json"
    program.save(str(path))
    json.loads(path.read_text())  # plain JSON, no pickle
    fresh = cls(labels, lm=lm)
    fresh.load(str(path))
    assert fresh.dump_state() == program.dump_state()


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_predictors_do_not_depend_on_knobs(name: str) -> None:
    cls = FRAMEWORKS[name]
    lm = oracle_lm({}, BINARY)
    # Early-stopping knobs need knobs of their own (stop_when_stable: sequential judges): bumped apart.
    ints = {k: v for k, v in cls.knobs().items() if isinstance(v, int) and not isinstance(v, bool)}
    bumped = {k: v + 2 for k, v in ints.items() if k not in cls.early_stop_knobs}
    a = [n for n, _ in cls(BINARY, lm=lm).named_predictors()]
    b = [n for n, _ in cls(BINARY, lm=lm, **bumped).named_predictors()]
    assert a == b
    if "stop_when_stable" in cls.early_stop_knobs:
        rounds = {"n_judges": 3, "judge_mode": "sequential"} if name == "courtroom-llm" else {}
        c = [n for n, _ in cls(BINARY, lm=lm, **(bumped | rounds), stop_when_stable=2).named_predictors()]
        assert a == c


def test_courtroom_predictors_same_for_one_and_five_judges() -> None:
    cls = FRAMEWORKS["courtroom-llm"]
    lm = oracle_lm({}, BINARY)
    one = cls(BINARY, lm=lm, n_judges=1).dump_state()
    five = cls(BINARY, lm=lm, n_judges=5).dump_state()
    assert one.keys() == five.keys()


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_knobs_are_json_simple(name: str) -> None:
    for value in FRAMEWORKS[name].knobs().values():
        assert isinstance(value, (int, float, str, bool))


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_fewer_than_two_labels_is_a_config_error(name: str) -> None:
    with pytest.raises(ConfigError):
        FRAMEWORKS[name](["only"], lm=oracle_lm({}, ["only"]))


def test_jot_is_binary_only() -> None:
    with pytest.raises(ConfigError, match="binary"):
        FRAMEWORKS["jot"](["a", "b", "c"], lm=oracle_lm({}, ["a", "b", "c"]))


SMALLEST = {
    "jot": {"n_loops": 1},
    "courtroom-llm": {"n_judges": 1, "k_precedents": 0, "max_argument_sentences": 1},
    "debate-feedback": {"n_rounds": 1, "n_debaters": 2, "word_limit": 30, "summarize": False},
    "few-shot": {"k_shots": 1},
    "cot": {"k_shots": 1},
    "self-consistency": {"k_samples": 1, "k_shots": 1},
    "khan-debate": {"n_rounds": 1},
    "parallel-vote": {"n_models": 1},
    "reflexion": {"max_retries": 0},
    "settle": {"panel_size": 2, "trial_knobs": "n_judges=1,k_precedents=0"},
}
"""The fewest calls that still run each framework's path (debate-feedback: 6, its judge reading the
comments; the summarizer's extra call is checked on the fakes)."""


ON_THE_README = {"jot"}
"""Run on the embedded model elsewhere: the README's first command and tests/test_local.py."""

PREFIX_ORDER = [
    "cot",
    "self-consistency",
    "few-shot",
    "zero-shot",
    "parallel-vote",
    "settle",
    "reflexion",
    "khan-debate",
    "courtroom-llm",
    "debate-feedback",
]
"""The embedded cases' order: the server reuses the part of a prompt it read last time (llama.cpp's
prefix cache, one prompt deep), and these baselines send the same classifier prompts at their
smallest knobs (cot's demo and answer are self-consistency's and few-shot's; zero-shot's is
parallel-vote's and settle's panel's), so each after the first reads little but its case.
A framework not listed runs last."""

EMBEDDED = [n for n in PREFIX_ORDER if n in FRAMEWORKS] + sorted(set(FRAMEWORKS) - ON_THE_README - set(PREFIX_ORDER))


@pytest.mark.local_model
@pytest.mark.parametrize("name", EMBEDDED)
def test_end_to_end_on_the_embedded_model(name: str, local_lm: Any) -> None:
    """One case through the real llama.cpp server, smallest knobs: label valid, transcript present.

    The contract is the structure (every role's real answer parses), not the accuracy.
    """
    train = [
        dspy.Example(case="not True and False", label="False", id="t1").with_inputs("case"),
        dspy.Example(case="True or False", label="True", id="t2").with_inputs("case"),
    ]
    program = FRAMEWORKS[name](BINARY, lm=local_lm, **SMALLEST.get(name, {}))
    program.prepare(train)
    out = program(case="True and not False")
    assert out.label in BINARY
    assert out.transcript and {t.role.split("-")[0] for t in out.transcript} <= set(FRAMEWORKS[name].roles)
