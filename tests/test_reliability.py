"""The Debate-Feedback assistant learns "this case AND this stance", and the round gate hears both sides.

Generated cases whose gold label is decided by one fact among distractors; fake debaters state a
stance drawn at random. A learner that cannot represent the case-by-stance interaction (the old
single TF-IDF + logistic regression over case + reply) ranks right and wrong stances at chance here.
"""

from __future__ import annotations

import hashlib
import itertools
import random
import re
from pathlib import Path
from typing import Any

import dspy
import pytest

from courtroom.programs import DebateFeedback
from courtroom.programs._reliability import ReliabilityModel, separation, train_assistant
from courtroom.testing import scripted_lm

LEGAL = ["Plaintiff wins", "Defendant wins"]
DECIDING = ("the contract was signed by both parties", "the contract was never executed")
DISTRACTORS = [
    ("the goods arrived late", "the goods arrived on schedule"),
    ("a witness saw the accident", "nobody witnessed the accident"),
    ("the tenant paid the deposit", "the deposit stayed outstanding"),
    ("the company kept written records", "the company lost its ledgers"),
]
PAPER = {"sides": "none", "memory": True, "assistant_input": "summary", "prob_method": "votes", "k_samples": 1}


def fact_cases(n: int, start: int = 0, *, seed: int = 0, majority: float = 0.5, decided: bool = True) -> list[Any]:
    """Cases whose gold is Plaintiff wins iff the contract was signed (with ``majority`` probability).

    ``decided=False`` leaves the deciding fact out of the text: nothing in the case tells the sides apart.
    """
    rng = random.Random(f"{seed}-{start}")
    out = []
    for i in range(start, start + n):
        signed = rng.random() < majority
        facts = [pair[rng.randrange(2)] for pair in DISTRACTORS]
        if decided:
            facts.append(DECIDING[0 if signed else 1])
        rng.shuffle(facts)
        label = LEGAL[0] if signed else LEGAL[1]
        case = f"Case {i}: " + "; ".join(facts) + "."
        out.append(dspy.Example(case=case, label=label, id=str(i)).with_inputs("case"))
    return out


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


def random_debater(role: str, turn: int, prompt: str) -> dict:
    """States a stance drawn at random, quoting a random fact of the case."""
    rng = random.Random(hashlib.sha256(f"{turn}|{prompt}".encode()).digest())
    facts = _field(prompt, "case").split(": ", 1)[1].rstrip(".").split("; ")
    stance = rng.choice(LEGAL)
    return {"opinion": f"The key point is that {rng.choice(facts)}. I hold that {stance}.", "stance": stance}


def sided_debater(role: str, turn: int, prompt: str) -> dict:
    """States the side it was given."""
    side = _field(prompt, "perspective")
    return {"opinion": f"I argue {side}.", "stance": side}


def echo_summarizer(role: str, turn: int, prompt: str) -> dict:
    return {"summary": "Summary: " + " ".join(_field(prompt, "debate").split())}


def _pairs(program: DebateFeedback, tests: list[Any]) -> tuple[int, int]:
    """(cases where the right stance scored above the wrong one, cases with both stances)."""
    wins = pairs = 0
    for ex in tests:
        out = program(case=ex.case)
        stances, rel = out.stances[0], out.reliabilities[0]
        if len(set(stances)) < 2:
            continue
        right = max(r for s, r in zip(stances, rel, strict=True) if s == ex.label)
        wrong = max(r for s, r in zip(stances, rel, strict=True) if s != ex.label)
        pairs += 1
        wins += right > wrong
    return wins, pairs


def test_the_assistant_tells_a_right_stance_from_a_wrong_one_for_the_case() -> None:
    """The paper preset's knobs; debaters state random stances. Old learner: chance (about half)."""
    lm = scripted_lm(
        {"debater": random_debater, "summarizer": echo_summarizer, "judge": {"label": LEGAL[0]}},
    )
    program = DebateFeedback(LEGAL, lm=lm, n_rounds=1, n_debaters=2, variant="assistant", **PAPER)
    program.prepare(fact_cases(60, seed=1))
    wins, pairs = _pairs(program, fact_cases(80, start=1000, seed=2))
    assert pairs >= 25
    assert wins / pairs >= 0.9, f"right stance above wrong in {wins} of {pairs} test cases"
    quality = program.reliability_model.quality
    assert quality["held_out_separation"] >= 0.9 and quality["held_out_comments"] > 0
    report = program.prepare_report()
    assert report["assistant right-vs-wrong separation (held out)"] == quality["held_out_separation"]


def test_the_learner_alone_separates_where_a_stance_blind_one_cannot() -> None:
    """Same data straight into the learner, against the old single model (stance ignored)."""
    rng = random.Random(3)
    texts, stances, agrees, cases = [], [], [], []
    for i, ex in enumerate(fact_cases(40, seed=3) + fact_cases(100, start=500, seed=4)):
        for _ in range(2):
            s = rng.choice(LEGAL)
            texts.append(f"{ex.case}\nI hold that {s}.")
            stances.append(s)
            agrees.append(s == ex.label)
            cases.append(i)
    train = [i for i, c in enumerate(cases) if c < 40]
    test = [i for i, c in enumerate(cases) if c >= 40]

    def pick(xs: list, idx: list[int]) -> list:
        return [xs[i] for i in idx]

    aware = ReliabilityModel().fit(pick(texts, train), pick(stances, train), pick(agrees, train))
    blind = ReliabilityModel().fit(pick(texts, train), ["-"] * len(train), pick(agrees, train))
    groups = pick(cases, test)
    aware_sep = separation(aware.score(pick(texts, test), pick(stances, test)), pick(agrees, test), groups)
    blind_sep = separation(blind.score(pick(texts, test), ["-"] * len(test)), pick(agrees, test), groups)
    assert aware_sep is not None and blind_sep is not None
    assert aware_sep >= 0.9 and 0.3 <= blind_sep <= 0.7


def test_held_out_quality_is_measured_on_cases_left_out_of_the_fit() -> None:
    texts = [f"case {i} words" for i in range(10) for _ in range(2)]
    stances = ["a", "b"] * 10
    agrees = [True, False] * 10
    model = train_assistant(texts, stances, agrees, [i for i in range(10) for _ in range(2)], [1] * 20)
    assert model.quality["held_out_comments"] == 4  # 2 of 10 cases, both their statements
    assert model.quality["base_rate"] == 0.5
    assert model.score(["case 3 words"], ["a"])[0] > 0.5 > model.score(["case 3 words"], ["b"])[0]
    few = train_assistant(texts[:8], stances[:8], agrees[:8], [0, 0, 1, 1, 2, 2, 3, 3], [1] * 8)
    assert "held_out_accuracy" not in few.quality  # too few cases to hold any out


def test_saved_assistant_keeps_its_stances_and_quality(tmp_path: Any) -> None:
    lm = scripted_lm({"debater": random_debater, "summarizer": echo_summarizer})
    program = DebateFeedback(LEGAL, lm=lm, n_rounds=1, variant="assistant", **PAPER)
    program.prepare(fact_cases(12, seed=5))
    path = tmp_path / "df.json"
    program.save(str(path))
    fresh = DebateFeedback(LEGAL, lm=lm, n_rounds=1, variant="assistant", **PAPER)
    fresh.load(str(path))
    assert fresh.reliability_model.stances == sorted(LEGAL)
    assert fresh.reliability_model.quality == program.reliability_model.quality
    texts, stances = ["Case 1: the contract was never executed.\nx"] * 2, LEGAL
    expected = program.reliability_model.score(texts, stances)
    assert fresh.reliability_model.score(texts, stances) == pytest.approx(expected)
    old = {k: v for k, v in program.reliability_model.to_dict().items() if k not in ("stances", "quality")}
    assert ReliabilityModel.from_dict(old).stances == []  # a file from before stances were kept still loads


def _both_sides_rate(gate: str) -> tuple[float, float]:
    """With a 64% majority class and no fact deciding it: (both stances reach the judge, rounds passed)."""
    judge = scripted_lm({"judge": {"label": LEGAL[0]}, "summarizer": echo_summarizer})
    debaters = scripted_lm({"debater": sided_debater})
    program = DebateFeedback(
        LEGAL,
        lm=debaters,
        roles={"judge": judge},
        n_rounds=1,
        variant="assistant",
        assistant_input="reply",
        prob_method="votes",
        k_samples=1,
        gate=gate,
    )
    program.prepare(fact_cases(40, seed=6, majority=0.64, decided=False))
    judge.engine_impl.clear()
    tests = fact_cases(50, start=2000, seed=7, majority=0.64, decided=False)
    passed = [program(case=ex.case).gates[0] for ex in tests]
    summaries = [p for r, p in judge.engine_impl.prompts if r == "summarizer"]
    verdicts = [p for r, p in judge.engine_impl.prompts if r == "judge" and "Summary:" in p]
    both = sum(all(f"stance {s}" in p for s in LEGAL) for p in summaries)
    heard = sum(all(re.search(rf"Expert \d \(perspective: {s}\): 0\.\d\d", p) for s in LEGAL) for p in verdicts)
    assert heard == both  # the judge reads every comment's reliability beside the summary
    return both / len(tests), sum(passed) / len(tests)


def test_with_a_majority_class_the_round_gate_lets_both_stances_reach_the_judge() -> None:
    both, passed = _both_sides_rate("any")
    assert passed == 1.0 and both == 1.0
    one_sided, _ = _both_sides_rate("comment")  # the per-comment filter: the minority side is dropped
    assert one_sided <= 0.1


def _legal_server_responder() -> Any:
    """Debaters state random stances (a counter tells identical prompts apart); summaries echo; the judge: Plaintiff."""
    from courtroom.testing import answer_for_schema

    counter = itertools.count()

    def respond(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        props = schema.get("properties") or {}
        if "opinion" in props:
            n = next(counter)
            stance = random.Random(hashlib.sha256(f"{n}|{prompt}".encode()).digest()).choice(LEGAL)
            return {"opinion": f"Point {n}: I hold that {stance}.", "stance": stance}
        if "summary" in props:
            return {"summary": "Summary: " + " ".join(_field(prompt, "debate").split())}
        return answer_for_schema(schema, {"label": LEGAL[0]}, "fake")

    return respond


def test_from_the_cli_on_a_csv_the_paper_preset_records_rounds_and_separates_stances(capsys, tmp_path) -> None:
    """`courtroom run debate-feedback --preset debate-feedback-paper --dataset FILE --train-limit N`."""
    import csv
    import json

    from courtroom.cli import main
    from courtroom.testing import FakeServer

    rows = fact_cases(45, seed=8) + fact_cases(30, start=3000, seed=9)
    path = tmp_path / "cases.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "verdict"])
        writer.writerows([ex.case, ex.label] for ex in rows)
    with FakeServer(_legal_server_responder()) as server:
        code = main(
            ["run", "debate-feedback", "--preset", "debate-feedback-paper", "--dataset", str(path),
             "--text-field", "text", "--label-field", "verdict", "--labels", ",".join(LEGAL),
             "--split-sizes", "40,5,30", "--train-limit", "40", "--lm", "openai/legal", "--api-base", server.url,
             "--out", str(tmp_path / "runs")]
        )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "assistant right-vs-wrong separation (held out)" in out and "assistant held-out accuracy" in out
    run_dir = Path([x for x in out.splitlines() if x.startswith("run folder:")][-1].split(":", 1)[1].strip())
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["learned"]["assistant held-out statements"] > 0
    results = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(results) == 30
    wins = pairs = 0
    for r in results:
        fields = r["fields"]
        assert len(fields["stances"]) == len(fields["reliabilities"]) == len(fields["gates"]) == 2  # per round
        assert all(len(s) == 3 for s in fields["stances"]) and fields["sides"] == [None] * 3
        for stances, rel in zip(fields["stances"], fields["reliabilities"], strict=True):
            right = [v for s, v in zip(stances, rel, strict=True) if s == r["gold"]]
            wrong = [v for s, v in zip(stances, rel, strict=True) if s != r["gold"]]
            if right and wrong:
                pairs += 1
                wins += min(right) > max(wrong)
    assert pairs >= 20 and wins / pairs >= 0.9, f"{wins} of {pairs}"
