"""Debate-Feedback's paper options, read from the prompts each role received: the label-only judge
(Table 4), debaters with no side (Table 4, the authors' code), memory across rounds (Table 4's
"Follow the conversation from Step 1"), and the paper preset that combines them."""

from __future__ import annotations

import re
from typing import Any

import pytest

from courtroom.programs import DebateFeedback
from courtroom.programs.presets import get_preset
from courtroom.testing import scripted_lm

BINARY = ["True", "False"]


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


def _has(prompt: str, name: str) -> bool:
    return f"[[ ## {name} ## ]]" in prompt


def _prompts(lm: Any, role: str) -> list[str]:
    return [p for r, p in lm.engine_impl.prompts if r == role]


def _tagged_debater(role: str, turn: int, prompt: str) -> dict:
    return {"opinion": f"<{_field(prompt, 'stage').upper()}-{turn}>", "stance": "True"}


def _system(lm: Any, role: str) -> list[str]:
    return [s for r, s in lm.engine_impl.systems if r == role]


@pytest.mark.parametrize("method", ["votes", "field"])
def test_judge_answers_with_a_label_only_unless_asked_for_probabilities(method: str) -> None:
    lm = scripted_lm({"judge": {"label": "True", "p_1": 0.7, "p_2": 0.3}})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=1, prob_method=method, k_samples=1)(case="c")
    systems = _system(lm, "judge")
    assert len(systems) == 2
    for system in systems:
        assert ("p_1" in system and "probability" in system) == (method == "field")
        if method == "votes":
            assert "one of the labels only" in system
    if method == "votes":  # one label, one vote: O is one-hot, then smoothed (T = 0.5)
        assert out.probabilities[0] == {"True": 1.0, "False": 0.0}
        assert out.probabilities[1] == {"True": 1.0, "False": 0.0}
        assert "initial prediction on the case alone was True." in _prompts(lm, "judge")[1]


def test_debaters_without_sides_all_get_the_same_prompt() -> None:
    lm = scripted_lm({"debater": _tagged_debater})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=1, n_debaters=3, sides="none")(case="CASE")
    assert out.sides == [None, None, None]
    opinions = [p for p in _prompts(lm, "debater") if _field(p, "stage") == "opinion"]
    assert len(opinions) == 3 and len(set(opinions)) == 1  # Table 4: one prompt for every debater
    assert not any(_has(p, "perspective") for p in _prompts(lm, "debater"))
    assert all("perspective" not in s and "assigned" not in s for s in _system(lm, "debater"))
    replies = [p for p in _prompts(lm, "debater") if _field(p, "stage") == "reply"]
    assert all(re.fullmatch(r"(Expert \d: <OPINION-\d>\n?)+", _field(p, "other_opinions")) for p in replies)
    # The split default tells each debater its side.
    lm = scripted_lm({"debater": _tagged_debater})
    DebateFeedback(BINARY, lm=lm, n_rounds=1, n_debaters=2)(case="CASE")
    assert sorted(_field(p, "perspective") for p in _prompts(lm, "debater"))[:2] == ["False", "False"]


def _memory_run(memory: bool) -> Any:
    lm = scripted_lm(
        {
            "debater": _tagged_debater,
            "judge": lambda r, t, p: {"label": ["True", "False", "True"][min(t, 2)], "p_1": 0.6, "p_2": 0.4},
            "summarizer": lambda r, t, p: {"summary": f"<SUM-{t}>"},
        }
    )
    DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=2, sides="none", memory=memory)(case="CASE")
    return lm


def test_memory_keeps_each_debaters_and_the_judges_conversation_across_rounds() -> None:
    lm = _memory_run(True)
    debaters = _prompts(lm, "debater")
    first, second = debaters[:4], debaters[4:]
    assert all(_field(p, "earlier_rounds") == "(none)" for p in first)
    round1 = {re.search(r"<OPINION-\d>", p).group(0) for p in first if _field(p, "stage") == "reply"}
    own, replies = set(), set()
    for p in second:
        earlier = _field(p, "earlier_rounds")
        # Its own round-1 opinion, the other debater's round-1 opinion, and its own round-1 reply.
        m = re.fullmatch(
            r"Round 1: your opinion: (<OPINION-\d>)\nThe other experts' opinions:\nExpert \d: (<OPINION-\d>)\n"
            r"Your reply: (<REPLY-\d>) \(stance: True\)",
            earlier,
        )
        assert m, earlier
        assert {m.group(1), m.group(2)} == round1
        own.add(m.group(1))
        replies.add(m.group(3))
    assert own == round1 and len(replies) == 2  # each debater remembers its own part
    judges = _prompts(lm, "judge")
    assert not _has(judges[0], "earlier_rounds") or _field(judges[0], "earlier_rounds") == "(none)"
    assert _field(judges[1], "earlier_rounds") == "(none)"
    earlier = _field(judges[2], "earlier_rounds")
    assert "Round 1: debate summary: <SUM-" in earlier and "Your answer: False" in earlier
    assert "Round 2" not in earlier


def test_without_memory_every_round_starts_again_from_the_case() -> None:
    lm = _memory_run(False)
    for p in _prompts(lm, "debater") + _prompts(lm, "judge"):
        assert not _has(p, "earlier_rounds")
    opinions = [p for p in _prompts(lm, "debater") if _field(p, "stage") == "opinion"]
    assert len(opinions) == 4 and len(set(opinions)) == 1 and "<" not in opinions[0]
    # Round 2's opinion prompts are round 1's bytes: asked with round 1's, one request with n = 4.
    assert lm.engine_impl.requests.count(("debater", 4)) == 1
    assert lm.engine_impl.requests.count(("debater", 1)) == 4  # the replies, each its own prompt


def test_paper_preset_is_table_4() -> None:
    preset = get_preset("debate-feedback-paper")
    knobs = preset.knobs
    assert knobs["prob_method"] == "votes" and knobs["k_samples"] == 1  # a label only, one sample
    assert knobs["sides"] == "none" and knobs["memory"] is True and knobs["assistant_input"] == "summary"
    assert knobs["gate"] == "any" and knobs["threshold"] == 0.5
    assert "ours" in preset.sources["threshold"] and "ours" in preset.sources["gate"]
    assert set(preset.sources) == set(knobs)
    lm = scripted_lm({"debater": _tagged_debater, "judge": {"label": "True"}})
    out = DebateFeedback(BINARY, lm=lm, **(knobs | {"variant": "single", "n_rounds": 1}))(case="CASE")
    assert out.sides == [None, None, None] and lm.engine_impl.counts["judge"] == 2
