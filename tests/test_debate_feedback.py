"""Debate-Feedback: smoothing, threshold gate, probability methods, debate structure, the trained
assistant (and its JSON save/load), role routing and bad configuration."""

from __future__ import annotations

import math
import re

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.programs import DebateFeedback
from courtroom.programs._probability import decide, from_fields, from_logprobs
from courtroom.programs.debate_feedback import correction_counts
from courtroom.testing import scripted_lm

BINARY = ["True", "False"]


def _o(out: dspy.Prediction) -> list[float]:
    return [round(o["True"], 9) for o in out.probabilities]


def _j(p_true: float, label: str | None = None) -> dict:
    """A judge answer: one probability per label, the written label agreeing unless given."""
    return {"label": label or ("True" if p_true >= 0.5 else "False"), "p_1": p_true, "p_2": round(1 - p_true, 9)}


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


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
    lm = scripted_lm({"judge": [_j(0.2), _j(0.9), _j(0.6)]})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=2, smoothing=t)(case="c")
    assert _o(out) == pytest.approx(expected)
    assert out.initial_label == "False"
    assert out.label == ("True" if expected[-1] > 0.5 else "False")
    assert out.gates == [True, True]  # single variant: every comment reaches the judge
    assert lm.engine_impl.counts["summarizer"] == 2  # sum = LM(a, e, v), then LM(x, sum): two calls


def _side_debater(role: str, turn: int, prompt: str) -> dict:
    side = _field(prompt, "perspective")
    side = side if side in BINARY else "True"
    return {"opinion": f"I argue {side} (turn {turn})", "stance": side}


def _stance_assistant(role: str, turn: int, prompt: str) -> dict:
    return {"reliability": 0.9 if _field(prompt, "stance") == "True" else 0.1}


def test_round_gate_sends_every_comment_with_its_reliability_to_the_summary_and_the_judge() -> None:
    """Algorithm 1's Threshold(v) gates the round; Table 4 step 4 gives the judge all reliabilities (0.45 too)."""
    judge = scripted_lm({"judge": [_j(0.2), _j(0.9)], "summarizer": {"summary": "the round summary"}})
    rest = scripted_lm({"debater": _side_debater, "assistant": _stance_assistant})
    program = DebateFeedback(
        BINARY,
        lm=rest,
        roles={"judge": judge},
        n_rounds=1,
        variant="assistant",
        reliability="llm",
        assistant_input="reply",
        threshold=0.5,
    )
    out = program(case="c")
    assert out.reliabilities == [[0.9, 0.1]] and out.passed == [[1, 2]] and out.gates == [True]
    assert _o(out) == pytest.approx([0.2, 0.55])
    (summary_prompt,) = [p for r, p in judge.engine_impl.prompts if r == "summarizer"]
    assert "Expert 1 (perspective: True) (reliability 0.90)" in summary_prompt
    assert "Expert 2 (perspective: False) (reliability 0.10)" in summary_prompt and "I argue False" in summary_prompt
    estimate = [p for r, p in judge.engine_impl.prompts if r == "judge"][1]
    seen = _field(estimate, "debate_summary")
    assert seen.startswith("the round summary") and "Expert 1 (perspective: True): 0.90" in seen
    assert "Expert 2 (perspective: False): 0.10" in seen
    assert "initial prediction on the case alone was False" in _field(estimate, "initial_prediction")


@pytest.mark.parametrize(("gate", "scores", "passes"), [("any", (0.6, 0.1), True), ("mean", (0.6, 0.1), False)])
def test_any_and_mean_gates(gate: str, scores: tuple[float, float], passes: bool) -> None:
    def assistant(role: str, turn: int, prompt: str) -> dict:
        return {"reliability": scores[0] if _field(prompt, "stance") == "True" else scores[1]}

    lm = scripted_lm({"judge": _j(0.7), "debater": _side_debater, "assistant": assistant})
    out = DebateFeedback(
        BINARY, lm=lm, n_rounds=1, variant="assistant", reliability="llm", assistant_input="reply", gate=gate
    )(case="c")
    assert out.gates == [passes] and out.passed == ([[1, 2]] if passes else [[]])


def test_per_comment_gate_is_an_option_that_forwards_only_the_passing_comments() -> None:
    judge = scripted_lm({"judge": [_j(0.2), _j(0.9)], "summarizer": {"summary": "the round summary"}})
    rest = scripted_lm({"debater": _side_debater, "assistant": _stance_assistant})
    program = DebateFeedback(
        BINARY,
        lm=rest,
        roles={"judge": judge},
        n_rounds=1,
        variant="assistant",
        reliability="llm",
        assistant_input="reply",
        gate="comment",
    )
    out = program(case="c")
    assert out.reliabilities == [[0.9, 0.1]] and out.passed == [[1]] and out.gates == [True]
    (summary_prompt,) = [p for r, p in judge.engine_impl.prompts if r == "summarizer"]
    assert "Expert 1" in summary_prompt and "reliability 0.90" in summary_prompt
    assert "Expert 2" not in summary_prompt and "I argue False" not in summary_prompt


def test_no_passing_comment_reuses_o0_without_a_new_call() -> None:
    judge = scripted_lm({"judge": [_j(0.2), _j(0.9)]})
    rest = scripted_lm({"debater": _side_debater, "assistant": {"reliability": 0.3}})
    out = DebateFeedback(
        BINARY,
        lm=rest,
        roles={"judge": judge},
        n_rounds=2,
        variant="assistant",
        reliability="llm",
        assistant_input="reply",
        threshold=0.5,
    )(case="c")
    assert out.gates == [False, False] and out.passed == [[], []]
    assert _o(out) == pytest.approx([0.2, 0.2, 0.2])  # O_i = O_0, Algorithm 1's LM(x)
    assert judge.engine_impl.counts["judge"] == 1 and "summarizer" not in judge.engine_impl.turns


def test_merged_summary_knob_makes_one_call_that_reads_the_passing_comments() -> None:
    lm = scripted_lm({"judge": [_j(0.2), _j(0.9)], "debater": _side_debater})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=1, summarize=False)(case="c")
    assert "summarizer" not in lm.engine_impl.turns and _o(out) == pytest.approx([0.2, 0.55])
    estimate = [p for r, p in lm.engine_impl.prompts if r == "judge"][1]
    assert "I argue True" in _field(estimate, "debate_summary") and "I argue False" in estimate


def test_who_argues_what_binary_split_and_odd_one_free() -> None:
    lm = scripted_lm({"debater": _side_debater})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=1, n_debaters=3)(case="c")
    assert out.sides == ["True", "False", None]
    prompts = [_field(p, "perspective") for r, p in lm.engine_impl.prompts if r == "debater"]
    assert prompts.count("True") == 2 and prompts.count("False") == 2  # opinion + reply each
    assert sum("no assigned side" in p for p in prompts) == 2
    out = DebateFeedback(BINARY, lm=scripted_lm({}), n_rounds=1, n_debaters=4)(case="c")
    assert sorted(out.sides) == ["False", "False", "True", "True"]


def test_who_argues_what_multiclass_follows_o0_ranking() -> None:
    labels = ["a", "b", "c", "d"]
    lm = scripted_lm({"judge": {"label": "c", "p_1": 0.1, "p_2": 0.3, "p_3": 0.5, "p_4": 0.1}})
    out = DebateFeedback(labels, lm=lm, n_rounds=1, n_debaters=2)(case="c")
    assert out.sides == ["c", "b"]  # O_0's top two, not labels[0] and labels[1]
    out = DebateFeedback(labels, lm=lm, n_rounds=1, n_debaters=3)(case="c")
    assert out.sides == ["c", "b", "a"]  # ties (a, d) by label order


def test_debaters_information_per_step() -> None:
    def debater(role: str, turn: int, prompt: str) -> dict:
        stage = _field(prompt, "stage")
        side = _field(prompt, "perspective")
        return {"opinion": f"{stage} of {side} turn {turn}", "stance": side}

    lm = scripted_lm({"debater": debater})
    DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=2)(case="the case text")
    prompts = [p for r, p in lm.engine_impl.prompts if r == "debater"]
    opinions = [p for p in prompts if _field(p, "stage") == "opinion"]
    replies = [p for p in prompts if _field(p, "stage") == "reply"]
    assert len(opinions) == len(replies) == 4
    for p in opinions:  # every round's opinions start from the case alone (Algorithm 1)
        assert "the case text" in p and "turn" not in p
    for p in replies:
        side = _field(p, "perspective")
        other = "False" if side == "True" else "True"
        assert f"opinion of {side}" in _field(p, "own_opinion")  # its own opinion ...
        assert f"opinion of {other}" in _field(p, "other_opinions")  # ... and the others'
        assert f"opinion of {side}" not in _field(p, "other_opinions")
    rounds = sorted(p for p in opinions)
    assert len(set(rounds)) == 2  # round 2 repeats round 1's prompts: told apart by rollout ids


def test_probability_fields_name_each_label_and_are_checked_against_the_written_label() -> None:
    lm = scripted_lm({"judge": _j(0.3, label="False")})
    program = DebateFeedback(BINARY, lm=lm, n_rounds=1)
    out = program(case="c")
    schema_prompt = "\n".join(m["content"] for m in lm.history[0]["messages"])
    assert "that the correct label is 'True'" in schema_prompt and "that the correct label is 'False'" in schema_prompt
    assert out.probabilities[0] == pytest.approx({"True": 0.3, "False": 0.7})
    # The confidence in the chosen label written where the other label's belongs: the label wins.
    fields = dspy.Prediction(label="False", p_1=0.8, p_2=0.2)
    assert from_fields(fields, BINARY) == ({"True": pytest.approx(0.2), "False": pytest.approx(0.8)}, False)
    # Exactly 0.5: the written label stands, and a tie in O_n goes to the initial prediction.
    assert from_fields(dspy.Prediction(label="False", p_1=0.5, p_2=0.5), BINARY)[1] is True
    assert decide({"True": 0.5, "False": 0.5}, BINARY, tie="False") == "False"
    lm = scripted_lm({"judge": [_j(0.5, label="False"), _j(0.5, label="True")]})
    assert DebateFeedback(BINARY, lm=lm, n_rounds=1)(case="c").label == "False"


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


def test_transcript_structure_and_word_limit() -> None:
    lm = scripted_lm({"debater": {"opinion": "one two three four five six"}})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=3, word_limit=4)(case="c")
    roles = [t.role for t in out.transcript]
    round1 = ["debater-1", "debater-2", "debater-3"] * 2
    assert roles == ["judge", *round1, "summarizer", "judge", *round1, "summarizer", "judge"]
    debaters = [t for t in out.transcript if t.role.startswith("debater")]
    assert [t.extra["side"] for t in debaters[:3]] == ["True", "False", None]
    assert [t.extra["stage"] for t in debaters[:6]] == ["opinion"] * 3 + ["reply"] * 3
    assert all(t.text == "one two three four" and t.extra["truncated"] for t in debaters)
    assert len(out.probabilities) == 3


def test_each_role_runs_on_its_own_model() -> None:
    lms = {role: scripted_lm({}, model=f"fake/{role}") for role in DebateFeedback.roles}
    DebateFeedback(BINARY, lm=scripted_lm({}), roles=lms, n_rounds=1, variant="assistant", reliability="llm")(case="c")
    for role, lm in lms.items():
        assert set(lm.engine_impl.turns) == {role}, role


def test_vote_share_method() -> None:
    lm = scripted_lm({"judge": [{"label": "True"}, {"label": "True"}, {"label": "False"}, {"label": "True"}]})
    program = DebateFeedback(BINARY, lm=lm, n_rounds=1, prob_method="votes", k_samples=4)
    out = program(case="c")
    assert out.probabilities[0]["True"] == pytest.approx(0.75)
    assert lm.engine_impl.counts["judge"] == 8
    assert program.sampled_roles() == {"judge": 4}


def test_multiclass_field_method_is_normalised_argmax() -> None:
    labels = ["a", "b", "c"]
    lm = scripted_lm(
        {
            "judge": [
                {"label": "b", "p_1": 0.2, "p_2": 0.6, "p_3": 0.2},
                {"label": "c", "p_1": 0.1, "p_2": 0.1, "p_3": 0.8},
            ]
        }
    )
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
            ('{"label": "', 0.0),
            ("Tr", math.log(0.8)),
            ("ue", math.log(0.9)),
            ('"}', 0.0),
        ]
    ]
    pred = dspy.Prediction(label="True", logprobs={"content": tokens})
    assert from_logprobs(pred, BINARY) == pytest.approx({"True": 0.72, "False": 0.28})


def _trainset(n: int = 12, start: int = 0) -> list[dspy.Example]:
    return [
        dspy.Example(case=f"case {i} gold={BINARY[i % 2]}", label=BINARY[i % 2], id=i) for i in range(start, start + n)
    ]


def _stance_debater(role: str, turn: int, prompt: str) -> dict:
    """The stated stance is right on even turns, whatever the assigned side; a right stance reads convincing."""
    gold = re.search(r"gold=(\w+)", prompt).group(1)
    stance = gold if turn % 2 == 0 else ("False" if gold == "True" else "True")
    return {"opinion": "convincing evidence" if stance == gold else "weak hunch", "stance": stance}


def test_assistant_is_trained_on_stated_stances_and_saved_as_json(tmp_path) -> None:
    lm = scripted_lm({"debater": _stance_debater})
    program = DebateFeedback(
        BINARY, lm=lm, n_rounds=1, variant="assistant", reliability="assistant", assistant_input="reply"
    )
    with pytest.raises(ConfigError, match="prepare"):
        program(case="case 99 gold=True")
    program.prepare(_trainset())
    assert lm.engine_impl.counts["debater"] == 12 * 2 * 2  # cases x debaters x (opinion + reply)
    assert "judge" not in lm.engine_impl.turns  # binary training debates need no O_0
    good, bad = program.reliability_model.score(
        ["case 50 gold=True\nconvincing evidence", "case 50 gold=True\nweak hunch"], ["True", "False"]
    )
    assert good > 0.5 > bad

    path = tmp_path / "df.json"
    program.save(str(path))
    assert '"vocabulary"' in path.read_text()
    fresh = DebateFeedback(BINARY, lm=lm, n_rounds=1, variant="assistant", reliability="assistant")
    fresh.load(str(path))
    texts = ["case 7 gold=False\nconvincing evidence", "case 7 gold=False\nweak hunch"]
    stances = ["False", "True"]
    assert fresh.reliability_model.score(texts, stances) == pytest.approx(
        program.reliability_model.score(texts, stances)
    )


def test_assistant_reads_the_summary_of_each_statement_by_default() -> None:
    """Table 4 step 3: the summarizer writes one summary per debater; the assistant is trained and run on it."""

    def summarizer(role: str, turn: int, prompt: str) -> dict:
        return {"summary": "SUMMARY " + ("convincing" if "convincing evidence" in prompt else "weak")}

    lm = scripted_lm({"debater": _stance_debater, "summarizer": summarizer})
    program = DebateFeedback(BINARY, lm=lm, n_rounds=1, variant="assistant")
    program.prepare(_trainset())
    assert lm.engine_impl.counts["summarizer"] == 12 * 2  # one summary per debater per case
    vocabulary = set(program.reliability_model.to_dict()["vocabulary"])
    assert "summary" in vocabulary and "hunch" not in vocabulary  # fitted on the summaries, not the replies
    lm.engine_impl.clear()
    out = program(case="case 101 gold=False")
    statements = [t for t in out.transcript if t.role == "summarizer" and t.extra.get("for") == "assistant"]
    assert [t.extra["of"] for t in statements] == ["debater-1", "debater-2"]
    per_debater = [p for r, p in lm.engine_impl.prompts if r == "summarizer"][:2]
    # One debater's statement each (the two run concurrently, in either order).
    assert sorted(("Expert 1" in p, "Expert 2" in p) for p in per_debater) == [(False, True), (True, False)]


def test_trained_per_comment_gate_separates_reliable_from_unreliable_comments() -> None:
    """With gate="comment", exactly the comments whose stance is right pass."""
    lm = scripted_lm({"debater": _stance_debater})
    program = DebateFeedback(
        BINARY,
        lm=lm,
        n_rounds=1,
        n_debaters=2,
        variant="assistant",
        reliability="assistant",
        assistant_input="reply",
        gate="comment",
    )
    program.prepare(_trainset(24))
    passed_right = passed_wrong = held_right = held_wrong = 0
    for ex in _trainset(30, start=100):
        out = program(case=ex.case)
        replies = [t for t in out.transcript if t.extra.get("stage") == "reply"]
        for d, turn in enumerate(replies, 1):
            right = turn.extra["stance"] == ex.label
            passed = d in out.passed[0]
            passed_right += right and passed
            passed_wrong += (not right) and passed
            held_right += right and not passed
            held_wrong += (not right) and not passed
    assert passed_wrong == 0 and held_right == 0
    assert passed_right > 0 and held_wrong > 0


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
        {"gate": "round"},
        {"sides": "left"},
        {"assistant_input": "opinion"},
        {"memory": "yes"},
    ],
)
def test_bad_configuration(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        DebateFeedback(BINARY, lm=scripted_lm({}), **kwargs)
