"""Debate-Feedback's tie rule (``tie``): the verdict on a hand-computed O_n, and the knob's reach
(space, presets, saved programs)."""

from __future__ import annotations

import pytest

from courtroom.errors import ConfigError
from courtroom.optimize.study.spaces import build_space, default_params
from courtroom.programs import DebateFeedback, build_program
from courtroom.programs.debate_feedback import TIES
from courtroom.programs.presets import get_preset
from courtroom.saving import load_program, save_program
from courtroom.testing import scripted_lm

LABELS = ["Yes", "No"]
# The paper preset's judge: one label per answer (one vote), smoothed as one-hot at T = 0.5.
PAPER_JUDGE = {"prob_method": "votes", "k_samples": 1, "smoothing": 0.5, "n_rounds": 2, "sides": "none"}


def _labels(*answers: str) -> dict:
    return {"judge": [{"label": a} for a in answers]}


def _yes(out: object) -> list[float]:
    return [round(o["Yes"], 9) for o in out.probabilities]  # type: ignore[attr-defined]


@pytest.mark.parametrize(("tie", "verdict"), [("initial", "No"), ("previous", "No"), ("last", "Yes")])
def test_one_flip_in_the_last_round_ties_and_the_rule_decides(tie: str, verdict: str) -> None:
    """O_0 = No, round 1 No, round 2 Yes: O_2(Yes) = 0.25 * 0 + 0.25 * 0 + 0.5 * 1 = 0.5, a tie."""
    lm = scripted_lm(_labels("No", "No", "Yes"))
    out = DebateFeedback(LABELS, lm=lm, **PAPER_JUDGE, tie=tie)(case="c")
    assert _yes(out) == [0.0, 0.0, 0.5]
    assert out.initial_label == "No" and out.label == verdict
    assert out.transcript[-1].decision == verdict


@pytest.mark.parametrize("tie", TIES)
def test_two_flips_leave_o0_under_every_rule_and_t1_follows_the_last_answer(tie: str) -> None:
    lm = scripted_lm(_labels("No", "Yes", "Yes"))
    out = DebateFeedback(LABELS, lm=lm, **PAPER_JUDGE, tie=tie)(case="c")
    assert _yes(out) == [0.0, 0.5, 0.75] and out.label == "Yes"
    # The round-1 tie (O_1 = 0.5) already shows the rule on the judge's turn.
    assert [t.decision for t in out.transcript if t.role == "judge"][1] == ("Yes" if tie == "last" else "No")
    lm = scripted_lm(_labels("No", "No", "Yes"))
    out = DebateFeedback(LABELS, lm=lm, **(PAPER_JUDGE | {"smoothing": 1.0}), tie=tie)(case="c")
    assert _yes(out) == [0.0, 0.0, 1.0] and out.label == "Yes"  # T = 1: no tie, the last answer


def _j(p_yes: float) -> dict:
    return {"label": "Yes" if p_yes > 0.5 else "No", "p_1": p_yes, "p_2": round(1 - p_yes, 9)}


@pytest.mark.parametrize(("tie", "verdict"), [("initial", "Yes"), ("previous", "No"), ("last", "Yes")])
def test_with_stated_probabilities_previous_keeps_the_label_standing(tie: str, verdict: str) -> None:
    """O_0 = 0.6, LM_1 = 0.2, LM_2 = 0.6 (Yes): O_1 = 0.4 (No stands), O_2 = 0.5 * 0.4 + 0.5 * 0.6 = 0.5."""
    lm = scripted_lm({"judge": [_j(0.6), _j(0.2), _j(0.6)]})
    out = DebateFeedback(LABELS, lm=lm, n_rounds=2, smoothing=0.5, tie=tie)(case="c")
    assert _yes(out) == pytest.approx([0.6, 0.4, 0.5])
    assert out.initial_label == "Yes" and out.label == verdict


def test_last_after_a_round_that_did_not_pass_is_o0s_label() -> None:
    """Round 1 passes (judge Yes: O_1 = 0.5, a tie: last gives Yes); round 2 does not: O_2 = O_0, No."""
    judge = scripted_lm(_labels("No", "Yes"))
    rest = scripted_lm({"assistant": [{"reliability": r} for r in (0.9, 0.9, 0.1, 0.1)]})
    program = DebateFeedback(
        LABELS,
        lm=rest,
        roles={"judge": judge},
        **PAPER_JUDGE,
        variant="assistant",
        reliability="llm",
        assistant_input="reply",
        tie="last",
    )
    out = program(case="c")
    assert out.gates == [True, False] and _yes(out) == [0.0, 0.5, 0.0]
    assert [t.decision for t in out.transcript if t.role == "judge"] == ["No", "Yes", "No"]
    assert out.label == "No"


def test_the_knob_is_declared_once_and_reaches_space_preset_and_saved_program(tmp_path) -> None:
    assert DebateFeedback.knobs()["tie"] == "initial"
    with pytest.raises(ConfigError, match="initial, previous, last"):
        DebateFeedback(LABELS, lm=scripted_lm({}), tie="coin")
    space = {p.name: p for p in build_space("debate-feedback")}
    assert set(space["tie"].choices) == set(TIES)
    assert default_params("debate-feedback", list(space.values()))["tie"] == "initial"
    assert "debate-feedback.tie" in {p.name for p in build_space("settle")}
    preset = get_preset("debate-feedback-paper")
    assert preset.knobs["tie"] == "initial" and "Table 5" in preset.sources["tie"]
    program = build_program("debate-feedback", LABELS, lm=scripted_lm({}), knobs={"tie": "last"})
    assert program.tie == "last" and program.config()["tie"] == "last"
    path = save_program(program, tmp_path / "p.json")
    assert load_program(path, lm=scripted_lm({})).tie == "last"
