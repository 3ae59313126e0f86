"""Calibration (SPEC §10): confidence per prediction, Brier score and ECE, reliability diagrams."""

import json
import time

import pytest

from courtroom.analysis.calibration import confidence, scores
from courtroom.comparison.compare import compare
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.reporting.html import write_report
from courtroom.runner.runs import RunConfig, run
from courtroom.testing import oracle_lm


def _oracle() -> RoleLMs:
    data = load_task("web_of_lies", seed=1)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], accuracy=0.7, cache=True, model=f"fake/c-{time.time_ns()}")
    return RoleLMs({"default": lm})


def test_confidence_comes_from_votes_or_probabilities():
    assert confidence("Yes", {"votes": ["Yes", "No", "Yes", "Yes"]}) == 0.75
    assert confidence("No", {"probabilities": [{"Yes": 0.5, "No": 0.5}, {"Yes": 0.2, "No": 0.8}]}) == 0.8
    assert confidence("Yes", {"judge_decisions": ["Yes"]}) is None
    assert confidence(None, {"votes": ["Yes"]}) is None


def test_brier_and_ece_by_hand():
    rows = [
        {"gold": "a", "prediction": "a", "confidence": 1.0},
        {"gold": "a", "prediction": "b", "confidence": 1.0},
        {"gold": "a", "prediction": "a", "confidence": 0.55},
        {"gold": "a", "prediction": "a", "confidence": 0.55},
        {"gold": "a", "prediction": "a", "confidence": None},
        {"gold": "a", "prediction": None, "confidence": None},
    ]
    s = scores(rows)
    assert s["n"] == 4
    assert s["brier"] == pytest.approx((0 + 1 + 0.45**2 + 0.45**2) / 4)
    # bins: [0.5, 0.6) holds 2 right at 0.55; [0.9, 1.0] holds 1 right, 1 wrong at 1.0
    assert s["ece"] == pytest.approx(2 / 4 * 0.45 + 2 / 4 * 0.5)
    assert scores([{"gold": "a", "prediction": "a"}]) is None


@pytest.mark.parametrize(
    ("framework", "knobs", "scored"),
    [
        ("self-consistency", {"k_samples": 5}, True),
        ("courtroom-llm", {"k_precedents": 0}, True),
        ("debate-feedback", {"n_rounds": 1}, True),
        ("jot", {"n_loops": 1}, False),
    ],
)
def test_runs_store_confidence_and_report_brier_and_ece(framework, knobs, scored, tmp_path):
    config = RunConfig(framework, "web_of_lies", limit=12, seed=1, knobs=knobs, out=str(tmp_path))
    outcome = run(config, lms=_oracle())
    rows = [json.loads(x) for x in (outcome.run_dir / "results.jsonl").read_text().splitlines()]
    summary = json.loads((outcome.run_dir / "summary.json").read_text())
    if not scored:
        assert all(r["confidence"] is None for r in rows) and summary["brier"] is None
        return
    assert all(0 < r["confidence"] <= 1 for r in rows if r["prediction"] is not None)
    assert 0 <= summary["brier"] <= 1 and 0 <= summary["ece"] <= 1
    assert summary["brier"] == scores(rows)["brier"]
    assert "Brier score" in (outcome.run_dir / "summary.md").read_text()


def test_compare_and_report_draw_reliability_diagrams(tmp_path):
    result = compare(
        "web_of_lies", ["self-consistency", "jot"], limit=12, seed=1, knobs={"n_loops": 1}, out=tmp_path, lms=_oracle()
    )
    assert result.plots["reliability"].is_file()
    assert result.table.loc["self-consistency", "brier"] >= 0 and result.table["brier"].isna()["jot"]
    page = write_report(result.out_dir / "self-consistency", tmp_path / "run.html").read_text()
    assert 'alt="rel"' in page


def test_oracle_states_a_probability_per_label_that_follows_its_answer(tmp_path):
    # The oracle once wrote one value into every number field, so Debate-Feedback's p_1..p_K were
    # equal and its initial estimate O_0 was flat whatever the judge answered.
    config = RunConfig("debate-feedback", "web_of_lies", limit=6, seed=1, knobs={"n_rounds": 1}, out=str(tmp_path))
    outcome = run(config, lms=_oracle())
    rows = [json.loads(x) for x in (outcome.run_dir / "results.jsonl").read_text().splitlines()]
    firsts = [r["fields"]["probabilities"][0] for r in rows if r["prediction"] is not None]
    assert firsts and all(sorted(o.values()) == pytest.approx([0.1, 0.9]) for o in firsts)


@pytest.mark.parametrize("auroc", [0.6, 0.8, 0.9])
def test_the_oracle_states_a_confidence_as_informative_as_its_auroc(auroc):
    """``confidence_auroc``: a right answer states more confidence than a wrong one with that probability."""
    from courtroom.programs import build_program
    from courtroom.testing import oracle_lm

    labels = ["True", "False"]
    gold = {f"case {i:04d}: is it so?": labels[i % 2] for i in range(1200)}
    lm = oracle_lm(gold, labels, accuracy=0.7, seed=3, confidence_auroc=auroc)
    # A settle panel of one stating its confidence, settling every case (threshold 0).
    panel = build_program("settle", labels, lm=lm, knobs={"panel_size": 1, "signal": "confidence", "threshold": 0.0})
    right, wrong = [], []
    for case, label in gold.items():
        out = panel(case=case)
        (right if out.label == label else wrong).append(out.agreement)
    assert 0.6 < len(right) / len(gold) < 0.8
    pairs = sum((r > w) + 0.5 * (r == w) for r in right for w in wrong)
    assert pairs / (len(right) * len(wrong)) == pytest.approx(auroc, abs=0.04)
    assert all(0.5 <= c <= 1 for c in right + wrong)


def test_the_oracle_confidence_says_nothing_unless_asked():
    from courtroom.testing import oracle_lm

    with pytest.raises(ValueError, match="confidence_auroc"):
        oracle_lm({"c": "True"}, ["True", "False"], confidence_auroc=1.0)
