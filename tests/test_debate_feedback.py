"""Debate-Feedback: smoothing, threshold gate, probability methods, debate structure, the trained
assistant (and its JSON save/load), role routing and bad configuration."""

from __future__ import annotations

import math
import re

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.programs import DebateFeedback
from courtroom.programs._probability import from_logprobs
from courtroom.programs.debate_feedback import correction_counts
from courtroom.testing import scripted_lm

BINARY = ["True", "False"]


def _o(out: dspy.Prediction) -> list[float]:
    return [round(o["True"], 9) for o in out.probabilities]


@pytest.mark.parametrize(
    ("t", "expected"),
    [
        (0.5, [0.2, 0.55, 0.575]),
        (0.0, [0.2, 0.2, 0.2]),
        (1.0, [0.2, 0.9, 0.6]),
        (0.25, [0.2, 0.375, 0.43125]),
    ],
)
def test_smoothing_formula_on_scripted_probabilities(t: float, expected: list[float]) -> None:
    lm = scripted_lm({"judge": [{"probability": 0.2}, {"probability": 0.9}, {"probability": 0.6}]})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=2, smoothing=t)(case="c")
    assert _o(out) == pytest.approx(expected)
    assert out.initial_label == "False"
    assert out.label == ("True" if expected[-1] >= 0.5 else "False")
    assert out.gates == [True, True]  # single variant: the gate always passes


@pytest.mark.parametrize(("score", "passes"), [(0.2, False), (0.8, True), (0.5, True)])
def test_threshold_gate(score: float, passes: bool) -> None:
    judge = scripted_lm(
        {"judge": [{"probability": 0.2}, {"probability": 0.9, "summary": "the round summary"}]}
    )
    rest = scripted_lm({"assistant": {"reliability": score}})
    program = DebateFeedback(
        BINARY,
        lm=rest,
        roles={"judge": judge},
        n_rounds=1,
        variant="assistant",
        reliability="llm",
        threshold=0.5,
        smoothing=0.5,
    )
    out = program(case="c")
    assert out.gates == [passes] and out.reliabilities == [[score, score]]
    round_prompt = judge.engine_impl.prompts[1][1]
    if passes:
        assert _o(out) == pytest.approx([0.2, 0.55])
        assert "Expert 1 for True (reliability" in round_prompt
        assert out.transcript[-1].text == "the round summary"
    else:
        assert _o(out) == pytest.approx([0.2, 0.9])  # O_1 = LM(x), no smoothing
        assert "Expert 1" not in round_prompt and "(none)" in round_prompt


def test_correction_counts() -> None:
    golds = ["a", "a", "b", "b", "a"]
    initial = ["b", "a", "b", "a", "b"]
    final = ["a", "b", "b", "a", "b"]
    assert correction_counts(golds, initial, final) == {
        "correction": 1,
        "degradation": 1,
        "kept_right": 1,
        "kept_wrong": 2,
        "n": 5,
    }


def test_transcript_structure_positions_and_word_limit() -> None:
    lm = scripted_lm({"debater": {"opinion": "one two three four five six"}})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=3, word_limit=4)(case="c")
    roles = [t.role for t in out.transcript]
    round1 = ["debater-1", "debater-2", "debater-3"] * 2
    assert roles == ["judge", *round1, "judge", *round1, "judge"]
    debaters = [t for t in out.transcript if t.role.startswith("debater")]
    assert [t.extra["position"] for t in debaters[:3]] == ["True", "False", "True"]  # round-robin
    assert [t.extra["stage"] for t in debaters[:6]] == ["opinion"] * 3 + ["reply"] * 3
    assert all(t.text == "one two three four" and t.extra["truncated"] for t in debaters)
    assert len(out.probabilities) == 3
    reply_prompts = [p for r, p in lm.engine_impl.prompts if r == "debater" and "\nreply\n" in p]
    assert all("Expert" in p for p in reply_prompts)  # replies read the others' opinions


def test_each_role_runs_on_its_own_model() -> None:
    lms = {role: scripted_lm({}, model=f"fake/{role}") for role in DebateFeedback.roles}
    DebateFeedback(BINARY, lm=scripted_lm({}), roles=lms, n_rounds=1, variant="assistant", reliability="llm")(
        case="c"
    )
    for role, lm in lms.items():
        assert set(lm.engine_impl.turns) == {role}, role


def test_vote_share_method() -> None:
    lm = scripted_lm({"judge": [{"label": "True"}, {"label": "True"}, {"label": "False"}, {"label": "True"}]})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=1, prob_method="votes", k_samples=4)(case="c")
    assert out.probabilities[0]["True"] == pytest.approx(0.75)
    assert lm.engine_impl.counts["judge"] == 8


def test_multiclass_field_method_is_normalised_argmax() -> None:
    labels = ["a", "b", "c"]
    lm = scripted_lm({"judge": [{"p_1": 0.2, "p_2": 0.6, "p_3": 0.2}, {"p_1": 0.1, "p_2": 0.1, "p_3": 0.8}]})
    out = DebateFeedback(labels, lm=lm, n_rounds=1, smoothing=0.5)(case="c")
    assert out.probabilities[0] == pytest.approx({"a": 0.2, "b": 0.6, "c": 0.2})
    assert out.probabilities[1] == pytest.approx({"a": 0.15, "b": 0.35, "c": 0.5})
    assert (out.initial_label, out.label) == ("b", "c")


def test_logprobs_method_needs_a_provider_that_returns_them() -> None:
    with pytest.raises(ConfigError, match="logprobs"):
        DebateFeedback(BINARY, lm=scripted_lm({}), n_rounds=1, prob_method="logprobs")(case="c")
    tokens = [
        {"token": t, "logprob": lp}
        for t, lp in [
            ('{"summary": "none", "label": "', 0.0),
            ("Tr", math.log(0.8)),
            ("ue", math.log(0.9)),
            ('"}', 0.0),
        ]
    ]
    pred = dspy.Prediction(label="True", logprobs={"content": tokens})
    assert from_logprobs(pred, BINARY) == pytest.approx({"True": 0.72, "False": 0.28})


def _trainset(n: int = 12) -> list[dspy.Example]:
    return [dspy.Example(case=f"case {i} gold={BINARY[i % 2]}", label=BINARY[i % 2], id=i) for i in range(n)]


def _debater(role: str, turn: int, prompt: str) -> dict:
    gold = re.search(r"gold=(\w+)", prompt).group(1)
    position = re.search(r"\[\[ ## position ## \]\]\n(\w+)", prompt).group(1)
    return {"opinion": "convincing evidence" if gold == position else "weak hunch"}


def test_assistant_is_trained_on_training_debates_and_saved_as_json(tmp_path) -> None:
    lm = scripted_lm({"debater": _debater})
    program = DebateFeedback(BINARY, lm=lm, n_rounds=1, variant="assistant", reliability="assistant")
    with pytest.raises(ConfigError, match="prepare"):
        program(case="case 99 gold=True")
    program.prepare(_trainset())
    assert lm.engine_impl.counts["debater"] == 12 * 2 * 2  # cases x debaters x (opinion + reply)
    assert "judge" not in lm.engine_impl.turns  # training runs the debates only
    good, bad = program.reliability_model.score(
        ["case 50 gold=True\nconvincing evidence", "case 50 gold=True\nweak hunch"]
    )
    assert good > 0.5 > bad

    out = program(case="case 99 gold=True")
    assert out.reliabilities[0][0] > 0.5 > out.reliabilities[0][1]
    assistant_turn = next(t for t in out.transcript if t.role == "assistant")
    assert assistant_turn.extra["method"] == "assistant"

    path = tmp_path / "df.json"
    program.save(str(path))
    assert '"vocabulary"' in path.read_text()
    fresh = DebateFeedback(BINARY, lm=lm, n_rounds=1, variant="assistant", reliability="assistant")
    fresh.load(str(path))
    texts = ["case 7 gold=False\nconvincing evidence", "case 7 gold=False\nweak hunch"]
    assert fresh.reliability_model.score(texts) == pytest.approx(program.reliability_model.score(texts))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"smoothing": 1.5},
        {"smoothing": -0.1},
        {"threshold": 2.0},
        {"threshold": -1},
        {"n_debaters": 1},
        {"n_rounds": 0},
        {"variant": "double"},
        {"reliability": "oracle"},
        {"prob_method": "guess"},
        {"k_samples": 0},
    ],
)
def test_bad_configuration(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        DebateFeedback(BINARY, lm=scripted_lm({}), **kwargs)
