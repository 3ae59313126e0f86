"""The learnable oracle: demos and an instruction phrase help the role whose own prompt holds them, no other."""

from __future__ import annotations

from typing import Any

import dspy
import pytest

from courtroom.data.tasks import load_task
from courtroom.eval.harness import evaluate
from courtroom.programs import build_program
from courtroom.testing import FakeServer, learnable_lm, proposer_lm

LABELS = ["True", "False"]
PHRASE = "weigh both sides"


@pytest.fixture(scope="module")
def cases() -> tuple[list[dspy.Example], dict[str, str]]:
    examples = load_task("boolean_expressions", split="test", limit=12).examples
    return examples, {e.case: e.label for e in examples}


def accuracy(program: Any, examples: list[dspy.Example]) -> float:
    results = evaluate(program, examples, concurrency=2)
    return sum(r.prediction == r.gold for r in results) / len(results)


def jot(lm: Any) -> Any:
    return build_program("jot", LABELS, None, knobs={"n_loops": 1}, lms=_lms(lm, ("lawyer", "prosecutor", "judge")))


def _lms(lm: Any, roles: tuple[str, ...]) -> Any:
    from courtroom.models.lms import resolve_roles

    return resolve_roles(lm, None, valid_roles=roles)


def teach(predictor: Any, demo: dict[str, str], instruction: str | None = None) -> None:
    predictor.demos = [dspy.Example(**demo)]
    if instruction is not None:
        predictor.signature = predictor.signature.with_instructions(instruction)


def test_demos_and_phrase_help_only_the_role_that_holds_them(cases: Any) -> None:
    examples, gold = cases
    # A judge that is always wrong unless its own prompt holds demos or the phrase: exact figures.
    lm = learnable_lm(gold, LABELS, accuracy=0.0, with_demos={"judge": 1.0}, phrase={"judge": (PHRASE, 1.0)})
    program = jot(lm)
    assert accuracy(program, examples) == 0.0

    preds = dict(program.named_predictors())
    argued = {"case": examples[0].case, "argument": "It evaluates to True."}
    teach(preds["lawyer"], argued, f"Always {PHRASE} before you argue.")
    teach(preds["prosecutor"], argued, f"Please {PHRASE.upper()}.")
    assert accuracy(program, examples) == 0.0, "demos and the phrase on the advocates must not help the judge"
    assert {(r, d > 0, p) for r, d, p in lm.engine_impl.calls if r == "judge"} == {("judge", False, False)}
    assert any(d > 0 for r, d, _ in lm.engine_impl.calls if r == "lawyer"), "the lawyer's prompt held its demo"

    lm.engine_impl.clear()
    teach(preds["judge"], {"case": examples[1].case, "decision": examples[1].label})
    assert accuracy(program, examples) == 1.0, "the judge's own demos help it"
    assert all(d == 1 and not p for r, d, p in lm.engine_impl.calls if r == "judge")

    preds["judge"].demos = []
    preds["judge"].signature = preds["judge"].signature.with_instructions("Weigh Both Sides, then rule.")
    assert accuracy(program, examples) == 1.0, "the phrase in the judge's own instructions (any case) helps it"


def test_no_signal_mode_ignores_what_the_prompt_holds(cases: Any) -> None:
    examples, gold = cases
    plain = build_program("zero-shot", LABELS, None, lms=_lms(learnable_lm(gold, LABELS, 0.5, seed=3), ("classifier",)))
    lm = learnable_lm(gold, LABELS, 0.5, seed=3)
    taught = build_program("zero-shot", LABELS, None, lms=_lms(lm, ("classifier",)))
    teach(dict(taught.named_predictors())["classifier"], {"case": examples[0].case, "answer": examples[0].label},
          f"{PHRASE}, carefully.")  # fmt: skip
    # Nothing learnable: the same draws, so the same answers, whatever the prompt holds.
    before = [r.prediction for r in evaluate(plain, examples, concurrency=1)]
    after = [r.prediction for r in evaluate(taught, examples, concurrency=1)]
    assert before == after and 0 < sum(p == e.label for p, e in zip(after, examples, strict=True)) < len(examples)
    assert all(d == 1 for _, d, _ in lm.engine_impl.calls)


def test_demos_may_hurt_and_min_demos_counts(cases: Any) -> None:
    examples, gold = cases
    lm = learnable_lm(gold, LABELS, 1.0, with_demos={"classifier": 0.0}, min_demos=2)
    program = build_program("zero-shot", LABELS, None, lms=_lms(lm, ("classifier",)))
    demo = {"case": examples[0].case, "answer": examples[0].label}
    teach(dict(program.named_predictors())["classifier"], demo)
    assert accuracy(program, examples) == 1.0, "one demo is fewer than min_demos"
    dict(program.named_predictors())["classifier"].demos *= 2
    assert accuracy(program, examples) == 0.0


def test_bad_probabilities_are_refused(cases: Any) -> None:
    _, gold = cases
    with pytest.raises(ValueError, match=r"with_demos\['judge'\]"):
        learnable_lm(gold, LABELS, with_demos={"judge": 1.5})
    with pytest.raises(ValueError, match="min_demos"):
        learnable_lm(gold, LABELS, min_demos=0)


def test_the_fake_server_answers_as_the_learnable_oracle(cases: Any) -> None:
    examples, gold = cases
    engine = learnable_lm(gold, LABELS, 0.0, with_demos={"classifier": 1.0}).engine_impl
    with FakeServer(engine=engine) as server:
        program = build_program("zero-shot", LABELS, None, lms=_lms(server.lm("openai/classifier"), ("classifier",)))
        assert accuracy(program, examples[:4]) == 0.0
        teach(dict(program.named_predictors())["classifier"], {"case": examples[5].case, "answer": examples[5].label})
        assert accuracy(program, examples[:4]) == 1.0
    assert engine.counts["classifier"] == 8, "the role is the model name as sent"


def test_proposer_proposes_in_turn_and_only_for_instructions() -> None:
    lm = proposer_lm(["first", "second"])

    class Propose(dspy.Signature):
        basic_instruction: str = dspy.InputField()
        proposed_instruction: str = dspy.OutputField()

    class Summarize(dspy.Signature):
        observations: str = dspy.InputField()
        summary: str = dspy.OutputField()

    from courtroom.models._adapter import ADAPTER

    with dspy.context(lm=lm, adapter=ADAPTER):
        assert dspy.Predict(Propose)(basic_instruction="x").proposed_instruction == "first"
        assert dspy.Predict(Summarize)(observations="y").summary == lm.engine_impl.NOTE
        assert dspy.Predict(Propose)(basic_instruction="z").proposed_instruction == "second"
    assert (lm.engine_impl.calls, lm.engine_impl.proposals) == (3, 2)
