"""The settle bench's bound is a bound, and its best policy is what it says (bench/_settle_model.py).

The bench says no settle design can beat the full trial by more than the bound under its
difficulty model, so the bound must hold against every fixed design, give known values where the
answer is known, and its policies must score what a simulation of them scores.
"""

from __future__ import annotations

import importlib.util
import random
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_settle_model", BENCH / "_settle_model.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["_settle_model"] = module
    spec.loader.exec_module(module)
    return module


sm = _load()
TRIAL = 9
DEFAULT = [sm.Kind(0.7, 0.95, 0.95), sm.Kind(0.3, 0.55, 0.80)]


@pytest.mark.parametrize("budget", [0.35, 0.45, 0.65])
def test_no_fixed_design_beats_the_bound(budget: float) -> None:
    model = sm.Model(0.95, 0.55, 0.80, 0.3, TRIAL)
    b = sm.bound(DEFAULT, budget * TRIAL, TRIAL)
    assert b.best_accuracy <= b.accuracy + 1e-12 and b.best_calls <= budget * TRIAL + 1e-9
    fits = 0
    for k in range(1, 8):
        for t in sorted({max(j, k - j) / k for j in range(k + 1)}):
            acc, calls = model.settle(k, t)
            if calls <= budget * TRIAL:
                fits += 1
                assert acc <= b.accuracy + 1e-12, (k, t, acc, b)
    assert fits >= 3


def test_the_bound_gives_known_answers() -> None:
    one = [sm.Kind(1.0, 0.7, 0.5)]  # the trial says nothing: one answer is all one call buys
    assert sm.bound(one, 1.0, TRIAL).accuracy == pytest.approx(0.7, abs=1e-9)
    perfect = [sm.Kind(1.0, 0.6, 1.0)]  # a trial always right, affordable on every case
    assert sm.bound(perfect, TRIAL, TRIAL).accuracy == pytest.approx(1.0, abs=1e-9)
    # three answers' majority (0.784) is reachable within 3 calls, asking the third only on a split
    assert sm.bound(one, 3.0, TRIAL).accuracy >= 0.784 - 1e-9


def test_where_settling_pays_the_bound_says_so() -> None:
    """Under the bench's model the bound barely clears the full trial at 45%; where the trial is no
    better than one answer on easy cases it clears it by far."""
    full = 0.7 * 0.95 + 0.3 * 0.80
    assert sm.bound(DEFAULT, 0.45 * TRIAL, TRIAL).accuracy - full < 0.005
    easy_trial_no_better = [sm.Kind(0.7, 0.9, 0.9), sm.Kind(0.3, 0.55, 0.80)]
    full2 = 0.7 * 0.9 + 0.3 * 0.80
    assert sm.bound(easy_trial_no_better, 0.45 * TRIAL, TRIAL).best_accuracy - full2 > 0.015


def test_a_policy_scores_what_a_simulation_of_it_scores() -> None:
    best = sm._policy(DEFAULT, TRIAL, 0.0115, 15)
    acc, calls = sm._evaluate(DEFAULT, TRIAL, best)
    rng, n, right, spent = random.Random(0), 40_000, 0, 0
    for _ in range(n):
        kind = DEFAULT[0] if rng.random() < DEFAULT[0].share else DEFAULT[1]
        x = y = 0  # votes for the gold label (A) and the other
        while True:
            action = best(x, y)[1]
            if action == "ask":
                spent += 1
                if rng.random() < kind.q:
                    x += 1
                else:
                    y += 1
                continue
            post = sm.weights(DEFAULT, x, y)
            if action == "trial":
                spent += TRIAL
                says_a = rng.random() < kind.r
                a = sum(pa * (k.r if says_a else 1 - k.r) for k, pa, _ in post)
                b = sum(pb * ((1 - k.r) if says_a else k.r) for k, _, pb in post)
            else:
                a, b = sum(p for _, p, _ in post), sum(p for _, _, p in post)
            right += 1 if a > b else (rng.random() < 0.5) if a == b else 0
            break
    assert right / n == pytest.approx(acc, abs=3 * (acc * (1 - acc) / n) ** 0.5)
    assert spent / n == pytest.approx(calls, rel=0.03)


def test_the_confidence_model_is_what_the_oracle_draws() -> None:
    """One answer settling on its stated confidence: the closed form against the oracle's own draws."""
    from statistics import NormalDist

    auroc, t = 0.8, 0.75
    d = 2**0.5 * NormalDist().inv_cdf(auroc)
    rng, n, right, spent = random.Random(1), 100_000, 0, 0
    for _ in range(n):
        kind = DEFAULT[0] if rng.random() < DEFAULT[0].share else DEFAULT[1]
        correct = rng.random() < kind.q
        stated = 0.5 + 0.5 * NormalDist().cdf(rng.gauss(d / 2 if correct else -d / 2, 1.0))  # as the oracle states it
        spent += 1
        if stated >= t:
            right += correct
        else:
            spent += TRIAL
            right += rng.random() < kind.r
    acc, calls = sm.expected_confidence_settle(DEFAULT, auroc, t, TRIAL)
    assert right / n == pytest.approx(acc, abs=0.005) and spent / n == pytest.approx(calls, abs=0.05)
    # No information: settling on it is settling at random, so it cannot beat the full trial at 45%.
    full = sum(k.share * k.r for k in DEFAULT)
    assert sm.best_confidence(DEFAULT, 0.5, 0.45 * TRIAL, TRIAL)[0] < full
    need = sm.auroc_to_match(DEFAULT, full, 0.45 * TRIAL, TRIAL)
    assert 0.6 < need < 0.9 and sm.best_confidence(DEFAULT, need, 0.45 * TRIAL, TRIAL)[0] >= full
