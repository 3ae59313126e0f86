"""Courtroom-LLM's precedents as the judges read them: per candidate, per label or of any label
(``precedent_scope``), reasons of ``reason_sentences`` sentences, each paper preset's choice, and the
candidates listed in the schema's order."""

from __future__ import annotations

import re
from typing import Any

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.optimize.study.spaces import build_space
from courtroom.programs import CourtroomLLM
from courtroom.programs.presets import get_preset
from courtroom.testing import scripted_lm

LABELS = ["sadness", "joy", "love", "anger"]
TRAIN = [
    dspy.Example(case=f"{lab} diary entry number {i}", label=lab, id=f"{lab}{i}") for lab in LABELS for i in range(2)
]
# Nearest training case of any label: a love one (neither candidate).
CASE = "love diary entry under the moon"
REASON = "First reason sentence. Second reason sentence. Third reason sentence."


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n\[\[|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


def _trial(**knobs: Any) -> tuple[Any, list[str], list[str]]:
    """(lm, the judges' prompts, the reasoner's system prompts) of one case: A1 anger, A2 sadness."""
    lm = scripted_lm(
        {
            "clerk": {"most_likely": "anger", "ranking": ["anger", "sadness", "joy", "love"]},
            "reasoner": {"reason": REASON},
            "judge": {"decision": "anger", "reason": "r"},
        }
    )
    program = CourtroomLLM(LABELS, lm=lm, **({"n_judges": 1, "assignment": "fixed"} | knobs))
    program.prepare(TRAIN)
    program(case=CASE)
    judges = [p for r, p in lm.engine_impl.prompts if r == "judge"]
    reasoner = [s for r, s in lm.engine_impl.systems if r == "reasoner"]
    return lm, judges, reasoner


def _precedent_labels(judge_prompt: str) -> list[str]:
    return re.findall(r"Correct label: (\w+)", _field(judge_prompt, "precedents"))


@pytest.mark.parametrize(
    ("scope", "expected"),
    [
        ("candidate", ["anger", "sadness"]),  # A1's, then A2's (final Table 11)
        ("label", LABELS),  # every label, in label order (final Table 9)
        ("global", ["love"]),  # the one nearest of any label (early Algorithm 1)
    ],
)
def test_the_judges_read_the_precedents_of_the_scope(scope: str, expected: list[str]) -> None:
    _, judges, _ = _trial(precedent_scope=scope)
    assert _precedent_labels(judges[0]) == expected
    assert "love diary entry number" in _field(judges[0], "precedents") or scope == "candidate"


@pytest.mark.parametrize(
    ("sentences", "kept", "asked"),
    [(1, 1, "in one sentence"), (2, 2, "in at most 2 sentences"), (0, 3, None)],
)
def test_reasons_are_asked_for_and_cut_to_reason_sentences(sentences: int, kept: int, asked: str | None) -> None:
    _, judges, systems = _trial(reason_sentences=sentences)
    reasons = re.findall(r"Reason: (.*)", _field(judges[0], "precedents"))
    assert len(reasons) == 2 and all(r.count("reason sentence.") == kept for r in reasons)
    if asked:
        assert all(asked in s for s in systems)
    else:  # no limit: nothing in the reasoner's prompt bounds the length
        assert not any("sentence" in s for s in systems)


def test_each_paper_preset_gives_the_judges_its_papers_precedents() -> None:
    early = get_preset("courtroom-llm-early").knobs
    _, judges, _ = _trial(**(early | {"n_judges": 2}))
    assert _precedent_labels(judges[0]) == ["love"]  # Algorithm 1: one argmax over all data
    final = get_preset("courtroom-llm-final").knobs
    _, judges, _ = _trial(**(final | {"n_judges": 2}))
    assert _precedent_labels(judges[0]) == LABELS  # Table 9: one per label
    for preset in (early, final):  # the tables' reasons run to several sentences: no cut
        _, judges, _ = _trial(**(preset | {"n_judges": 1}))
        assert REASON in _field(judges[0], "precedents")


def test_candidates_are_listed_in_label_order_not_a1_first() -> None:
    lm, judges, _ = _trial(precedent_scope="candidate")
    assert _field(judges[0], "candidates") == '"sadness", "anger"'  # A1 is anger
    schema = lm.history[-1]["kwargs"]["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["decision"]["enum"] == ["sadness", "anger"]


def test_the_knobs_are_checked_and_searched() -> None:
    with pytest.raises(ConfigError, match="candidate, label, global"):
        CourtroomLLM(LABELS, lm=scripted_lm({}), precedent_scope="all")
    with pytest.raises(ConfigError, match="reason_sentences"):
        CourtroomLLM(LABELS, lm=scripted_lm({}), reason_sentences=-1)
    space = {p.name: p for p in build_space("courtroom-llm")}
    assert set(space["precedent_scope"].choices) == {"candidate", "label", "global"}
    assert set(space["reason_sentences"].choices) == {0, 1, 2, 3}
    for knob in ("precedent_scope", "reason_sentences"):  # nothing to choose without precedents
        assert space[knob].only_if == ("k_precedents", (1, 2, 3))
