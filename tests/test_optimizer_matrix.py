"""Contract: every registered optimizer compiles every registered framework, or refuses first.

One test per (framework, optimizer) pair, on the fakes. "Refuses first" means a one-line
:class:`ConfigError` naming the fix, raised before any model request. The sizes are small, and
DSPy is told to stop at its first failed example (``max_errors=1``): at default sizes DSPy stops
past ten failures of twenty dev examples, so a candidate that fails every example (random
search's zero-shot copy of CoT, once) passed at small sizes and failed at default ones. With
``max_errors=1`` any failed example inside an optimizer fails its pair here.
"""

from __future__ import annotations

from typing import Any

import dspy
import pytest

from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.optimize.compile import OPTIMIZERS, compile_program
from courtroom.programs import FRAMEWORKS
from courtroom.testing import oracle_lm, proposer_lm

LABELS = ["True", "False"]
SMALL = {
    "labeled": {"k": 2},
    "bootstrap": {"max_bootstrapped_demos": 2},
    "bootstrap-rs": {"num_candidate_programs": 1},
    "knn": {"k": 2},
    "mipro": {"auto": None, "num_candidates": 2, "num_trials": 1, "minibatch": False},
    "copro": {"breadth": 2, "depth": 1},
    "gepa": {"auto": None, "max_metric_calls": 6, "reflection_minibatch_size": 2},
}
"""The cheapest budget of each optimizer (the refused ones take none)."""
FEWEST = {
    "jot": {"n_loops": 1},
    "courtroom-llm": {"n_judges": 1},
    "debate-feedback": {"n_rounds": 1, "k_samples": 2},
    "self-consistency": {"k_samples": 2},
    "khan-debate": {"n_rounds": 1},
    "parallel-vote": {"n_models": 2},
    "settle": {"panel_size": 2, "trial_knobs": "n_judges=1"},
}
"""Knobs that keep a framework's calls per case few; every other knob (demos, precedents) at its default."""


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=3).examples
    dev = load_task("boolean_expressions", split="dev", limit=1).examples
    return train, dev, {e.case: e.label for e in train + dev}


@pytest.mark.parametrize("optimizer", list(OPTIMIZERS))
@pytest.mark.parametrize("framework", list(FRAMEWORKS))
def test_every_optimizer_compiles_every_framework_or_refuses_first(framework: str, optimizer: str, data: Any) -> None:
    train, dev, gold = data
    lm = oracle_lm(gold, LABELS, accuracy=0.8)
    helper = proposer_lm(["Weigh the case itself."])
    knobs = {k: v for k, v in FEWEST.get(framework, {}).items() if k in FRAMEWORKS[framework].knobs()}
    try:
        with dspy.context(max_errors=1):  # DSPy stops at the first failed example (see the module's docstring)
            res = compile_program(
                framework, optimizer=optimizer, settings=SMALL.get(optimizer), knobs=knobs, trainset=train,
                devset=dev, labels=LABELS, lm=lm, prompt_lm=helper, concurrency=2,
            )  # fmt: skip
    except ConfigError as exc:
        asked = sum(lm.engine_impl.counts.values()) + helper.engine_impl.calls
        assert asked == 0, f"{framework} + {optimizer} refused after {asked} request(s): {exc}"
        line = str(exc)
        assert "\n" not in line and ("use " in line or "pass " in line), f"no fix named: {line}"
        return
    assert res.metadata["optimizer"]["name"] == optimizer
    assert res.after["failures"] == 0 and res.after["n"] == len(dev)
    assert res.program(case=train[0].case).label in LABELS


class _Broken(dspy.Module):
    """A program every example of which fails with ``error``."""

    def __init__(self, error: Exception) -> None:
        super().__init__()
        self.error = error

    def forward(self, case: str) -> dspy.Prediction:
        raise self.error


@pytest.mark.parametrize(
    ("error", "shown"),
    [
        (ConfigError("cot: no demos; set k_shots=0"), "optimizer broken stopped after 1 failed example(s); the first: "
                                                      "cot: no demos; set k_shots=0"),
        (ZeroDivisionError("division by zero"), "ZeroDivisionError: division by zero"),
    ],
)  # fmt: skip
def test_a_failure_inside_an_optimizer_shows_its_cause(error: Exception, shown: str, data: Any) -> None:
    """DSPy's bare "Execution cancelled" is replaced by the first failed example's error, in the one line."""
    from courtroom.cli._failures import describe, unexpected
    from courtroom.optimize.optimizers import OPTIMIZERS as REGISTRY
    from courtroom.optimize.optimizers import Optimizer, register

    train, dev, gold = data

    def evaluate_broken(ctx: Any, student: Any, trainset: Any) -> Any:
        dspy.Evaluate(devset=dev, metric=lambda *a: 1, max_errors=1, num_threads=1)(_Broken(error))
        return student

    register(Optimizer("broken", "evaluates a program that always fails", run=evaluate_broken))
    try:
        with pytest.raises(Exception) as raised:
            compile_program("zero-shot", optimizer="broken", trainset=train, devset=dev, labels=LABELS,
                            lm=oracle_lm(gold, LABELS, accuracy=0.8))  # fmt: skip
    finally:
        REGISTRY.pop("broken")
    assert "Execution cancelled" not in str(raised.value)
    _, line = describe(raised.value) or unexpected(raised.value)
    assert shown in line and "\n" not in line
