"""Settle, then trial (SPEC §13): which stage decides, what each stage sees, knobs, save/load, dry run."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import dspy
import pytest

import courtroom
from courtroom.errors import ConfigError
from courtroom.models._concurrency import serial
from courtroom.programs import build_program
from courtroom.testing import FakeServer, oracle_lm, scripted_lm

LABELS = ["True", "False"]
TRIAL_ROLES = ("lawyer", "prosecutor", "judge")
SHOWN = "a panel of 3 independent answers gave"


@pytest.fixture
def in_order() -> Any:
    """Role calls one after another, so a scripted role's turns arrive in order."""
    token = serial.set(True)
    yield
    serial.reset(token)


def court(panel: list[dict[str, Any]], **knobs: Any) -> tuple[Any, Any]:
    """A settle program on a scripted model: the panel answers ``panel`` in turn; a 1-round JoT trial."""
    lm = scripted_lm(
        {
            "panel": panel,
            "lawyer": {"argument": "it is true"},
            "prosecutor": {"argument": "it is false"},
            "judge": {"decision": "False", "analysis": "the prosecutor is right"},
        }
    )
    knobs = {"trial": "jot", "trial_knobs": "n_loops=1"} | knobs
    return build_program("settle", LABELS, lm=lm, knobs=knobs), lm.engine_impl


def test_a_unanimous_panel_settles_and_the_trial_never_sees_the_case(in_order: Any) -> None:
    program, engine = court([{"answer": "True"}])
    out = program(case="True or False is")
    assert out.decided_by == "panel" and out.label == "True"
    assert out.panel_votes == ["True", "True", "True"] and out.agreement == 1.0
    assert engine.turns == ["panel"] * 3, "a settled case never reaches the trial"
    assert {t.role for t in out.transcript} == {"panel"}
    assert out.transcript[-1].extra["decided_by"] == "panel"
    assert "trial_fields" not in out


@pytest.mark.parametrize("show", [False, True])
def test_a_disputed_case_is_tried_and_sees_the_panel_only_when_asked(in_order: Any, show: bool) -> None:
    program, engine = court([{"answer": "True"}, {"answer": "False"}, {"answer": "True"}], show_panel=show)
    out = program(case="True or False is")
    assert out.decided_by == "trial" and out.trial == "jot"
    assert out.label == "False", "the trial's verdict, not the panel's majority"
    assert out.panel_label == "True" and out.agreement == pytest.approx(2 / 3, abs=1e-6)
    assert engine.turns == ["panel"] * 3 + ["lawyer", "prosecutor", "judge"]
    trial_prompts = [p for role, p in engine.prompts if role in TRIAL_ROLES]
    panel_prompts = [p for role, p in engine.prompts if role == "panel"]
    assert len(trial_prompts) == 3 and all("True or False is" in p for p in trial_prompts)
    assert all((SHOWN in p) is show for p in trial_prompts), "the trial sees the panel's answers iff show_panel"
    if show:
        assert all("True (2), False (1)" in p for p in trial_prompts)
    assert not any(SHOWN in p for p in panel_prompts)
    roles = [t.role for t in out.transcript]
    assert roles == ["panel"] * 4 + ["lawyer", "prosecutor", "judge"], "panel first, then the trial's transcript"
    assert out.trial_fields["judge_decisions"] == ["False"]


def test_threshold_is_at_or_above(in_order: Any) -> None:
    votes = [{"answer": "True"}, {"answer": "False"}, {"answer": "True"}]
    settled, engine = court(votes, threshold=2 / 3)
    assert settled(case="x is").decided_by == "panel" and engine.turns == ["panel"] * 3
    tried, _ = court(votes, threshold=0.7)
    assert tried(case="x is").decided_by == "trial"


def test_always_try_tries_even_a_unanimous_panel(in_order: Any) -> None:
    program, engine = court([{"answer": "True"}], always_try=True)
    out = program(case="True is")
    assert out.decided_by == "trial" and engine.counts["judge"] == 1
    assert out.panel_votes == ["True"] * 3


def test_confidence_signal_reads_the_members_probabilities(in_order: Any) -> None:
    sure = {"answer": "True", "p_1": 0.9, "p_2": 0.1}
    unsure = {"answer": "True", "p_1": 0.6, "p_2": 0.4}
    settled, _ = court([sure, unsure], signal="confidence", panel_size=2, threshold=0.7)
    out = settled(case="True is")
    assert out.decided_by == "panel" and out.agreement == pytest.approx(0.75)
    tried, engine = court([unsure], signal="confidence", panel_size=2, threshold=0.7)
    assert tried(case="True is").decided_by == "trial" and engine.counts["judge"] == 1


def test_a_mixed_panel_rotates_through_its_models(in_order: Any) -> None:
    a = scripted_lm({"panel": {"answer": "True"}}, model="fake/a")
    b = scripted_lm({"panel": {"answer": "False"}, "judge": {"decision": "True"}}, model="fake/b")
    program = build_program(
        "settle", LABELS, lm=b, roles={"panel": [a, b]}, knobs={"trial": "jot", "trial_knobs": "n_loops=1"}
    )
    out = program(case="True is")
    assert out.panel_votes == ["True", "False", "True"] and out.decided_by == "trial"
    assert a.engine_impl.counts["panel"] == 2 and b.engine_impl.counts["panel"] == 1


def test_trial_knobs_and_preset() -> None:
    lm = scripted_lm({})
    program = build_program(
        "settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_knobs": "use_feedback=false, n_loops=2"}
    )
    assert program.trial.n_loops == 2 and program.trial.use_feedback is False
    assert program.config()["trial_knobs"] == "n_loops=2,use_feedback=false"
    assert program.config()["trial"] == "jot"
    paper = build_program("settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_preset": "jot-paper"})
    assert paper.trial.n_loops == 3 and paper.temperature_of("judge") == 1.0
    assert paper.temperature_of("panel") == 0.7
    with pytest.raises(ConfigError, match="has no knob 'n_judges'"):
        build_program("settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_knobs": "n_judges=3"})
    with pytest.raises(ConfigError, match="n_loops is a whole number"):
        build_program("settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_knobs": "n_loops=two"})
    with pytest.raises(ConfigError, match="is for courtroom-llm, not jot"):
        build_program("settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_preset": "courtroom-llm-final"})
    with pytest.raises(ConfigError, match="unknown trial"):
        build_program("settle", LABELS, lm=lm, knobs={"trial": "zero-shot"})
    with pytest.raises(ConfigError, match="binary"):
        build_program("settle", ["a", "b", "c"], lm=lm, knobs={"trial": "jot"})
    for bad in ({"panel_size": 0}, {"threshold": 1.5}, {"signal": "vibes"}, {"show_panel": "yes"}):
        with pytest.raises(ConfigError, match="settle"):
            build_program("settle", LABELS, lm=lm, knobs=bad)


def test_the_run_seed_reaches_a_trial_that_has_one() -> None:
    program = build_program("settle", LABELS, lm=scripted_lm({}), knobs={"seed": 7})
    assert program.trial.name == "courtroom-llm" and program.trial.seed == 7


def test_sampling_warning_names_the_panel() -> None:
    from courtroom.models.lms import LMSpec

    program = build_program("settle", LABELS, roles={"panel": LMSpec("openai/x", temperature=0.0)}, lm="openai/x")
    assert "panel x3" in (program.sampling_warning() or "")


def _decide(role: str, turn: int, prompt: str) -> dict[str, Any]:
    """Answers fixed by the prompt; on cases whose hash says so, the second panel member dissents.

    Run in order (``in_order``): a case's two panel calls are turns 2i and 2i+1.
    """
    digest = hashlib.sha256(prompt.encode()).digest()
    pick = LABELS[digest[0] % 2]
    if role == "panel" and digest[1] % 2 and turn % 2:
        pick = LABELS[1 - LABELS.index(pick)]
    text = {k: f"{role} says {pick}" for k in ("argument", "analysis", "reason", "opinion", "summary")}
    return {"answer": pick, "decision": pick, "most_likely": pick, "label": pick, "stance": pick} | text


@pytest.mark.parametrize(
    "knobs",
    [
        {"trial": "courtroom-llm", "trial_knobs": "k_precedents=1,n_judges=1"},
        {"trial": "debate-feedback", "trial_knobs": "variant=assistant,n_rounds=1"},
    ],
    ids=["courtroom-llm", "debate-feedback"],
)
def test_save_load_predict_round_trip(knobs: dict[str, Any], tmp_path: Path, in_order: Any) -> None:
    from courtroom.data.tasks import load_task
    from courtroom.optimize.compile import compile_program
    from courtroom.saving import save_program

    train = load_task("boolean_expressions", split="train", limit=8).examples
    dev = load_task("boolean_expressions", split="dev", limit=4).examples
    gold = {e.case: e.label for e in train + dev}
    res = compile_program(
        "settle",
        optimizer="labeled",
        settings={"k": 1},
        knobs=knobs | {"panel_size": 2},
        trainset=train,
        devset=dev,
        labels=LABELS,
        lm=oracle_lm(gold, LABELS, accuracy=0.6),
    )
    path = save_program(res.program, tmp_path / "settle.json", res.metadata)
    meta = json.loads(path.read_text())["metadata"]["courtroom"]
    assert meta["framework"] == "settle" and meta["config"]["trial"] == knobs["trial"]
    scripted = scripted_lm({"default": _decide})
    loaded = courtroom.load(path, lm=scripted)
    original = res.program
    original.lms.clear()
    original.lms.update({"default": scripted})
    assert loaded.dump_state() == original.dump_state()
    if knobs["trial"] == "courtroom-llm":
        assert loaded.trial.precedent_index.reasons, "the trial's precedents come back with their reasons"
    else:
        assert loaded.trial.reliability_model.fitted
    for ex in dev:
        a, b = original(case=ex.case), loaded(case=ex.case)
        assert (a.label, a.decided_by) == (b.label, b.decided_by)
        assert [(t.role, t.text, t.decision) for t in a.transcript] == [
            (t.role, t.text, t.decision) for t in b.transcript
        ]
    assert {loaded(case=ex.case).decided_by for ex in dev} == {"panel", "trial"}


def test_dry_run_prices_a_range(cold_cache: Any) -> None:
    from courtroom.cost.dry_run import estimate_lines
    from courtroom.cost.estimate import estimate_run
    from courtroom.runner.runs import RunConfig

    with FakeServer() as server:
        config = RunConfig(
            "settle",
            "boolean_expressions",
            data="generate",
            limit=6,
            lm="openai/fake",
            api_base=server.url,
            knobs={"trial": "jot", "trial_knobs": "n_loops=2", "panel_size": 3},
        )
        est = estimate_run(config, sample=3)
        assert server.counts["requests"] == 0
    assert not est.calls_exact
    assert est.min_calls == 6 * 3, "all settled: the panel's calls"
    assert est.calls == 6 * (3 + 2 * 3), "all tried: the panel and a 2-round JoT"
    assert est.max_calls_per_example == 9
    table = "\n".join(estimate_lines({"settle": est}))
    assert "18 .. 54 (all settled .. all tried)" in table and "3.00 .. 9.00" in table


def test_runs_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from courtroom.cli import main

    monkeypatch.setenv("COLUMNS", "400")  # the flip line unwrapped (tests/test_screen.py checks 80 columns)

    with FakeServer() as server:
        code = main(
            [
                "run",
                "settle",
                "--task",
                "boolean_expressions",
                "--limit",
                "2",
                "--set",
                "trial=jot",
                "--set",
                "trial_knobs=n_loops=1",
                "--set",
                "always_try=true",
                "--lm",
                "openai/fake",
                "--api-base",
                server.url,
                "-o",
                str(tmp_path),
            ]
        )
    out = capsys.readouterr().out
    assert code == 0
    folder = Path([x for x in out.splitlines() if x.startswith("run folder:")][-1].split(":", 1)[1].strip())
    rows = [json.loads(x) for x in (folder / "results.jsonl").read_text().splitlines()]
    assert [r["fields"]["decided_by"] for r in rows] == ["trial", "trial"]
    assert {t["role"] for t in rows[0]["transcript"]} == {"panel", *TRIAL_ROLES}
    meta = json.loads((folder / "meta.json").read_text())
    assert meta["framework_config"]["trial_knobs"] == "n_loops=1"
    flips = [x for x in out.splitlines() if "what the trial changed, from the panel's votes" in x]
    assert len(flips) == 1 and "(n=2)" in flips[0], "run prints the flip matrix as compare does"


def test_listed_by_courtroom_frameworks(capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.cli import main

    assert main(["frameworks"]) == 0
    assert "settle" in capsys.readouterr().out


def test_prepare_trains_the_trial_even_when_every_case_settles() -> None:
    train = [dspy.Example(case=f"case {i}", label=LABELS[i % 2], id=str(i)).with_inputs("case") for i in range(4)]
    program = build_program(
        "settle", LABELS, lm=scripted_lm({}), knobs={"threshold": 0.0, "trial_knobs": "k_precedents=1"}
    )
    program.prepare(train)
    assert program.trial.precedent_index is not None


def test_the_oracle_models_case_difficulty() -> None:
    gold = {"easy case": "True", "hard case": "False"}
    lm = oracle_lm(gold, LABELS, accuracy=1.0, case_accuracy={"easy case": 1.0, "hard case": {"panel": 0.0}})
    program = build_program("settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_knobs": "n_loops=1"})
    easy = program(case="easy case")
    assert easy.panel_votes == ["True"] * 3 and easy.decided_by == "panel"
    hard = program(case="hard case")
    assert hard.panel_votes == ["True"] * 3, "the panel is always wrong on the hard case"
    assert hard.label == "True" and hard.decided_by == "panel", "a unanimous wrong panel settles wrongly"
    tried = build_program(
        "settle", LABELS, lm=lm, knobs={"trial": "jot", "trial_knobs": "n_loops=1", "always_try": True}
    )
    assert tried(case="hard case").label == "False", (
        "roles the case leaves out use the global accuracy (the judge: 1.0)"
    )


def test_the_benchs_expected_figures() -> None:
    # The bench itself runs in tests/test_bench.py (its smoke size), which checks what it prints.
    import sys

    bench = Path(__file__).resolve().parents[1] / "bench" / "settle.py"
    sys.path.insert(0, str(bench.parent))
    try:
        from _settle_model import expected_settle, expected_vote  # type: ignore[import-not-found]
    finally:
        sys.path.remove(str(bench.parent))
    q, r = 0.55, 0.8
    acc, calls = expected_settle(2, 1.0, q, r, 9)
    assert acc == pytest.approx(q**2 + 2 * q * (1 - q) * r) and calls == pytest.approx(2 + 2 * q * (1 - q) * 9)
    assert expected_vote(2, q) == pytest.approx(q), "a tie goes to the first answer"
    assert expected_vote(3, q) == pytest.approx(q**3 + 3 * q**2 * (1 - q))


def test_a_budget_bounds_each_case_by_its_dearest_end(cold_cache: Any) -> None:
    from courtroom.cost.budget import Budget, BudgetExhausted
    from courtroom.runner.runs import RunConfig, run

    knobs = {"trial": "jot", "trial_knobs": "n_loops=1", "panel_size": 2}
    with FakeServer() as server:  # the fake answers alike: every case settles, 2 calls each
        config = RunConfig(
            "settle", "boolean_expressions", data="generate", lm="openai/fake", api_base=server.url, limit=10,
            concurrency=1, knobs=knobs,
        )  # fmt: skip
        with pytest.raises(BudgetExhausted) as stop:
            run(config, budget=Budget(max_calls=12))
        sent = server.counts["requests"]
    assert stop.value.budget.unit_calls == 2 + 3, "a case may go to trial: the panel and a 1-round JoT"
    assert sent <= 12 and stop.value.left > 0


def test_compile_and_predict_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.cli import main

    with FakeServer() as server:
        common = ["--lm", "openai/fake-model", "--api-base", server.url]
        code = main(
            [
                "compile", "settle", "--task", "boolean_expressions", "--optimizer", "labeled", "--opt", "k=1",
                "--train-limit", "3", "--dev-limit", "2", "--test-limit", "0", "--set", "trial=jot",
                "--set", "trial_knobs=n_loops=1",
                "--set", "always_try=true", "-o", str(tmp_path / "settle.json"), *common,
            ]
        )  # fmt: skip
        assert code == 0, capsys.readouterr()
        meta = json.loads((tmp_path / "settle.json").read_text())["metadata"]["courtroom"]
        assert meta["framework"] == "settle" and meta["config"]["trial_knobs"] == "n_loops=1"
        capsys.readouterr()
        code = main(["predict", str(tmp_path / "settle.json"), "True and False is", *common])
        out = capsys.readouterr().out
    assert code == 0
    assert "PANEL" in out and "LAWYER" in out and "JUDGE" in out and "decided_by" in out
