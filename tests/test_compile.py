"""Compile: every supported optimizer keeps per-role models; refusals and bad input are one-line errors."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

import dspy
import pytest

from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.optimize.compile import OPTIMIZERS, compile_program
from courtroom.testing import _response, _schema, oracle_lm

LABELS = ["True", "False"]
ROLES = ("lawyer", "prosecutor", "judge")
SMALL = {
    "labeled": {"k": 2},
    "bootstrap": {"max_bootstrapped_demos": 2},
    "bootstrap-rs": {"num_candidate_programs": 2},
    "knn": {"k": 2},
    "mipro": {"auto": None, "num_candidates": 2, "num_trials": 2, "minibatch": False},
    "copro": {"breadth": 2, "depth": 1},
    "gepa": {"auto": None, "max_metric_calls": 24, "reflection_minibatch_size": 2},
}
NEW_INSTRUCTION = "Weigh the case itself before the advocates' rhetoric."


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=6).examples
    dev = load_task("boolean_expressions", split="dev", limit=3).examples
    return train, dev, {e.case: e.label for e in train + dev}


def recording(lm: Any) -> list[str]:
    """Record the role of every call the fake actually answers."""
    seen: list[str] = []
    original = lm.engine_impl.answer

    def answer(role: str, schema: Any, prompt: str, turn: int) -> Any:
        seen.append(role)
        return original(role, schema, prompt, turn)

    lm.engine_impl.answer = answer
    return seen


class ProposerEngine:
    """Free-text helper model: GEPA and MIPRO proposals read raw text; this one proposes one instruction."""

    def __init__(self) -> None:
        self.calls = 0
        self.prompts: list[str] = []

    def complete(self, request: Any) -> Any:
        self.calls += 1
        self.prompts.append(" ".join(m.text or "" for m in request.messages))
        schema = _schema(request)
        fields = list(schema.get("properties") or {})
        # GEPA's proposer uses its own JSONAdapter, which sends no schema to an unknown model.
        fields = fields or ["new_instruction", "improved_instruction"]
        text = json.dumps({f: NEW_INSTRUCTION for f in fields})
        return _response(text, "", 0.0)

    def close(self) -> None:
        pass


def helper_lm() -> tuple[Any, ProposerEngine]:
    from courtroom.testing import FakeLM

    engine = ProposerEngine()
    return FakeLM("fake/helper", engine=engine, cache=False), engine


@pytest.mark.parametrize("name", list(SMALL))
def test_every_optimizer_keeps_per_role_models(name: str, data: Any) -> None:
    train, dev, gold = data
    fakes = {r: oracle_lm(gold, LABELS, accuracy=0.8, model=f"fake/{r}") for r in ROLES}
    seen = {r: recording(lm) for r, lm in fakes.items()}
    helper, proposer = helper_lm()
    res = compile_program(
        "jot",
        optimizer=name,
        settings=SMALL[name],
        knobs={"n_loops": 2},
        trainset=train,
        devset=dev,
        labels=LABELS,
        roles=fakes,
        lm=fakes["judge"],
        prompt_lm=helper,
    )
    for role in ROLES:
        assert seen[role] and set(seen[role]) == {role}, f"{name}: {role}'s model served {set(seen[role])}"
        seen[role].clear()
    # The compiled program still routes each role to its own model.
    res.program(case="True and not False or False and True")
    for role in ROLES:
        assert seen[role] and set(seen[role]) == {role}
    assert 0 <= res.before["accuracy"] <= 1 and 0 <= res.after["accuracy"] <= 1
    assert res.metadata["scores"]["dev"] == {"before": res.before, "after": res.after}
    assert res.metadata["optimizer"]["name"] == name

    preds = dict(res.program.named_predictors())
    if name == "labeled":
        assert preds["judge"].demos and not preds["lawyer"].demos
        assert all(d.decision in LABELS for d in preds["judge"].demos)
    if name == "bootstrap":
        assert all(p.demos for p in preds.values()), "bootstrapped demos for every role"
    if name == "bootstrap-rs":
        # It selects among its candidates (zero-shot, bootstrapped) on the dev split.
        assert len(res.program.candidate_programs) >= 3 and res.metadata["optimizer"]["selects_on_dev"]
    if name == "knn":
        assert res.program.knn_precedents.useful > 0
    if name in ("mipro", "copro", "gepa"):
        assert proposer.calls > 0, "the optimizer's own model is the prompt_lm, not a role's"
    if name == "copro":
        assert any(NEW_INSTRUCTION in p.signature.instructions for p in preds.values())
    if name == "gepa":
        assert any("As the lawyer" in p or "As the judge" in p for p in proposer.prompts), "role-level feedback"


def test_knn_picks_precedents_per_input(data: Any) -> None:
    train, dev, gold = data
    lm = oracle_lm(gold, LABELS, accuracy=1.0)
    res = compile_program(
        "jot",
        optimizer="knn",
        settings={"k": 1},
        knobs={"n_loops": 1},
        trainset=train,
        devset=dev,
        labels=LABELS,
        lm=lm,
    )
    index = res.program.knn_precedents
    assert all(index.cases.index(ex.case) not in index.neighbours(ex.case) for ex in train), "no self-citation"
    picks = {tuple(index.neighbours(ex.case)) for ex in train + dev}
    assert len(picks) > 1, "different inputs get different precedents"
    for ex in dev:
        demo = index.demos_for("judge", ex.case)[0]
        assert demo.case == index.cases[index.neighbours(ex.case)[0]]
        assert demo.decision in LABELS


def test_gepa_feedback_is_per_role(data: Any) -> None:
    from courtroom.optimize._feedback import feedback_metric

    train, _, gold = data
    program = __import__("courtroom.programs", fromlist=["x"]).JudgmentOfThought(
        LABELS, lm=oracle_lm(gold, LABELS, accuracy=1.0), n_loops=1
    )
    with dspy.context(trace=[]):
        pred = program(case=train[0].case)
        trace = list(dspy.settings.trace)
    metric = feedback_metric(LABELS, LABELS)
    by_role = defaultdict(list)
    for p, inputs, outputs in trace:
        name = next(n for n, q in program.named_predictors() if q is p)
        by_role[name].append((p, inputs, outputs))
    judge = metric(train[0], pred, None, "judge", by_role["judge"])
    lawyer = metric(train[0], pred, None, "lawyer", by_role["lawyer"])
    assert judge.score == 1.0 and "you decided" in judge.feedback and "correct" in judge.feedback
    side = "correct" if train[0].label == "True" else "wrong"
    assert f"you argued for 'True', which is the {side} answer" in lawyer.feedback


@pytest.mark.parametrize("name", ["simba", "bestofn", "refine"])
def test_single_model_optimizers_are_refused(name: str, data: Any) -> None:
    train, dev, gold = data
    with pytest.raises(ConfigError, match="every role on one model"):
        compile_program("jot", optimizer=name, trainset=train, devset=dev, labels=LABELS, lm=oracle_lm(gold, LABELS))


def test_unknown_optimizer_lists_the_valid_ones(data: Any) -> None:
    train, dev, gold = data
    with pytest.raises(ConfigError, match="unknown optimizer 'fancy'.*bootstrap"):
        compile_program("jot", optimizer="fancy", trainset=train, devset=dev, labels=LABELS, lm=oracle_lm(gold, LABELS))


def test_trainset_too_small_for_settings(data: Any) -> None:
    train, dev, gold = data
    with pytest.raises(ConfigError, match="needs at least 5 training examples, got 2"):
        compile_program(
            "jot",
            optimizer="knn",
            settings={"k": 5},
            trainset=train[:2],
            devset=dev,
            labels=LABELS,
            lm=oracle_lm(gold, LABELS),
        )


def test_unknown_optimizer_setting(data: Any) -> None:
    train, dev, gold = data
    with pytest.raises(ConfigError, match="has no setting depth"):
        compile_program(
            "jot",
            optimizer="bootstrap",
            settings={"depth": 2},
            trainset=train,
            devset=dev,
            labels=LABELS,
            lm=oracle_lm(gold, LABELS),
        )


def test_optimizer_incompatible_with_framework(data: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from courtroom.programs import FRAMEWORKS, CourtroomProgram

    class Blind(dspy.Signature):
        """Pick a label without reading anything."""

        hint: str = dspy.InputField()
        choice: str = dspy.OutputField()

    class Coin(CourtroomProgram):
        name = "coin"
        roles = ("flipper",)

        def __init__(self, labels: Any, positions: Any = None, *, lm: Any = None, roles: Any = None) -> None:
            super().__init__(labels, positions, lm=lm, roles=roles)
            self.flipper = dspy.Predict(Blind)

        def forward(self, case: str) -> dspy.Prediction:
            return self.verdict(self.labels[0], [])

    monkeypatch.setitem(FRAMEWORKS, "coin", Coin)
    train, dev, gold = data
    for name, message in (
        ("knn", "knn is incompatible with coin.*flipper"),
        ("labeled", "labeled is incompatible"),
    ):
        with pytest.raises(ConfigError, match=message):
            compile_program(
                "coin", optimizer=name, trainset=train, devset=dev, labels=LABELS, lm=oracle_lm(gold, LABELS)
            )


def test_registry_defaults_are_json() -> None:
    for opt in OPTIMIZERS.values():
        json.dumps(dict(opt.defaults))
