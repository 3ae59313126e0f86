"""Courtroom-LLM: judge panel statistics, sequential chain, PH rules, length limit, assignment,
precedents, role routing and bad configuration."""

from __future__ import annotations

import math

import dspy
import pytest

from courtroom.errors import ConfigError
from courtroom.programs import CourtroomLLM
from courtroom.programs._precedents import PrecedentIndex
from courtroom.testing import oracle_lm, scripted_lm

BINARY = ["True", "False"]


def _majority_of_5(p: float) -> float:
    return sum(math.comb(5, k) * p**k * (1 - p) ** (5 - k) for k in range(3, 6))


def test_parallel_majority_of_five_judges_matches_binomial() -> None:
    # 400 distinct cases (fixed width, so no case text contains another); the oracle answers by gold
    # whatever the arguments say, so the verdict depends only on the 5 independent judges.
    n, p = 400, 0.7
    gold = {f"case {i:04d}: is the statement true?": BINARY[i % 2] for i in range(n)}
    lm = oracle_lm(gold, BINARY, accuracy={"judge": p, "default": 0.6})
    program = CourtroomLLM(BINARY, lm=lm, n_judges=5, k_precedents=0)
    correct = sum(program(case=case).label == label for case, label in gold.items())
    expected = _majority_of_5(p)  # 0.83692
    sd = math.sqrt(expected * (1 - expected) / n)  # 0.018
    assert abs(correct / n - expected) < 3 * sd, (correct / n, expected)


def test_sequential_last_judge_wins_and_later_judges_see_earlier_decisions() -> None:
    judge = scripted_lm(
        {
            "judge": [
                {"decision": "True", "reason": "r-one"},
                {"decision": "False", "reason": "r-two"},
                {"decision": "True", "reason": "r-three"},
            ]
        }
    )
    rest = scripted_lm({"clerk": {"most_likely": "False", "ranking": ["False", "True"]}})
    program = CourtroomLLM(BINARY, lm=rest, roles={"judge": judge}, n_judges=3, judge_mode="sequential", k_precedents=0)
    out = program(case="a case")
    assert out.votes == ["True", "False", "True"]
    assert out.label == "True"  # the last judge, not the majority... which agrees here; check a split too
    prompts = [text for role, text in judge.engine_impl.prompts]
    assert "Judge 1 decided" not in prompts[0]
    assert "Judge 1 decided True: r-one" in prompts[1]
    assert "Judge 1 decided True: r-one" in prompts[2] and "Judge 2 decided False: r-two" in prompts[2]

    judge2 = scripted_lm({"judge": [{"decision": "True"}, {"decision": "True"}, {"decision": "False"}]})
    program = CourtroomLLM(
        BINARY, lm=rest, roles={"judge": judge2}, n_judges=3, judge_mode="sequential", k_precedents=0
    )
    assert program(case="a case").label == "False"


def test_parallel_tie_goes_to_a1_then_label_order() -> None:
    lm = scripted_lm(
        {
            "clerk": {"most_likely": "False", "ranking": ["False", "True"]},
            "judge": [{"decision": "True"}, {"decision": "False"}],
        }
    )
    out = CourtroomLLM(BINARY, lm=lm, n_judges=2, k_precedents=0)(case="c")
    assert sorted(out.votes) == ["False", "True"] and out.label == "False"  # A1

    labels = ["a", "b", "c"]
    lm = scripted_lm(
        {"clerk": {"most_likely": "b", "ranking": ["b", "c", "a"]}, "judge": [{"decision": "c"}, {"decision": "b"}]}
    )
    out = CourtroomLLM(labels, lm=lm, n_judges=2, k_precedents=0)(case="c")
    assert out.label == "b"  # A1


def test_runner_up_is_the_highest_ranked_label_other_than_a1() -> None:
    lm = scripted_lm({"clerk": {"most_likely": "True", "ranking": ["True"]}})
    out = CourtroomLLM(BINARY, lm=lm, n_judges=1, k_precedents=0)(case="c")
    assert (out.ph_label, out.ph_runner_up) == ("True", "False")

    labels = ["a", "b", "c", "d"]
    lm = scripted_lm({"clerk": {"most_likely": "b", "ranking": ["b", "b", "d", "a"]}})
    out = CourtroomLLM(labels, lm=lm, n_judges=1, k_precedents=0)(case="c")
    assert (out.ph_label, out.ph_runner_up) == ("b", "d")  # not "c", the next label in list order
    assert "note" not in out.transcript[0].extra

    lm = scripted_lm({"clerk": {"most_likely": "c", "ranking": ["c"]}})
    out = CourtroomLLM(labels, lm=lm, n_judges=1, k_precedents=0)(case="c")
    assert (out.ph_label, out.ph_runner_up) == ("c", "d")  # last resort: the ranking names no other label
    assert "next label" in out.transcript[0].extra["note"]


def test_transcript_structure_and_argument_limit() -> None:
    lm = scripted_lm(
        {
            "clerk": {"most_likely": "True", "ranking": ["True", "False"]},
            "prosecutor": {"argument": "First sentence. Second one! Third?"},
            "attorney": {"argument": "Only one."},
        }
    )
    out = CourtroomLLM(BINARY, lm=lm, n_judges=3, k_precedents=0, assignment="fixed")(case="c")
    assert [t.role for t in out.transcript] == ["clerk", "prosecutor", "attorney", "judge", "judge", "judge"]
    prosecutor, attorney = out.transcript[1], out.transcript[2]
    assert prosecutor.text == "First sentence." and prosecutor.extra["truncated"] is True
    assert attorney.text == "Only one." and "truncated" not in attorney.extra
    assert out.assignment == {"prosecutor": "True", "attorney": "False"}
    assert [t.extra["judge"] for t in out.transcript[3:]] == [1, 2, 3]

    out = CourtroomLLM(BINARY, lm=lm, n_judges=1, k_precedents=0, max_argument_sentences=2)(case="c")
    assert out.transcript[1].text == "First sentence. Second one!"


def test_random_assignment_is_seeded_per_case() -> None:
    lm = scripted_lm({"clerk": {"most_likely": "True", "ranking": ["True", "False"]}})
    program = CourtroomLLM(BINARY, lm=lm, n_judges=1, k_precedents=0, assignment="random", seed=7)
    first = [program(case=f"case {i}").assignment["prosecutor"] for i in range(20)]
    again = [program(case=f"case {i}").assignment["prosecutor"] for i in range(20)]
    assert first == again and set(first) == {"True", "False"}


def test_each_role_runs_on_its_own_model() -> None:
    lms = {role: scripted_lm({}, model=f"fake/{role}") for role in CourtroomLLM.roles}
    program = CourtroomLLM(BINARY, lm=scripted_lm({}), roles=lms, n_judges=2, k_precedents=1)
    program.prepare(
        [
            dspy.Example(case="a precedent about dogs", label="True", id=1),
            dspy.Example(case="another about cats", label="False", id=2),
        ]
    )
    program(case="a case about dogs")
    for role, lm in lms.items():
        assert set(lm.engine_impl.turns) == {role}, role
    assert lms["judge"].engine_impl.counts["judge"] == 2


def test_precedents_are_retrieved_by_similarity_and_reasons_cached() -> None:
    train = [
        dspy.Example(case="the cat sat on the mat", label="True", id="a"),
        dspy.Example(case="stock markets fell sharply today", label="False", id="b"),
        dspy.Example(case="a cat and a dog on a mat", label="True", id="c"),
    ]
    lm = scripted_lm({"reasoner": lambda role, turn, prompt: {"reason": f"reason {turn}"}})
    program = CourtroomLLM(BINARY, lm=lm, n_judges=1, k_precedents=2)
    program.prepare(train)
    out = program(case="my cat likes the mat")
    # k=2 per candidate: A1 (True) has two training cases, A2 (False) one.
    assert [p["key"] for p in out.precedents] == ["id:a", "id:c", "id:b"]
    assert [t.role for t in out.transcript].count("reasoner") == 3
    judge_prompt = next(text for role, text in lm.engine_impl.prompts if role == "judge")
    assert "the cat sat on the mat" in judge_prompt and "Correct label: True" in judge_prompt
    program(case="a cat on a mat again")
    assert lm.engine_impl.counts["reasoner"] == 3  # generated once per training case

    restored = PrecedentIndex.from_dict(program.precedent_index.to_dict())
    assert restored.reasons == program.precedent_index.reasons
    assert [p.key for p in restored.search("my cat likes the mat", 2)] == ["id:a", "id:c"]
    assert restored.search("my cat likes the mat", 1)[0].reason


@pytest.mark.parametrize(
    "kwargs", [{"n_judges": 0}, {"judge_mode": "round-robin"}, {"assignment": "coin"}, {"k_precedents": -1}]
)
def test_bad_configuration(kwargs: dict) -> None:
    with pytest.raises(ConfigError):
        CourtroomLLM(BINARY, lm=scripted_lm({}), **kwargs)


def test_k_larger_than_training_set_and_missing_prepare() -> None:
    program = CourtroomLLM(BINARY, lm=scripted_lm({}), k_precedents=3)
    with pytest.raises(ConfigError, match="k_precedents=3"):
        program.prepare([dspy.Example(case="x", label="True"), dspy.Example(case="y", label="False")])
    with pytest.raises(ConfigError, match="prepare"):
        program(case="c")


def test_fewer_than_two_labels() -> None:
    with pytest.raises(ConfigError):
        CourtroomLLM(["only"], lm=scripted_lm({}))


def test_sentence_limit_does_not_cut_at_abbreviations_or_numbers() -> None:
    from courtroom.programs._common import limit_sentences

    text = "Courts follow precedent, e.g. the U.S. Supreme Court did in 1990. The second sentence."
    assert limit_sentences(text, 1) == ("Courts follow precedent, e.g. the U.S. Supreme Court did in 1990.", True)
    text = "Dr. Smith paid $3.50 at 5 p.m. on Jan. 5 to Mr. Jones. Then he left."
    assert limit_sentences(text, 1) == ("Dr. Smith paid $3.50 at 5 p.m. on Jan. 5 to Mr. Jones.", True)
    assert limit_sentences("One. Two! Three?", 2) == ("One. Two!", True)
    assert limit_sentences("Only one sentence.", 1) == ("Only one sentence.", False)
    assert limit_sentences("No limit. At all.", 0) == ("No limit. At all.", False)


def test_sentence_limit_is_thread_safe() -> None:
    # The prosecutor and the attorney cut their arguments in parallel threads. pysbd's Segmenter keeps
    # per-call state on the instance (the text being split), so one segmenter shared by threads could
    # match one text's sentences against another's text and leave an argument uncut.
    from concurrent.futures import ThreadPoolExecutor

    from courtroom.programs._common import limit_sentences

    texts = [
        " ".join(f"Witness {i} saw event {j} on day {i + j}, e.g. at 5 p.m." for j in range(3 + i % 6))
        for i in range(48)
    ]
    calls = [(texts[k % len(texts)], 1 + k % 3) for k in range(400)]
    expected = [limit_sentences(text, n) for text, n in calls]  # single-threaded
    assert expected[0] == ("Witness 0 saw event 0 on day 0, e.g. at 5 p.m.", True)
    assert all(cut for _, cut in expected)
    with ThreadPoolExecutor(max_workers=16) as pool:
        got = list(pool.map(lambda call: limit_sentences(*call), calls))
    assert got == expected
