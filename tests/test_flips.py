"""The flip matrix (SPEC §13): from each framework's first answers to its verdict, in compare and reports."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from courtroom.analysis.flips import flip_lines, flip_matrix, flip_table
from courtroom.comparison.compare import compare
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.testing import oracle_lm


def row(gold: str, prediction: str | None, transcript: list[dict[str, Any]] | None = None, **fields: Any) -> dict:
    return {"gold": gold, "prediction": prediction, "fields": fields, "transcript": transcript or []}


def test_counts_and_rates_from_the_first_judgment_read_as_labels() -> None:
    # JoT's judge decides between positions; the flip is counted on the labels they stand for.
    labels, positions = ["1", "2"], ["option1", "option2"]
    rows = [
        row("1", "1", judge_decisions=["option2", "option1"]),  # wrong -> right
        row("1", "2", judge_decisions=["option1", "option2"]),  # right -> wrong
        row("2", "2", judge_decisions=["option2", "option2"]),  # kept right
        row("2", "1", judge_decisions=["option1", "option1"]),  # kept wrong
        row("1", None),  # failed: no first answer
    ]
    f = flip_matrix(rows, "jot", labels, positions)
    assert f is not None
    assert (f["wrong_to_right"], f["right_to_wrong"], f["kept_right"], f["kept_wrong"]) == (1, 1, 1, 1)
    assert f["n"] == 4 and f["skipped"] == 1
    assert f["followed_majority"] == 2 and f["followed_majority_rate"] == 0.5
    assert f["wrong_to_right_rate"] == 0.25


def test_settle_counts_tried_cases_and_the_panel_majority() -> None:
    rows = [
        row("True", "True", decided_by="panel", panel_votes=["True"] * 3),
        row("True", "True", decided_by="trial", panel_votes=["False", "True", "False"]),  # majority False
        row("False", "True", decided_by="trial", panel_votes=["False", "True"]),  # tie: the first answer
    ]
    f = flip_matrix(rows, "settle", ["True", "False"])
    assert f is not None and f["settled"] == 1 and f["n"] == 2
    assert (f["wrong_to_right"], f["right_to_wrong"], f["followed_majority"]) == (1, 1, 0)
    assert "1 settled by the panel" in flip_lines("settle", f)[0]


def test_first_answers_of_each_framework() -> None:
    yes_no = ["Yes", "No"]
    df = flip_matrix([row("Yes", "Yes", initial_label="No")], "debate-feedback", yes_no)
    cl = flip_matrix([row("Yes", "No", ph_label="Yes")], "courtroom-llm", yes_no)
    rx = flip_matrix([row("Yes", "Yes", attempts=["Yes", "Yes"])], "reflexion", yes_no)
    assert df is not None and df["wrong_to_right"] == 1
    assert cl is not None and cl["right_to_wrong"] == 1
    assert rx is not None and rx["kept_right"] == 1
    held = [
        {"role": "debater-1", "round": 1, "text": "", "extra": {"now_holds": "No"}},
        {"role": "debater-2", "round": 1, "text": "", "extra": {"now_holds": "No"}},
        {"role": "debater-1", "round": 2, "text": "", "extra": {"now_holds": "Yes"}},
    ]
    kd = flip_matrix([row("Yes", "Yes", held)], "khan-debate", yes_no)
    assert kd is not None and kd["wrong_to_right"] == 1
    assert flip_matrix([row("Yes", "Yes", [])], "khan-debate", yes_no) is None, "a binary debate without concessions"
    assert flip_matrix([row("Yes", "Yes", votes=["Yes"])], "self-consistency", yes_no) is None


def test_compare_prints_and_reports_the_flip_matrix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = load_task("web_of_lies", limit=12, seed=1)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], {"default": 0.6, "judge": 0.8}, cache=True, model=f"fake/f{time.time_ns()}")
    result = compare(
        "web_of_lies",
        ["jot", "settle", "zero-shot"],
        limit=12,
        seed=1,
        knobs={"jot.n_loops": 2, "settle.trial": "jot", "settle.trial_knobs": "n_loops=2", "settle.panel_size": 3},
        out=tmp_path,
        lms=RoleLMs({"default": lm}),
        matched_baselines=False,
    )
    analyses = json.loads((result.out_dir / "analyses.json").read_text())
    assert "flips" not in analyses["zero-shot"]
    jot = analyses["jot"]["flips"]
    assert (
        jot["n"] == 12 and sum(jot[k] for k in ("wrong_to_right", "right_to_wrong", "kept_right", "kept_wrong")) == 12
    )
    rows = [json.loads(x) for x in (result.out_dir / result.runs["jot"] / "results.jsonl").read_text().splitlines()]
    changed = sum(r["fields"]["judge_decisions"][0] != r["prediction"] for r in rows)
    assert jot["followed_majority"] == 12 - changed
    settle = analyses["settle"]["flips"]
    assert settle["n"] + settle["settled"] == 12
    from courtroom.analysis.papers import analyses_lines

    lines = [line for name, found in result.analyses.items() for line in analyses_lines(name, found)]
    assert any(line.startswith("jot: what the trial changed, from the judge's first judgment (n=12)") for line in lines)
    from courtroom.reporting.html import write_report

    page = write_report(result.out_dir, tmp_path / "report.html").read_text()
    assert "What the trial changed" in page and "the panel's votes (tried cases)" in page
    table = flip_table({"jot": jot})
    assert table.loc["jot", "n"] == 12
    run_page = write_report(result.out_dir / result.runs["settle"], tmp_path / "run.html").read_text()
    assert "what the trial changed" in run_page and "settled (not counted)" in run_page
