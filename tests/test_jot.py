import copy
import json

import dspy
import pytest
from dspy.utils.exceptions import AdapterParseError

from courtroom.errors import ConfigError
from courtroom.eval.harness import evaluate
from courtroom.programs import JudgmentOfThought
from courtroom.testing import oracle_lm, scripted_lm

LABELS = ["True", "False"]
CASE = "not ( True ) and ( True ) is"


def roles_of(pred):
    return [(t.role, t.round) for t in pred.transcript]


@pytest.mark.parametrize("loops", [1, 3, 5])
def test_turns_per_loop_count(loops):
    lm = scripted_lm({"judge": {"decision": "False"}})
    pred = JudgmentOfThought(LABELS, lm=lm, n_loops=loops)(case=CASE)
    assert len(pred.transcript) == 3 * loops
    assert [r for _, r in roles_of(pred)] == [r for r in range(1, loops + 1) for _ in range(3)]
    assert lm.engine_impl.counts == {"lawyer": loops, "prosecutor": loops, "judge": loops}
    assert pred.label == "False"


def test_last_judgment_is_the_verdict():
    lm = scripted_lm({"judge": [{"decision": "False"}, {"decision": "False"}, {"decision": "True"}]})
    pred = JudgmentOfThought(LABELS, lm=lm, n_loops=3)(case=CASE)
    assert pred.judge_decisions == ["False", "False", "True"]
    assert pred.label == "True"


def test_positions_map_to_labels():
    lm = scripted_lm({"judge": {"decision": "valid"}})
    prog = JudgmentOfThought(
        ["valid", "invalid"], positions=["the argument is valid", "the argument is invalid"], lm=lm, n_loops=1
    )
    with pytest.raises(AdapterParseError):
        prog(case="x")  # "valid" is not a position: the schema enum is over positions
    lm2 = scripted_lm({"judge": {"decision": "the argument is invalid"}})
    prog2 = JudgmentOfThought(
        ["valid", "invalid"], positions=["the argument is valid", "the argument is invalid"], lm=lm2, n_loops=1
    )
    assert prog2(case="x").label == "invalid"


@pytest.mark.parametrize(("flag", "absent"), [("use_lawyer", "lawyer"), ("use_prosecutor", "prosecutor")])
def test_ablation_removes_the_role(flag, absent):
    lm = scripted_lm({"judge": {"decision": "True"}})
    pred = JudgmentOfThought(LABELS, lm=lm, n_loops=2, **{flag: False})(case=CASE)
    roles = {role for role, _ in roles_of(pred)}
    assert absent not in roles and "judge" in roles
    assert absent not in lm.engine_impl.turns
    present = "prosecutor" if absent == "lawyer" else "lawyer"
    judge_calls = [h for h in lm.history if "judgment_round" in h["messages"][-1]["content"]]
    assert len(judge_calls) == 2
    for call in judge_calls:  # the whole prompt, instructions and output format included
        text = "\n".join(m["content"] for m in call["messages"]).lower()
        assert absent not in text, "the judge's prompt mentions the absent advocate"
        assert f"feedback_to_{present}" in text and f"{present}_argument" in text
    assert all(set(t.extra) == {f"feedback_to_{present}"} for t in pred.transcript if t.role == "judge")


def test_both_advocates_absent_is_refused():
    with pytest.raises(ConfigError):
        JudgmentOfThought(LABELS, lm=scripted_lm({}), use_lawyer=False, use_prosecutor=False)


@pytest.mark.parametrize("feedback", [True, False])
def test_feedback_reaches_advocates_only_when_enabled(feedback):
    script = {
        "judge": lambda role, turn, text: {
            "decision": "True",
            "feedback_to_lawyer": f"FB-LAWYER-{turn}",
            "feedback_to_prosecutor": f"FB-PROSECUTOR-{turn}",
        }
    }
    lm = scripted_lm(script)
    JudgmentOfThought(LABELS, lm=lm, n_loops=3, use_feedback=feedback)(case=CASE)
    prompts = lm.engine_impl.prompts
    lawyer = [p for r, p in prompts if r == "lawyer"]
    prosecutor = [p for r, p in prompts if r == "prosecutor"]
    assert "FB-" not in lawyer[0] and "FB-" not in prosecutor[0]
    if feedback:
        assert "FB-LAWYER-0" in lawyer[1] and "FB-LAWYER-1" in lawyer[2]
        assert "FB-PROSECUTOR-0" in prosecutor[1] and "FB-LAWYER" not in prosecutor[1]
    else:
        assert not any("FB-" in p for p in lawyer + prosecutor)


def test_advocates_see_their_own_earlier_arguments():
    lm = scripted_lm(
        {
            "lawyer": lambda r, t, p: {"argument": f"LAWYER-ARG-{t}"},
            "prosecutor": lambda r, t, p: {"argument": f"PROS-ARG-{t}"},
            "judge": {"decision": "True"},
        }
    )
    JudgmentOfThought(LABELS, lm=lm, n_loops=3)(case=CASE)
    lawyer = [p for r, p in lm.engine_impl.prompts if r == "lawyer"]
    prosecutor = [p for r, p in lm.engine_impl.prompts if r == "prosecutor"]
    assert "LAWYER-ARG" not in lawyer[0]
    assert "LAWYER-ARG-0" in lawyer[2] and "LAWYER-ARG-1" in lawyer[2]  # the closing sees both earlier ones
    assert "PROS-ARG-0" in prosecutor[2] and "PROS-ARG-1" in prosecutor[2]
    assert "PROS-ARG-0" not in lawyer[2]  # only the opponent's *last* argument


def test_advocates_see_the_opponents_last_argument():
    lm = scripted_lm(
        {
            "lawyer": lambda r, t, p: {"argument": f"LAWYER-ARG-{t}"},
            "prosecutor": lambda r, t, p: {"argument": f"PROS-ARG-{t}"},
            "judge": {"decision": "True"},
        }
    )
    JudgmentOfThought(LABELS, lm=lm, n_loops=2)(case=CASE)
    lawyer = [p for r, p in lm.engine_impl.prompts if r == "lawyer"]
    assert "PROS-ARG-0" in lawyer[1] and "PROS-ARG" not in lawyer[0]


def _role_lms():
    return {
        role: scripted_lm({"judge": {"decision": "True"}}, model=f"fake/{role}")
        for role in ("lawyer", "prosecutor", "judge")
    }


def test_each_role_reaches_its_own_model():
    lms = _role_lms()
    JudgmentOfThought(LABELS, lm=scripted_lm({}, model="fake/default"), roles=lms, n_loops=2)(case=CASE)
    for role, lm in lms.items():
        assert dict(lm.engine_impl.counts) == {role: 2}


def test_routing_survives_bootstrap_fewshot():
    lms = _role_lms()
    default = scripted_lm({"judge": {"decision": "True"}}, model="fake/default")
    student = JudgmentOfThought(LABELS, lm=default, roles=lms, n_loops=1)
    train = [dspy.Example(case=f"True and True or False {i} is", label="True").with_inputs("case") for i in range(4)]
    compiled = dspy.BootstrapFewShot(
        metric=lambda ex, pred, trace=None: pred.label == ex.label, max_bootstrapped_demos=2, max_labeled_demos=0
    ).compile(student, trainset=train)
    assert compiled.lms is student.lms
    assert any(p.demos for p in compiled.predictors()), "bootstrap should have collected demos"
    for lm in lms.values():
        lm.engine_impl.clear()
    compiled(case="False or True is")
    for role, lm in lms.items():
        assert dict(lm.engine_impl.counts) == {role: 1}, role
    assert not default.engine_impl.turns


def test_deepcopy_shares_role_map_and_state_has_one_shape(tmp_path):
    a = JudgmentOfThought(LABELS, lm=scripted_lm({}), n_loops=1)
    b = JudgmentOfThought(LABELS, lm=scripted_lm({}), n_loops=5, use_lawyer=False)
    assert copy.deepcopy(a).lms is a.lms
    assert (
        [n for n, _ in a.named_predictors()]
        == [n for n, _ in b.named_predictors()]
        == ["lawyer", "prosecutor", "judge"]
    )
    a.save(tmp_path / "p.json")
    b.load(tmp_path / "p.json")
    state = json.loads((tmp_path / "p.json").read_text())
    assert all(state[name]["lm"] is None for name in ("lawyer", "prosecutor", "judge"))


def test_unparseable_judge_answer_is_a_failure_not_a_label():
    lm = scripted_lm({"judge": {"decision": "Maybe"}})
    prog = JudgmentOfThought(LABELS, lm=lm, n_loops=1)
    ex = [dspy.Example(case=CASE, label="False", id="x").with_inputs("case")]
    [res] = evaluate(prog, ex)
    assert res.prediction is None and not res.correct
    assert "AdapterParseError" in res.error or "Maybe" in res.error


def test_jot_is_binary():
    with pytest.raises(ConfigError, match="binary"):
        JudgmentOfThought(["a", "b", "c"], lm=scripted_lm({}))


def test_oracle_single_judge_accuracy():
    cases = {f"case number {i} is": ("True" if i % 2 else "False") for i in range(400)}
    lm = oracle_lm(cases, LABELS, accuracy={"judge": 0.7, "lawyer": 0.5, "prosecutor": 0.5}, seed=1)
    prog = JudgmentOfThought(LABELS, lm=lm, n_loops=1)
    exs = [dspy.Example(case=c, label=g, id=str(i)).with_inputs("case") for i, (c, g) in enumerate(cases.items())]
    acc = sum(r.correct for r in evaluate(prog, exs, concurrency=8)) / len(exs)
    # binomial sd at p=0.7, n=400 is 0.023; 3 sd
    assert abs(acc - 0.7) < 0.07


COMPILED = (
    "MARKER-7: weigh the lawyer (for the positive position) and the prosecutor (for the negative position) "
    "by the rules of Boolean algebra. Give both advocates feedback. Distrust the prosecutor's first claim. "
    "State the decision last."
)


@pytest.mark.parametrize(
    ("flag", "present", "absent"), [("use_prosecutor", "lawyer", "prosecutor"), ("use_lawyer", "prosecutor", "lawyer")]
)
def test_the_solo_judge_of_a_compiled_program_keeps_its_instructions(tmp_path, flag, present, absent):
    """A saved program's judge instructions survive the ablation; only what names the absent advocate changes."""
    from courtroom.saving import load_program, save_program

    compiled = JudgmentOfThought(LABELS, lm=scripted_lm({}), n_loops=1)
    compiled.judge.signature = compiled.judge.signature.with_instructions(COMPILED)
    path = save_program(compiled, tmp_path / "p.json")
    lm = scripted_lm({"judge": {"decision": "True"}})
    program = load_program(path, lm=lm)
    setattr(program, flag, False)
    program(case=CASE)
    (system,) = [s for r, s in lm.engine_impl.systems if r == "judge"]
    assert "MARKER-7" in system and "by the rules of Boolean algebra" in system and "State the decision last." in system
    assert f"the {present} (for the" in system and f"Give the {present} feedback." in system
    assert absent not in system.lower(), "the judge's prompt mentions the absent advocate"
    # A sentence naming only the absent advocate is dropped; one naming the present one is kept.
    assert ("Distrust the prosecutor's first claim." in system) == (present == "prosecutor")
    assert "NO TIE" not in system  # not the paper's solo instructions: the compiled ones


def test_the_solo_judge_without_compiling_keeps_the_papers_solo_instructions():
    lm = scripted_lm({"judge": {"decision": "True"}})
    JudgmentOfThought(LABELS, lm=lm, n_loops=1, use_prosecutor=False)(case=CASE)
    (system,) = [s for r, s in lm.engine_impl.systems if r == "judge"]
    assert "argument of the lawyer (for the positive position)" in system and "NO TIE" in system
