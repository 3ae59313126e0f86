"""Bias (SPEC §10): position swap (``--debias swap|swap-vote``) and the verdict-to-longer-argument rate."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import dspy
import pytest
from _output import unwrapped

from courtroom.analysis.bias import PositionSwap, length_bias, swap_vote
from courtroom.cli import main
from courtroom.comparison.compare import compare
from courtroom.cost.estimate import estimate_run
from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.eval.harness import evaluate
from courtroom.models._concurrency import serial
from courtroom.models.lms import RoleLMs
from courtroom.programs import CourtroomLLM, JudgmentOfThought, KhanDebate
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer, oracle_lm, scripted_lm

LABELS = ["True", "False"]


def field(prompt: str, name: str) -> str:
    """The value of input field ``name`` in a ChatAdapter-style prompt."""
    return prompt.split(f"[[ ## {name} ## ]]")[1].split("[[ ##")[0].split("\n\nRespond with")[0].strip()


def first_seat(role: str, turn: int, prompt: str) -> dict[str, str]:
    """A position-biased JoT judge: always for the lawyer's position, whatever the case."""
    return {"decision": field(prompt, "positive_position")}


def _jot(debias: str | None, limit: int = 6, **kw: Any) -> RunConfig:
    return RunConfig("jot", "boolean_expressions", limit=limit, knobs={"n_loops": 1}, debias=debias, **kw)


# -- position consistency ------------------------------------------------------------------------------


def test_consistency_is_zero_for_a_position_biased_judge_and_one_for_an_unbiased_one():
    biased = run(_jot("swap"), lms=RoleLMs({"default": scripted_lm({"judge": first_seat})}))
    assert biased.summary["position_consistency"] == 0.0 and biased.summary["position_consistency_n"] == 6
    for r in biased.results:
        assert r.fields["original_label"] == "True" and r.fields["swapped_label"] == "False"
        assert r.prediction == "True" and r.fields["position_consistent"] is False  # swap: the original's verdict

    examples = load_task("boolean_expressions", limit=6).examples
    gold = {ex.case: ex.label for ex in examples}
    fair = run(_jot("swap"), lms=RoleLMs({"default": oracle_lm(gold, LABELS, accuracy=1.0)}))
    assert fair.summary["position_consistency"] == 1.0 and fair.summary["accuracy"] == 1.0
    plain = run(_jot(None), lms=RoleLMs({"default": scripted_lm({"judge": first_seat})}))
    assert "position_consistency" not in plain.summary
    assert all("swapped_label" not in r.fields for r in plain.results)


def test_swapped_jot_seats_the_lawyer_on_the_other_position():
    lm = scripted_lm({"judge": first_seat})
    positions = ["the argument is valid", "the argument is invalid"]
    program = JudgmentOfThought(["valid", "invalid"], positions, lm=lm, n_loops=1)
    twin = program.swapped()
    pred = twin(case="CASE")
    prompts = dict(lm.engine_impl.prompts)
    assert field(prompts["lawyer"], "position") == positions[1]
    assert field(prompts["prosecutor"], "position") == positions[0]
    assert field(prompts["judge"], "positive_position") == positions[1]
    assert "Literal['the argument is invalid', 'the argument is valid']" in prompts["judge"]
    assert pred.label == "invalid"  # the biased judge sides with whoever sits first
    assert [t.extra["label"] for t in pred.transcript if t.role != "judge"] == ["invalid", "valid"]
    assert program.positions == positions and program(case="CASE").label == "valid"  # the original is untouched


@pytest.mark.parametrize("assignment", ["fixed", "random"])
def test_swapped_courtroom_llm_exchanges_the_advocates_and_the_label_order(assignment):
    lm = scripted_lm({"clerk": {"most_likely": "Yes", "ranking": ["Yes", "No"]}})
    program = CourtroomLLM(["Yes", "No"], lm=lm, n_judges=1, k_precedents=0, assignment=assignment)
    cases = [f"case {i}" for i in range(6)]
    for case in cases:
        before = program(case=case).assignment
        after = program.swapped()(case=case).assignment
        assert after == {"prosecutor": before["attorney"], "attorney": before["prosecutor"]}
    by_role: dict[str, list[str]] = {}
    for role, prompt in lm.engine_impl.prompts:
        by_role.setdefault(role, []).append(prompt)
    # Calls alternate original, swapped: the label order shows in the clerk's list and the judge's choice.
    assert [field(p, "labels") for p in by_role["clerk"][:2]] == ['"Yes", "No"', '"No", "Yes"']
    assert "Literal['Yes', 'No']" in by_role["judge"][0] and "Literal['No', 'Yes']" in by_role["judge"][1]
    assert field(by_role["prosecutor"][1], "label") == field(by_role["attorney"][0], "label")


def test_swapped_khan_debate_gives_debater_one_the_other_answer():
    lm = scripted_lm({"judge": {"decision": "Yes"}})
    KhanDebate(["Yes", "No"], lm=lm, n_rounds=1).swapped()(case="CASE")
    debaters = [field(p, "answer") for role, p in lm.engine_impl.prompts if role == "debater"]
    judge = next(p for role, p in lm.engine_impl.prompts if role == "judge")
    assert sorted(debaters) == ["No", "Yes"]
    assert "debater 1 (for No)" in judge and "debater 2 (for Yes)" in judge
    assert field(judge, "labels") == '"No", "Yes"'


# -- swap-vote ---------------------------------------------------------------------------------------------


def test_swap_vote_rule():
    assert swap_vote("Yes", "Yes", 0.6, 1.0) == ("Yes", "both")
    assert swap_vote("Yes", "No", None, None) == ("Yes", "original")  # no confidence: the original order
    assert swap_vote("Yes", "No", 0.6, 0.6) == ("Yes", "original")  # equal: the original order
    assert swap_vote("Yes", "No", 0.6, 1.0) == ("No", "swapped")
    assert swap_vote("Yes", "No", 1.0, 0.6) == ("Yes", "original")
    assert swap_vote("Yes", None, 0.6, None) == ("Yes", "original")  # the swapped order failed


@pytest.mark.parametrize(
    ("swapped_votes", "verdict", "source", "conf"),
    [
        (["No", "No", "No"], "No", "swapped", 1.0),  # 3/3 beats the original's 2/3
        (["No", "No", "Yes"], "Yes", "original", 2 / 3),  # 2/3 each: the original order's verdict
        (["Yes", "Yes", "Yes"], "Yes", "both", 2 / 3),
    ],
)
def test_swap_vote_verdict_follows_the_more_confident_order(swapped_votes, verdict, source, conf):
    votes = ["Yes", "Yes", "No", *swapped_votes]
    clerk = {"most_likely": "Yes", "ranking": ["Yes", "No"]}
    lm = scripted_lm({"clerk": clerk, "judge": [{"decision": v} for v in votes]})
    program = CourtroomLLM(["Yes", "No"], lm=lm, n_judges=3, k_precedents=0, assignment="fixed")
    token = serial.set(True)  # the original's judges answer first, then the swapped ones
    try:
        result = evaluate(PositionSwap(program, "swap-vote"), [dspy.Example(case="c", label="No", id="1")])[0]
    finally:
        serial.reset(token)
    assert result.error is None
    assert result.prediction == verdict and result.fields["verdict_from"] == source
    assert result.fields["votes"] == ["Yes", "Yes", "No"] and result.fields["swapped_fields"]["votes"] == swapped_votes
    assert result.confidence == pytest.approx(conf)


def test_swap_vote_run_reports_consistency_and_keeps_the_original_on_disagreement():
    outcome = run(_jot("swap-vote"), lms=RoleLMs({"default": scripted_lm({"judge": first_seat})}))
    assert outcome.summary["debias"] == "swap-vote" and outcome.summary["position_consistency"] == 0.0
    assert all(r.prediction == "True" and r.fields["verdict_from"] == "original" for r in outcome.results)


# -- calls, cache, dry run -----------------------------------------------------------------------------


def test_swap_doubles_the_calls_and_is_cached_apart(cold_cache):
    with FakeServer() as server:
        lms = RoleLMs({"default": server.lm(f"openai/bias-{time.time_ns()}")})
        plain = run(_jot(None, limit=3), lms=lms)
        assert plain.summary["calls"] == plain.summary["sent"] == 3 * 3
        swapped = run(_jot("swap", limit=3), lms=lms)
    assert swapped.summary["calls"] == 2 * 3 * 3
    # The original order comes from the cache; every swapped prompt differs, so each one is sent.
    assert swapped.summary["cached"] == 9 and swapped.summary["sent"] == 9
    assert all(r.usage["calls"] == 6 for r in swapped.results)
    assert swapped.summary["tokens"] > 0


def test_dry_run_counts_both_orders():
    with FakeServer() as server:
        config = RunConfig(
            "courtroom-llm",
            "boolean_expressions",
            data="generate",
            limit=6,
            lm="openai/fake",
            api_base=server.url,
            knobs={"k_precedents": 0, "n_judges": 3},
        )
        plain = estimate_run(config, sample=3)
        config.debias = "swap"
        doubled = estimate_run(config, sample=3)
        assert server.counts["requests"] == 0
    assert plain.calls_exact and doubled.calls_exact
    assert doubled.calls == 2 * plain.calls == 2 * 6 * 6
    assert doubled.max_calls_per_example == 2 * plain.max_calls_per_example
    assert doubled.prompt_tokens > 1.8 * plain.prompt_tokens


# -- length bias -------------------------------------------------------------------------------------------


def test_length_bias_on_jot_arguments_of_controlled_length():
    script = {"lawyer": {"argument": "long " * 30}, "prosecutor": {"argument": "short"}, "judge": {"decision": "True"}}
    outcome = run(_jot("swap", limit=4), lms=RoleLMs({"default": scripted_lm(script)}))
    # Original order: the long lawyer argues True and wins; swapped: the long lawyer argues False and loses.
    assert outcome.summary["longer_argument_rate"] == 0.5 and outcome.summary["longer_argument_n"] == 8
    plain = run(_jot(None, limit=4), lms=RoleLMs({"default": scripted_lm(script)}))
    assert plain.summary["longer_argument_rate"] == 1.0 and plain.summary["longer_argument_n"] == 4


@pytest.mark.parametrize("framework", ["courtroom-llm", "khan-debate"])
def test_length_bias_on_advocates_and_debaters(framework):
    def argue(role: str, turn: int, prompt: str) -> dict[str, str]:
        side = field(prompt, "label" if framework == "courtroom-llm" else "answer")
        return {"argument": "word " * 20 + "." if side == "Yes" else "No."}

    script = {"prosecutor": argue, "attorney": argue, "debater": argue, "judge": {"decision": "No"}}
    script["clerk"] = {"most_likely": "Yes", "ranking": ["Yes", "No"]}
    lm = scripted_lm(script)
    knobs = {"n_judges": 1, "k_precedents": 0} if framework == "courtroom-llm" else {"n_rounds": 2}
    program = (CourtroomLLM if framework == "courtroom-llm" else KhanDebate)(["Yes", "No"], lm=lm, **knobs)
    results = evaluate(program, [dspy.Example(case=f"case {i}", label="Yes", id=str(i)) for i in range(3)])
    assert length_bias(results) == {"rate": 0.0, "n": 3, "ties": 0, "unit": "words"}  # "No" always wins, shorter


def test_length_bias_counts_ties_apart_and_skips_frameworks_without_arguments():
    turns = [
        {"role": "lawyer", "round": 1, "text": "a b", "extra": {"label": "True"}},
        {"role": "prosecutor", "round": 1, "text": "c d", "extra": {"label": "False"}},
    ]
    rows = [{"prediction": "True", "transcript": turns, "fields": {}}]
    assert length_bias(rows) == {"rate": None, "n": 0, "ties": 1, "unit": "words"}
    zero = [{"prediction": "True", "transcript": [{"role": "classifier", "round": 1, "text": "x"}], "fields": {}}]
    assert length_bias(zero) is None


# -- resume, compare, CLI ------------------------------------------------------------------------------


def test_interrupted_swap_run_resumes_and_refuses_another_mode(tmp_path: Path):
    config = _jot("swap", limit=6, out=str(tmp_path / "new"), concurrency=1)
    lms = RoleLMs({"default": scripted_lm({"judge": first_seat})})
    seen: list[str] = []

    def stop_after_two(res: Any) -> None:
        seen.append(res.id)
        if len(seen) == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(config, lms=lms, progress=stop_after_two)
    (run_dir,) = (tmp_path / "new").iterdir()
    assert json.loads((run_dir / "meta.json").read_text())["config"]["debias"] == "swap"
    with pytest.raises(ConfigError, match="debias"):
        resume(run_dir, lms=lms, debias="swap-vote")
    outcome = resume(run_dir, lms=lms)
    assert outcome.summary["position_consistency"] == 0.0 and outcome.summary["position_consistency_n"] == 6
    _, rows, _ = load_run(run_dir)
    assert all(r["fields"]["swapped_label"] == "False" for r in rows)


def test_compare_debiases_the_frameworks_with_sides_only():
    lms = RoleLMs({"default": scripted_lm({"judge": first_seat})})
    result = compare(
        "boolean_expressions",
        ["jot", "zero-shot"],
        limit=3,
        knobs={"jot.n_loops": 1},
        lms=lms,
        debias="swap",
        matched_baselines=False,
    )
    assert result.analyses["jot"]["position_consistency"]["rate"] == 0.0
    assert "position_consistency" not in result.analyses["zero-shot"]
    with pytest.raises(ConfigError, match="none of zero-shot, cot has sides to swap"):
        compare("boolean_expressions", ["zero-shot", "cot"], limit=3, lms=lms, debias="swap")


def _cli(args: list[str], capsys: Any) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_debias_swap_prints_and_stores_the_consistency_rate(capsys):
    with FakeServer() as server:
        base = ["--limit", "2", "--lm", f"openai/bias-cli-{time.time_ns()}", "--api-base", server.url]
        code, out, err = _cli(["run", "jot", "--loops", "1", "--debias", "swap", *base], capsys)
    assert code == 0, err
    assert "position consistency (swap)" in out and "verdict to longer argument" in out
    assert "12 = 12 sent + 0 from the cache" in out  # 2 examples x 3 calls x 2 orders
    run_dir = Path(next(x for x in out.splitlines() if x.startswith("run folder:")).split(":", 1)[1].strip())
    summary = json.loads((run_dir / "summary.json").read_text())
    # The fake server answers the first choice: the lawyer's position in each order, so never consistent.
    assert summary["position_consistency"] == 0.0 and summary["position_consistency_n"] == 2
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert all({"swapped_label", "position_consistent", "swapped_transcript"} <= set(r["fields"]) for r in rows)
    assert "position consistency" in (run_dir / "summary.md").read_text()


def test_cli_refuses_a_framework_without_sides(capsys):
    code, out, err = _cli(["run", "zero-shot", "--limit", "2", "--debias", "swap"], capsys)
    assert code == 2
    lines = unwrapped(err.strip())  # one message, wrapped at the terminal's width
    assert len(lines) == 1 and "zero-shot has no sides to swap" in lines[0]
    assert "courtroom-llm, jot, khan-debate" in lines[0]
    code, _, err = _cli(["run", "jot", "--limit", "2", "--debias", "flip"], capsys)
    assert code == 2 and "use one of swap, swap-vote" in err


def test_cli_dry_run_counts_both_orders(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")  # the dry run's table as a table (at 80 its rows are paragraphs)
    args = ["run", "jot", "--loops", "2", "--limit", "4", "--data", "generate", "--lm", "openai/fake", "--dry-run"]
    code, plain, err = _cli(args, capsys)
    assert code == 0, err
    code, doubled, err = _cli([*args, "--debias", "swap"], capsys)
    assert code == 0, err
    assert "| jot | 4 | 24 | 6.00 |" in plain and "| jot | 4 | 48 | 12.00 |" in doubled
