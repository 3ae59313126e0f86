"""The papers' analyses on constructed results, and the K-hearing ambiguity split on a fake model."""

from __future__ import annotations

import time

import pytest

from courtroom.analysis.papers import (
    ambiguity,
    ambiguity_split,
    analyze,
    clerk_hearing,
    d_rate,
    debate_corrections,
    judge_agreement,
    ph_transitions,
    run_hearings,
)
from courtroom.eval.harness import ExampleResult
from courtroom.models.lms import RoleLMs
from courtroom.programs import build_program
from courtroom.testing import scripted_lm


def row(i: str, gold: str, pred: str | None, **fields: object) -> dict:
    return {"id": i, "input": f"case {i}", "gold": gold, "prediction": pred, "fields": fields}


def test_d_rate_and_both_ambiguity_rules() -> None:
    assert d_rate(["A"] * 5) == 1.0
    assert d_rate(["A", "A", "A", "B", "B"]) == pytest.approx(0.2)
    assert d_rate(["A", "A", "A", "A", "B"]) == pytest.approx(0.6)
    assert d_rate(["A", "A", "B", "C", None]) == pytest.approx(0.25)  # K = the 4 samples heard
    assert d_rate([None, None]) is None
    table = ambiguity(
        {
            "x": ["A"] * 5,
            "y": ["A", "A", "A", "A", "B"],
            "z": ["A", "A", "A", "B", "B"],
            "f": ["A", "A", None, "A", "A"],
            "u": [None] * 5,
        },
        theta=0.5,
    )
    flags = table.set_index("id")[["ambiguous", "changed", "failed"]].to_dict("index")
    assert flags == {
        "x": {"ambiguous": False, "changed": False, "failed": 0},
        "y": {"ambiguous": False, "changed": True, "failed": 0},
        "z": {"ambiguous": True, "changed": True, "failed": 0},
        "f": {"ambiguous": False, "changed": False, "failed": 1},  # a failed sample is not a change
        "u": {"ambiguous": None, "changed": None, "failed": 5},  # never heard: in neither part
    }


def test_ambiguity_split_accuracy_per_part() -> None:
    results = [row("x", "A", "A"), row("y", "A", "B"), row("z", "B", "B"), row("w", "B", None)]
    votes = {"x": ["A"] * 5, "y": ["A", "A", "A", "A", "B"], "z": ["A", "A", "B", "B", "B"], "w": ["B"] * 5}
    split = ambiguity_split(results, votes).set_index(["rule", "part"])
    assert split.loc[("D_rate <= 0.5", "normal"), "n"] == 3
    assert split.loc[("D_rate <= 0.5", "normal"), "accuracy"] == pytest.approx(1 / 3)  # the failure is wrong
    assert split.loc[("D_rate <= 0.5", "ambiguous"), "accuracy"] == 1.0
    assert split.loc[("top label changed", "ambiguous"), "n"] == 2
    assert split.loc[("top label changed", "ambiguous"), "accuracy"] == 0.5
    assert split.loc[("top label changed", "normal"), "share"] == 0.5


def test_judge_agreement_parallel_and_sequential() -> None:
    results = [
        row("a", "A", "A", votes=["A", "A", "A"]),
        row("b", "A", "B", votes=["B", "A", "B"]),
        row("c", "B", "B", votes=["B", "B", "B"]),
        row("d", "B", None),
    ]
    par = judge_agreement(results, "parallel")
    assert par["n"] == 3 and par["unanimous"] == pytest.approx(2 / 3)
    assert par["pairwise"] == pytest.approx((1 + 1 / 3 + 1) / 3)
    assert par["with_verdict"] == [1.0, pytest.approx(2 / 3), 1.0]
    seq = judge_agreement(results, "sequential")
    assert seq["by_judge"] == [pytest.approx(2 / 3), pytest.approx(2 / 3)]
    assert seq["consecutive"] == pytest.approx(4 / 6)


def test_ph_transitions_and_debate_corrections() -> None:
    results = [
        row("a", "A", "A", ph_label="B"),
        row("b", "A", "B", ph_label="A"),
        row("c", "A", "A", ph_label="A"),
        row("d", "B", "A", ph_label="A"),
        row("e", "B", None),
    ]
    t = ph_transitions(results)
    assert t == {
        "wrong_to_correct": 1,
        "correct_to_wrong": 1,
        "kept_correct": 1,
        "kept_wrong": 1,
        "n": 4,
        "skipped": 1,
    }
    objs = [
        ExampleResult(
            r["id"],
            r["input"],
            r["gold"],
            r["prediction"],
            fields={"initial_label": r["fields"].get("ph_label")},
        )
        for r in results
    ]
    c = debate_corrections(objs)
    assert (c["correction"], c["degradation"], c["kept_right"], c["kept_wrong"]) == (1, 1, 1, 1)
    assert set(analyze(results, {"judge_mode": "parallel"})) == {"ph_transitions"}


def test_hearings_run_k_times_on_the_clerk() -> None:
    def clerk(role: str, turn: int, prompt: str) -> dict:
        # Case 1 is clear-cut; case 2 flips every other sample.
        if "case two" in prompt:
            return {"most_likely": "Yes" if turn % 2 else "No"}
        return {"most_likely": "Yes"}

    lm = scripted_lm({"clerk": clerk}, model=f"fake/clerk-{time.time_ns()}")
    program = build_program("courtroom-llm", ["Yes", "No"], knobs={"k_precedents": 0}, lms=RoleLMs({"default": lm}))
    votes = run_hearings(clerk_hearing(program), {"one": "case one", "two": "case two"}, k=5, concurrency=1)
    assert votes["one"] == ["Yes"] * 5
    assert sorted(votes["two"]) in (["No", "No", "No", "Yes", "Yes"], ["No", "No", "Yes", "Yes", "Yes"])
    assert lm.engine_impl.counts["clerk"] == 10
    table = ambiguity(votes).set_index("id")
    assert not table.loc["one", "ambiguous"] and table.loc["two", "ambiguous"]
    with pytest.raises(ValueError, match="K >= 2"):
        run_hearings(clerk_hearing(program), {"one": "x"}, k=1)


def test_hearings_respect_the_request_bound() -> None:
    from courtroom.testing import FakeServer

    with FakeServer(latency=0.05) as server:
        lm = server.lm(f"openai/hear-{time.time_ns()}", cache=False)
        program = build_program("courtroom-llm", ["Yes", "No"], knobs={"k_precedents": 0}, lms=RoleLMs({"default": lm}))
        votes = run_hearings(
            clerk_hearing(program), {f"c{i}": f"case number {i}" for i in range(4)}, k=4, concurrency=4
        )
        assert server.counts["requests"] == 16 and all(len(v) == 4 for v in votes.values())
        assert 1 < server.max_in_flight <= 4
