"""Baselines: structure, votes, demos, debate rounds, reflexion retries and routing, on scripted fakes."""

from __future__ import annotations

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.programs import (
    ChainOfThought,
    FewShot,
    KhanDebate,
    ParallelVote,
    Reflexion,
    SelfConsistency,
    ZeroShot,
)
from courtroom.testing import oracle_lm, scripted_lm

BINARY = ["True", "False"]
SIX = ["sadness", "joy", "love", "anger", "fear", "surprise"]


def test_zero_shot_and_cot() -> None:
    lm = scripted_lm({"classifier": {"answer": "joy", "reasoning": "because"}})
    out = ZeroShot(SIX, lm=lm)(case="c")
    assert out.label == "joy" and [t.role for t in out.transcript] == ["classifier"]
    out = ChainOfThought(SIX, lm=lm, k_shots=0)(case="c")
    assert out.label == "joy" and out.transcript[0].text == "because"
    with pytest.raises(ConfigError, match="prepare"):
        ChainOfThought(SIX, lm=lm)(case="c")


def test_few_shot_cot_and_sc_share_demos_generated_once_by_zero_shot_cot() -> None:
    train = [dspy.Example(case=f"train case {i}", label=BINARY[i % 2], id=i) for i in range(10)]
    lm = scripted_lm({"classifier": lambda r, t, p: {"reasoning": f"REASONED-{p.split()[-1]}", "answer": "True"}})
    lm.cache = True  # the real cache: each demo is generated once, then shared
    few, cot = FewShot(BINARY, lm=lm, seed=3), ChainOfThought(BINARY, lm=lm, seed=3)
    sc = SelfConsistency(BINARY, lm=lm, seed=3)
    for program in (few, cot, sc):
        program.prepare(train)
    assert lm.engine_impl.counts["classifier"] == 3  # three demos, generated once for all three programs
    cases = [d.case for d in few.classifier.demos]
    assert cases == [d.case for d in cot.classifier.demos] == [d.case for d in sc.classifier.demos]
    assert all(d.reasoning.startswith("REASONED") for d in cot.classifier.demos)
    assert all("reasoning" not in d for d in few.classifier.demos)
    labelled = FewShot(BINARY, lm=lm, seed=3, demo_source="labelled")
    labelled.prepare(train)
    gold = {ex.case: ex.label for ex in train}
    assert [(d.case, d.answer) for d in labelled.classifier.demos] == [(c, gold[c]) for c in cases]
    assert lm.engine_impl.counts["classifier"] == 3  # labelled demos call nothing
    schema = "\n".join(m["content"] for m in lm.history[0]["messages"])
    assert "short" not in schema


def test_few_shot_demos_are_seeded_and_shown() -> None:
    train = [dspy.Example(case=f"train case {i}", label=BINARY[i % 2], id=i) for i in range(10)]
    lm = scripted_lm({})
    a, b = (FewShot(BINARY, lm=lm, k_shots=3, seed=1, demo_source="labelled") for _ in range(2))
    a.prepare(train)
    b.prepare(train)
    assert [d.case for d in a.classifier.demos] == [d.case for d in b.classifier.demos]
    assert len(a.classifier.demos) == 3
    a(case="the test case")
    demo_case = a.classifier.demos[0].case
    assert any(demo_case in m["content"] for m in lm.history[-1]["messages"])
    with pytest.raises(ConfigError, match="k_shots"):
        FewShot(BINARY, lm=lm, k_shots=20).prepare(train)
    with pytest.raises(ConfigError, match="prepare"):
        FewShot(BINARY, lm=lm, k_shots=2)(case="c")


def test_self_consistency_and_parallel_vote_take_the_majority() -> None:
    lm = scripted_lm({"classifier": [{"answer": "anger"}, {"answer": "fear"}, {"answer": "fear"}]})
    out = SelfConsistency(SIX, lm=lm, k_samples=3, k_shots=0)(case="c")
    assert sorted(out.votes) == ["anger", "fear", "fear"] and out.label == "fear"
    lm = scripted_lm(
        {
            "classifier": [
                {"answer": "joy"},
                {"answer": "love"},
                {"answer": "love"},
                {"answer": "joy"},
                {"answer": "love"},
            ]
        }
    )
    out = ParallelVote(SIX, lm=lm, n_models=5)(case="c")
    assert out.label == "love" and len(out.transcript) == 5
    train = [dspy.Example(case=f"train case {i}", label=SIX[i % 6], id=i) for i in range(10)]
    program = ParallelVote(SIX, lm=lm, n_models=2, k_shots=2)
    program.prepare(train)
    program(case="the test case")
    demo = program.classifier.demos[0].case
    assert all(demo in "".join(m["content"] for m in h["messages"]) for h in lm.history[-2:])


def test_parallel_vote_accuracy_on_the_oracle() -> None:
    # Majority of 3 at p=0.8 on a binary task: 0.896; sd over 300 cases is 0.018, so 3 sd = 0.053.
    gold = {f"case {i:04d}": BINARY[i % 2] for i in range(300)}
    program = ParallelVote(BINARY, lm=oracle_lm(gold, BINARY, accuracy=0.8), n_models=3)
    acc = sum(program(case=c).label == g for c, g in gold.items()) / len(gold)
    assert abs(acc - 0.896) < 0.053


def test_khan_debate_binary_and_multiclass() -> None:
    lm = scripted_lm({"judge": {"decision": "False"}})
    assert KhanDebate.knobs()["n_rounds"] == 3  # the JoT paper's setting
    out = KhanDebate(BINARY, lm=lm, n_rounds=2)(case="c")
    assert [t.role for t in out.transcript] == ["debater-1", "debater-2"] * 2 + ["judge"]
    assert out.sides == BINARY and out.label == "False"
    round2 = [p for r, p in lm.engine_impl.prompts if r == "debater"][2:]
    assert all("Round 1, debater 1" in p and "Round 1, debater 2" in p for p in round2)

    lm = scripted_lm({"classifier": {"first": "fear", "second": "fear"}, "judge": {"decision": "joy"}})
    out = KhanDebate(SIX, lm=lm, n_rounds=1)(case="c")
    assert out.sides == ["fear", "surprise"]  # a repeated second choice moves to the next label
    assert [t.role for t in out.transcript] == ["classifier", "debater-1", "debater-2", "judge"]
    assert out.label == "joy"  # the judge may pick any label


def test_reflexion_retries_until_the_critic_accepts() -> None:
    lm = scripted_lm(
        {
            "solver": [{"answer": "True"}, {"answer": "False"}, {"answer": "True"}],
            "critic": [{"is_correct": False, "critique": "check the negation"}, {"is_correct": True}],
        }
    )
    out = Reflexion(BINARY, lm=lm, max_retries=3)(case="c")
    assert out.attempts == ["True", "False"] and out.label == "False"
    assert [t.role for t in out.transcript] == ["solver", "critic", "solver", "critic"]
    second = [p for r, p in lm.engine_impl.prompts if r == "solver"][1]
    assert "check the negation" in second

    lm = scripted_lm({"solver": {"answer": "True"}, "critic": {"is_correct": False}})
    out = Reflexion(BINARY, lm=lm, max_retries=1)(case="c")
    assert [t.role for t in out.transcript] == ["solver", "critic", "solver"]  # the last attempt is final


def test_each_role_runs_on_its_own_model() -> None:
    for cls, kwargs in ((KhanDebate, {}), (Reflexion, {"max_retries": 1})):
        lms = {role: scripted_lm({"critic": {"is_correct": False}}, model=f"fake/{role}") for role in cls.roles}
        cls(SIX, lm=scripted_lm({}), roles=lms, **kwargs)(case="c")
        for role, lm in lms.items():
            assert set(lm.engine_impl.turns) == {role}, (cls.name, role)


@pytest.mark.parametrize(
    ("cls", "kwargs"),
    [
        (SelfConsistency, {"k_samples": 0}),
        (ParallelVote, {"n_models": 0}),
        (KhanDebate, {"n_rounds": 0}),
        (Reflexion, {"max_retries": -1}),
        (FewShot, {"k_shots": -1}),
    ],
)
def test_bad_configuration(cls: type, kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        cls(BINARY, lm=scripted_lm({}), **kwargs)


def test_a_demo_whose_answer_fails_gives_way_to_the_next_training_case() -> None:
    from courtroom.programs._common import seeded_rng

    train = [dspy.Example(case=f"train case {i}", label=BINARY[i % 2], id=i) for i in range(10)]
    first = seeded_rng(3, "few-shot").sample(range(10), 3)
    broken = f"train case {first[0]}"

    def answer(role: str, turn: int, prompt: str) -> dict:
        return {"reasoning": "r", "answer": "Maybe" if broken in prompt else "True"}  # not a label: refused

    cot = ChainOfThought(BINARY, lm=scripted_lm({"classifier": answer}), seed=3)
    cot.prepare(train)
    cases = [d.case for d in cot.classifier.demos]
    assert len(cases) == 3 and broken not in cases
    assert cases[:2] == [f"train case {i}" for i in first[1:]]  # the others drawn stay, in order
    nothing = scripted_lm({"classifier": {"reasoning": "r", "answer": "Maybe"}})
    with pytest.raises(ConfigError, match="only 0 of 10 training cases got a usable zero-shot CoT answer"):
        ChainOfThought(BINARY, lm=nothing, seed=3).prepare(train)
