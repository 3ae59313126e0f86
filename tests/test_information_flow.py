"""What each role sees at each step, read from the prompts the scripted fake received (SPEC §4.5).

The fakes answer from the case text alone, so they cannot notice a judge that never sees an
argument; these tests read the prompts instead. Every reply carries a unique tag (role, turn) so
a prompt holding that tag proves the information reached it.
"""

from __future__ import annotations

import re
from typing import Any

import dspy

from courtroom.programs import CourtroomLLM, DebateFeedback, JudgmentOfThought, KhanDebate
from courtroom.testing import scripted_lm

BINARY = ["True", "False"]


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


def _prompts(lm: Any, role: str) -> list[str]:
    return [p for r, p in lm.engine_impl.prompts if r == role]


def _schemas(lm: Any, marker: str) -> list[dict]:
    """The output schemas of the calls whose last message contains ``marker``."""
    return [
        h["kwargs"]["response_format"]["json_schema"]["schema"]
        for h in lm.history
        if marker in h["messages"][-1]["content"]
    ]


def _tagged(role: str, field: str, **extra: Any) -> Any:
    return lambda r, turn, prompt: {field: f"<{role.upper()}-{turn}>", **extra}


# -- Judgment-of-Thought ---------------------------------------------------------------------------


def test_jot_information_flow() -> None:
    lm = scripted_lm(
        {
            "lawyer": _tagged("lawyer", "argument"),
            "prosecutor": _tagged("prosecutor", "argument"),
            "judge": lambda r, t, p: {
                "decision": "True",
                "analysis": f"<ANALYSIS-{t}>",
                "feedback_to_lawyer": f"<FB-L-{t}>",
                "feedback_to_prosecutor": f"<FB-P-{t}>",
            },
        }
    )
    JudgmentOfThought(BINARY, lm=lm, n_loops=3)(case="CASE-TEXT")
    lawyer, prosecutor, judge = _prompts(lm, "lawyer"), _prompts(lm, "prosecutor"), _prompts(lm, "judge")
    # Round 1: each advocate sees the case only.
    for p in (lawyer[0], prosecutor[0]):
        assert "CASE-TEXT" in p and "<" not in p
    # Round 2 judge: both round-2 arguments, not round 1's, no earlier feedback or analysis.
    assert "<LAWYER-1>" in judge[1] and "<PROSECUTOR-1>" in judge[1]
    assert "<LAWYER-0>" not in judge[1] and "<PROSECUTOR-0>" not in judge[1]
    assert "<FB-" not in judge[1] and "<ANALYSIS-" not in judge[1]
    # Round 3 advocate: its own earlier arguments, the opponent's last one, its own feedback only.
    assert "<LAWYER-0>" in lawyer[2] and "<LAWYER-1>" in lawyer[2]
    assert "<PROSECUTOR-1>" in lawyer[2] and "<PROSECUTOR-0>" not in lawyer[2]
    assert "<FB-L-1>" in lawyer[2] and "<FB-P-" not in lawyer[2] and "<FB-L-0>" not in lawyer[2]
    assert "<PROSECUTOR-0>" in prosecutor[2] and "<LAWYER-1>" in prosecutor[2] and "<FB-P-1>" in prosecutor[2]
    assert "closing" in _field(lawyer[2], "stage")


# -- Courtroom-LLM ---------------------------------------------------------------------------------


def test_courtroom_llm_information_flow() -> None:
    labels = ["sadness", "joy", "love", "anger"]
    train = [
        dspy.Example(case=f"PRECEDENT-{lab}-{i} feeling words", label=lab, id=f"{lab}{i}")
        for lab in labels
        for i in range(3)
    ]
    lm = scripted_lm(
        {
            "clerk": {"most_likely": "anger", "ranking": ["anger", "sadness", "joy", "love"]},
            "prosecutor": _tagged("prosecutor", "argument"),
            "attorney": _tagged("attorney", "argument"),
            "reasoner": _tagged("reason", "reason"),
            "judge": lambda r, t, p: {"decision": "sadness", "reason": f"<JUDGE-{t}>"},
        }
    )
    program = CourtroomLLM(labels, lm=lm, n_judges=3, k_precedents=1, assignment="fixed")
    program.prepare(train)
    out = program(case="CASE-TEXT feeling words")
    (clerk,) = _prompts(lm, "clerk")
    assert all(lab in clerk for lab in labels) and "<" not in clerk  # the case and every label
    (prosecutor,) = _prompts(lm, "prosecutor")
    (attorney,) = _prompts(lm, "attorney")
    assert _field(prosecutor, "label") == "anger" and _field(attorney, "label") == "sadness"
    assert "<ATTORNEY" not in prosecutor and "PRECEDENT" not in prosecutor
    judges = _prompts(lm, "judge")
    assert len(judges) == 3
    for p in judges:
        assert "<PROSECUTOR-0>" in p and "<ATTORNEY-0>" in p
        # One precedent per candidate: one whose gold label is A1, one whose gold label is A2.
        precedents = _field(p, "precedents")
        assert precedents.count("Correct label: anger") == 1 and precedents.count("Correct label: sadness") == 1
        assert "Correct label: joy" not in precedents and "Correct label: love" not in precedents
        assert set(re.findall(r'"(\w+)"', _field(p, "candidates"))) == {"anger", "sadness"}
        assert "<JUDGE-" not in p  # parallel judges: independent
    # The judges may only answer A1 or A2: the schema's enum is those two.
    for schema in _schemas(lm, "prosecutor_argument"):
        assert sorted(schema["properties"]["decision"]["enum"]) == ["anger", "sadness"]
    assert out.votes == ["sadness"] * 3


def test_courtroom_llm_sequential_judges_see_earlier_judges_only() -> None:
    lm = scripted_lm({"judge": lambda r, t, p: {"decision": "True", "reason": f"<JUDGE-{t}>"}})
    CourtroomLLM(BINARY, lm=lm, n_judges=3, k_precedents=0, judge_mode="sequential")(case="c")
    judges = _prompts(lm, "judge")
    assert "<JUDGE-" not in judges[0]
    assert "<JUDGE-0>" in judges[1] and "<JUDGE-1>" not in judges[1]
    assert "<JUDGE-0>" in judges[2] and "<JUDGE-1>" in judges[2]


def test_courtroom_llm_sequential_judge_can_see_the_previous_judge_only() -> None:
    """The final paper (§3.3): "Each Judge-LLM considers the conclusions of the previous Judge-LLM"."""
    lm = scripted_lm({"judge": lambda r, t, p: {"decision": "True", "reason": f"<JUDGE-{t}>"}})
    program = CourtroomLLM(BINARY, lm=lm, n_judges=4, k_precedents=0, judge_mode="sequential", previous_judges="last")
    program(case="c")
    judges = _prompts(lm, "judge")
    assert "<JUDGE-" not in judges[0]
    for i in range(1, 4):
        assert re.findall(r"<JUDGE-\d>", _field(judges[i], "previous_judges")) == [f"<JUDGE-{i - 1}>"]


def test_courtroom_llm_judge_context_lists_every_label_but_chooses_a1_or_a2() -> None:
    labels = ["entailment", "neutral", "contradiction"]
    lm = scripted_lm(
        {
            "clerk": {"most_likely": "neutral", "ranking": ["neutral", "contradiction", "entailment"]},
            "judge": {"decision": "neutral", "reason": "r"},
        }
    )
    CourtroomLLM(labels, lm=lm, n_judges=1, k_precedents=0)(case="CASE")
    (judge,) = _prompts(lm, "judge")
    assert set(re.findall(r'"(\w+)"', _field(judge, "labels"))) == set(labels)  # as the papers' "Label: ..."
    assert set(re.findall(r'"(\w+)"', _field(judge, "candidates"))) == {"neutral", "contradiction"}
    (schema,) = _schemas(lm, "prosecutor_argument")
    assert sorted(schema["properties"]["decision"]["enum"]) == ["contradiction", "neutral"]


# -- Debate-Feedback -------------------------------------------------------------------------------


def test_debate_feedback_information_flow() -> None:
    def debater(role: str, turn: int, prompt: str) -> dict:
        side = _field(prompt, "perspective")
        side = side if side in BINARY else "True"
        return {"opinion": f"<{_field(prompt, 'stage').upper()}-{side}-{turn}>", "stance": side}

    def assistant(role: str, turn: int, prompt: str) -> dict:
        return {"reliability": 0.9 if _field(prompt, "stance") == "False" else 0.2}

    def summarizer(role: str, turn: int, prompt: str) -> dict:
        tags = re.findall(r"<REPLY-\w+-\d+>", _field(prompt, "debate"))
        return {"summary": f"<SUMMARY-{turn}>{''.join(tags) if len(tags) == 1 else ''}"}

    lm = scripted_lm(
        {
            "judge": lambda r, t, p: {"label": "True", "p_1": 0.6, "p_2": 0.4},
            "summarizer": summarizer,
            "debater": debater,
            "assistant": assistant,
        }
    )
    out = DebateFeedback(BINARY, lm=lm, n_rounds=2, variant="assistant", reliability="llm")(case="CASE-TEXT")
    judges, summaries = _prompts(lm, "judge"), _prompts(lm, "summarizer")
    debaters, assistants = _prompts(lm, "debater"), _prompts(lm, "assistant")
    # O_0 = LM(x): the case alone.
    assert "CASE-TEXT" in judges[0] and "<" not in judges[0]
    # Table 4 step 3: one summary per debater's statement (its opinion and reply), and the assistant
    # scores that summary with the stance it states, not the raw comment.
    statements = [p for p in summaries if len(re.findall(r"<REPLY-", p)) == 1]
    assert len(statements) == 4 and all(len(re.findall(r"<OPINION-", p)) == 1 for p in statements)
    assert len(assistants) == 4 and all(re.search(r"<SUMMARY-\d+><REPLY-", p) for p in assistants)
    assert all("<OPINION-" not in _field(p, "comment") for p in assistants)
    # The round passes the gate (0.9 >= 0.5): every comment, with its reliability, reaches the summary.
    rounds = [p for p in summaries if len(re.findall(r"<REPLY-", p)) == 2]
    assert len(rounds) == 2 and out.passed == [[1, 2], [1, 2]] and out.gates == [True, True]
    for p in rounds:
        assert re.search(r"\(reliability 0\.20\), stance True", p) and re.search(r"\(reliability 0\.90\)", p)
    # LM(x, sum): the case, the summary, every reliability and the initial prediction; not the raw debate.
    for p in judges[1:]:
        assert "CASE-TEXT" in p and "initial prediction" in p
        assert re.search(r"<SUMMARY-\d+>", _field(p, "debate_summary"))
        assert "Expert 1 (perspective: True): 0.20" in p and "Expert 2 (perspective: False): 0.90" in p
        assert "<REPLY-" not in p and "<OPINION-" not in p
    # Debaters: opinions from the case alone; replies see their own opinion and the others'.
    for p in debaters:
        if _field(p, "stage") == "opinion":
            assert "<" not in p
        else:
            side = _field(p, "perspective")
            assert f"<OPINION-{side}" in _field(p, "own_opinion") and "<OPINION-" in _field(p, "other_opinions")
            assert "<REPLY-" not in p and "<SUMMARY-" not in p


# -- Khan et al. debate ----------------------------------------------------------------------------


def test_khan_debate_information_flow() -> None:
    def debater(role: str, turn: int, prompt: str) -> dict:
        return {"argument": f"<ARG-{_field(prompt, 'answer')}-{turn}>"}

    lm = scripted_lm({"debater": debater, "judge": {"decision": "True", "reason": "r"}})
    KhanDebate(BINARY, lm=lm, n_rounds=3)(case="CASE-TEXT")
    debaters = _prompts(lm, "debater")
    rounds = [debaters[i : i + 2] for i in range(0, 6, 2)]
    # Round 1: the case and the assigned answers only; both speak without seeing each other.
    assert all("<ARG-" not in p for p in rounds[0])
    # Round r: every argument of rounds 1..r-1 from both sides, nothing of round r.
    for r, pair in enumerate(rounds[1:], 2):
        for p in pair:
            seen = re.findall(r"<ARG-(\w+)-\d+>", _field(p, "debate_so_far"))
            assert sorted(seen) == sorted(["True", "False"] * (r - 1))
    (judge,) = _prompts(lm, "judge")
    assert len(re.findall(r"<ARG-\w+-\d+>", _field(judge, "debate"))) == 6  # the whole debate
