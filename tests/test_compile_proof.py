"""Compile proves its gain on held-out cases: every optimizer learns on the learnable oracle, none on no signal."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

import dspy
import pytest

from courtroom.data.tasks import load_task
from courtroom.optimize.compile import compile_program
from courtroom.optimize.proof import CompileResult, Gain, gain, newcombe
from courtroom.testing import learnable_lm, proposer_lm

LABELS = ["True", "False"]
PHRASE = "weigh both sides"
DEMO_OPTIMIZERS = {
    "labeled": {"k": 2},
    "bootstrap": {"max_bootstrapped_demos": 2},
    "bootstrap-rs": {"num_candidate_programs": 2},
    "knn": {"k": 2},
}
INSTRUCTION_OPTIMIZERS = {
    # MIPROv2 without demos: it can only learn through the instruction it picks for each role.
    "mipro": {"auto": None, "num_candidates": 3, "num_trials": 6, "minibatch": False, "max_bootstrapped_demos": 0},
    "copro": {"breadth": 3, "depth": 1},
    "gepa": {"auto": None, "max_metric_calls": 150, "reflection_minibatch_size": 5},
}
DECIDER = {"zero-shot": "classifier", "jot": "judge"}


@pytest.fixture(scope="module")
def splits() -> tuple[list[dspy.Example], list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=20).examples
    dev = load_task("boolean_expressions", split="dev", limit=12).examples
    test = load_task("boolean_expressions", split="test", limit=30).examples
    return train, dev, test, {e.case: e.label for e in train + dev + test}


@pytest.mark.parametrize("optimizer", [*DEMO_OPTIMIZERS, *INSTRUCTION_OPTIMIZERS])
def test_every_optimizer_raises_held_out_accuracy(optimizer: str, splits: Any) -> None:
    for framework in ("zero-shot", "jot"):
        learns_on_held_out_cases(framework, optimizer, splits)


def learns_on_held_out_cases(framework: str, optimizer: str, splits: Any) -> None:
    train, dev, test, gold = splits
    decider = DECIDER[framework]
    through_demos = optimizer in DEMO_OPTIMIZERS
    # Only one way to learn: demo optimizers through demos, instruction optimizers through the phrase.
    lm = learnable_lm(
        gold,
        LABELS,
        accuracy=0.5,
        with_demos={decider: 0.95} if through_demos else None,
        phrase=None if through_demos else {decider: (PHRASE, 0.95)},
    )
    helper = proposer_lm([f"{PHRASE.capitalize()}, then decide.", "Be brief."])
    result = compile_program(
        framework,
        optimizer=optimizer,
        settings={**DEMO_OPTIMIZERS, **INSTRUCTION_OPTIMIZERS}[optimizer],
        knobs={"n_loops": 1} if framework == "jot" else None,
        trainset=train,
        devset=dev,
        testset=test,
        labels=LABELS,
        lm=lm,
        prompt_lm=helper,
    )
    assert isinstance(result, CompileResult) and result.test is not None
    held_out = result.test
    print(f"{framework} + {optimizer}: {held_out.sentence()}")
    assert held_out.after.accuracy - held_out.before.accuracy >= 0.25, f"{framework}: {held_out.sentence()}"
    assert held_out.verdict == "gain" and held_out.ci_low > 0 and held_out.p_value < 0.05
    assert held_out.before.n == held_out.after.n == len(test)
    # What was learned reached the deciding role: in its saved state, and in the prompts it received on test.
    after_calls = lm.engine_impl.calls[-len(test) * (3 if framework == "jot" else 1) :]
    decided = [(d, p) for r, d, p in after_calls if r == decider]
    assert len(decided) == len(test), "the deciding role answered every held-out case after compiling"
    predictor = dict(result.program.named_predictors())[decider]
    if through_demos:
        assert all(d > 0 for d, _ in decided), "every held-out prompt of the deciding role held demos"
        assert predictor.demos or getattr(result.program, "knn_precedents", None) is not None
    else:
        assert all(p for _, p in decided), "every held-out prompt of the deciding role held the phrase"
        assert PHRASE in predictor.signature.instructions.lower()
        assert helper.engine_impl.proposals > 0


def test_no_signal_claims_few_gains_and_always_with_an_interval(splits: Any) -> None:
    """100 seeds of nothing learnable: a significant held-out gain at most 10 times (5% level plus sampling error)."""
    train, dev, test, gold = splits
    claims, verdicts = 0, []
    for seed in range(100):
        lm = learnable_lm(gold, LABELS, accuracy=0.6, seed=seed)
        result = compile_program(
            "zero-shot",
            optimizer="labeled",
            settings={"k": 2},
            trainset=train[:2],
            devset=dev[:4],
            testset=test[:20],
            labels=LABELS,
            lm=lm,
            seed=seed,
            concurrency=2,
        )
        held_out = result.test
        assert held_out is not None
        sentence = held_out.sentence()
        verdicts.append(held_out.verdict)
        if "gain on held-out cases:" in sentence and not sentence.startswith("no "):
            claims += 1
            assert f"[{held_out.ci_low:+.2f}, {held_out.ci_high:+.2f}]" in sentence and "p=" in sentence
        assert "[" in sentence and "p=" in sentence, "every sentence carries its interval and p"
    print(f"no-signal oracle: {claims} of 100 compiles claimed a significant held-out gain")
    assert claims == verdicts.count("gain") <= 10


def test_worse_on_dev_is_said_recorded_and_keep_better_keeps_the_start(splits: Any, caplog: Any) -> None:
    train, dev, test, gold = splits

    def run(keep_better: bool) -> CompileResult:
        # Demos hurt this classifier: the optimized program is worse on dev.
        lm = learnable_lm(gold, LABELS, accuracy=0.9, with_demos={"classifier": 0.2})
        return compile_program("zero-shot", optimizer="labeled", settings={"k": 2}, trainset=train, devset=dev,
                               testset=test[:10], labels=LABELS, lm=lm, keep_better=keep_better)  # fmt: skip

    with caplog.at_level(logging.WARNING, logger="courtroom.optimize.compile"):
        worse = run(keep_better=False)
    assert worse.worse_on_dev and worse.kept == "optimized" and worse.after["accuracy"] < worse.before["accuracy"]
    assert "scores lower on dev" in caplog.text and "--keep-better" in caplog.text
    assert worse.metadata["proof"]["worse_on_dev"] is True and worse.test is not None
    assert worse.test.verdict == "loss" and worse.test.sentence().startswith("loss on held-out cases: -")
    assert dict(worse.program.named_predictors())["classifier"].demos

    kept = run(keep_better=True)
    assert kept.worse_on_dev and kept.kept == "start" and kept.metadata["proof"]["kept"] == "start"
    assert not dict(kept.program.named_predictors())["classifier"].demos, "the starting program, without demos"
    assert kept.test is not None and kept.test.difference == 0 and kept.test.after == kept.test.before
    # What the command prints: the start alone on test, not a comparison of it with itself (+0.00 [-0.00, +0.00]).
    from rich.console import Console

    from courtroom.cli.compile import proof_lines, scores_table

    console = Console(width=100, record=True)
    console.print(scores_table(kept, "zero-shot + labeled", 100))
    table = console.export_text()
    assert "test (kept start)" in table and "test after" not in table and "-0.00" not in table, table
    assert proof_lines(kept)[0].startswith("held-out test: the starting program was kept (--keep-better)")


def test_result_is_frozen_and_typed(splits: Any) -> None:
    train, dev, test, gold = splits
    result = compile_program("zero-shot", optimizer="labeled", settings={"k": 1}, trainset=train, devset=dev[:3],
                             labels=LABELS, lm=learnable_lm(gold, LABELS))  # fmt: skip
    assert result.test is None and "no test split" in result.metadata["proof"]["test_note"]
    assert isinstance(result.dev, Gain) and set(result.gains) == {"dev"}
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.kept = "start"  # type: ignore[misc]


def test_test_cases_seen_in_train_or_dev_are_left_out(splits: Any) -> None:
    train, dev, test, gold = splits
    result = compile_program("zero-shot", optimizer="labeled", settings={"k": 1}, trainset=train, devset=dev[:3],
                             testset=[*train[:2], *test[:3]], labels=LABELS, lm=learnable_lm(gold, LABELS))  # fmt: skip
    assert result.test is not None and result.test.before.n == 3
    assert result.metadata["task"]["test_ids"] == [str(e.id) for e in test[:3]]
    assert "2 test case(s) also in train or dev" in result.metadata["proof"]["test_note"]


class _R:
    def __init__(self, i: int, right: bool) -> None:
        self.id, self.gold = str(i), "True"
        self.prediction = "True" if right else "False"


def test_gain_figures_by_hand() -> None:
    # 30 cases: 12 right by both, 2 only before, 10 only after, 6 by neither.
    before = [_R(i, i < 14) for i in range(30)]
    after = [_R(i, i < 12 or 14 <= i < 24) for i in range(30)]
    g = gain("test", before, after, LABELS)
    assert (g.only_before, g.only_after) == (2, 10) and g.difference == pytest.approx(8 / 30, abs=1e-4)
    # Exact McNemar: 2 of 12 discordant at 1/2, two-sided.
    assert g.p_value == pytest.approx(0.0386, abs=1e-4)
    low, high = newcombe(12, 2, 10, 6)
    assert (g.ci_low, g.ci_high) == (round(low, 4), round(high, 4)) and 0 < low < g.difference < high
    assert g.significant and g.sentence() == f"gain on held-out cases: +0.27 [{low:+.2f}, {high:+.2f}] (p=0.039)"
    same = gain("dev", before, before, LABELS)
    assert same.p_value == 1 and same.verdict == "none" and same.sentence().startswith("no significant gain on dev")


def test_newcombe_adjusts_phi_as_published() -> None:
    # Cavo et al. (2012), the paired example of Fagerland, Lydersen and Laake's book, as R's
    # contingencytables tests Newcombe_square_and_add_CI_paired_2x2 on it: -0.0621 [-0.1186, -0.0046].
    # Its first classification is our "after": 59 both, 6 only after, 16 only before, 80 neither.
    low, high = newcombe(59, 16, 6, 80)
    assert (round(low, 4), round(high, 4)) == (-0.1186, -0.0046)
    # ad - bc = 5 > 0 but below n/2 = 10.5 (Bentur et al. 2009, the book's other example): phi is 0,
    # the two Wilson intervals' errors add in squares.
    from courtroom.eval.metrics import wilson

    (l1, u1), (l2, u2) = wilson(2 / 21, 21), wilson(8 / 21, 21)
    low, high = newcombe(1, 7, 1, 12)
    assert low == pytest.approx(-6 / 21 - ((2 / 21 - l1) ** 2 + (u2 - 8 / 21) ** 2) ** 0.5)
    assert high == pytest.approx(-6 / 21 + ((8 / 21 - l2) ** 2 + (u1 - 2 / 21) ** 2) ** 0.5)
    # Two programs that agree on every case: a real interval, not [0, 0].
    low, high = newcombe(12, 0, 0, 12)
    assert low < -0.05 and high > 0.05 and low == pytest.approx(-high)
    same = gain("dev", [_R(i, i < 12) for i in range(24)], [_R(i, i < 12) for i in range(24)], LABELS)
    assert same.difference == 0 and same.ci_low < 0 < same.ci_high


def test_the_command_prints_and_records_the_proof(
    splits: Any, tmp_path: Any, capsys: Any, monkeypatch: Any, caplog: Any
) -> None:
    import json

    from courtroom.cli import main
    from courtroom.testing import FakeServer

    *_, gold = splits

    def compile_cli(engine: Any, name: str, *extra: str) -> tuple[str, str, dict[str, Any]]:
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{name}"))  # no answer of another oracle
        with FakeServer(engine=engine) as server:
            args = ["compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=2", "--train-limit", "4",
                    "--dev-limit", "8", "--test-limit", "20", "--lm", "openai/classifier", "--api-base", server.url,
                    "-o", str(tmp_path / name), *extra]  # fmt: skip
            code = main(args)
        out, err = capsys.readouterr()
        assert code == 0, err
        return out, err, json.loads((tmp_path / name).read_text())["metadata"]["courtroom"]

    learns = learnable_lm(gold, LABELS, 0.5, with_demos={"classifier": 0.95}).engine_impl
    out, err, meta = compile_cli(learns, "learns.json")
    proof = meta["proof"]["test"]
    assert proof["verdict"] == "gain" and proof["sentence"].startswith("gain on held-out cases: +")
    assert proof["sentence"] in out.splitlines()  # the table above it wraps with the terminal's width
    assert meta["scores"]["test"]["after"]["n"] == 20 and len(meta["task"]["test_ids"]) == 20
    assert not set(meta["task"]["test_ids"]) & set(meta["task"]["train_ids"] + meta["task"]["dev_ids"])
    folder = tmp_path / "learns-test-after"
    assert json.loads((folder / "meta.json").read_text())["compile_proof"]["sentence"] == proof["sentence"]

    hurts = learnable_lm(gold, LABELS, 0.9, with_demos={"classifier": 0.1}).engine_impl
    with caplog.at_level(logging.WARNING, logger="courtroom.optimize.compile"):  # stderr, outside pytest
        out, err, meta = compile_cli(hurts, "hurts.json", "--keep-better")
    assert "scores lower on dev" in caplog.text and "keeping the starting program" in caplog.text
    assert "kept the starting program" in out and meta["proof"]["kept"] == "start"
    assert (
        meta["proof"]["worse_on_dev"] and not json.loads((tmp_path / "hurts.json").read_text())["classifier"]["demos"]
    )


def test_own_data_without_a_test_share_compiles_and_says_there_is_no_proof(tmp_path: Any, caplog: Any) -> None:
    rows = "".join(f"{'good' if i % 2 else 'bad'} review number {i},{'pos' if i % 2 else 'neg'}\n" for i in range(10))
    (tmp_path / "r.csv").write_text("text,label\n" + rows)
    custom = {"dataset": str(tmp_path / "r.csv"), "text_fields": ["text"], "label_field": "label",
              "labels": ["pos", "neg"], "config": None, "hub_split": "train"}  # fmt: skip
    gold = {f"{'good' if i % 2 else 'bad'} review number {i}": "pos" if i % 2 else "neg" for i in range(10)}
    with caplog.at_level(logging.WARNING, logger="courtroom.optimize.compile"):
        result = compile_program("zero-shot", task="custom:r", optimizer="labeled", settings={"k": 1}, train=6,
                                 dev=4, dataset=custom, splits={"sizes": [6, 4, 0], "files": {}},
                                 lm=learnable_lm(gold, ["pos", "neg"]))  # fmt: skip
    assert result.test is None and "no held-out test split" in caplog.text
    assert result.metadata["proof"]["test"] is None and result.metadata["task"]["test_ids"] == []
