"""Settle decides well, not just mechanically (SPEC §13): on generated cases whose answers are known.

Cases are 70% easy (every role right w.p. 0.95) and 30% hard (the panel near chance, 0.55; the
trial's judge 0.8), as in ``bench/settle.py``. There, a panel that agrees is mostly facing an easy
case, so settling on agreement must beat settling as many cases picked at random, and a design
chosen on dev cases must score near the best design on test cases and above a design picked at
random.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest

from courtroom.analysis import settling
from courtroom.models._concurrency import serial
from courtroom.programs import build_program
from courtroom.testing import oracle_lm

LABELS = ["True", "False"]
HARD = {"panel": 0.55, "judge": 0.8}
TRIAL = {"trial": "jot", "trial_knobs": "n_loops=1"}  # 3 calls: lawyer, prosecutor, judge


@pytest.fixture(autouse=True)
def in_order() -> Iterator[None]:
    """One call after another: each panel member gets the same draw in every run."""
    token = serial.set(True)
    yield
    serial.reset(token)


def run(
    n: int, seed: int, knobs: dict[str, Any], kind: str = "case", auroc: float | None = None
) -> list[dict[str, Any]]:
    """A settle design on ``n`` generated cases (30% hard, seeded): one record per case.

    ``auroc``: the oracle's stated confidence tells right from wrong with that AUROC.
    """
    gold = {f"{kind} {i:04d}: is the defendant liable?": LABELS[i % 2] for i in range(n)}
    hard = random.Random(seed).sample(sorted(gold), round(0.3 * n))
    lm = oracle_lm(
        gold, LABELS, accuracy=0.95, case_accuracy=dict.fromkeys(hard, HARD), seed=seed, confidence_auroc=auroc
    )
    program = build_program("settle", LABELS, lm=lm, knobs=TRIAL | knobs)
    rows = []
    for case, label in gold.items():
        before = sum(lm.engine_impl.counts.values())
        pred = program(case=case)
        fields = {k: v for k, v in pred.items() if k not in ("label", "transcript")}
        calls = sum(lm.engine_impl.counts.values()) - before
        rows.append({"gold": label, "prediction": pred.label, "fields": fields, "calls": calls})
    return rows


def settled_at_random(panel_right: list[bool], trial_right: list[bool], settled: int) -> float:
    """Mean accuracy when ``settled`` cases picked at random take the panel's label, the rest the trial's."""
    n, rng, draws = len(panel_right), random.Random(0), []
    for _ in range(200):
        pick = set(rng.sample(range(n), settled))
        draws.append(sum(panel_right[i] if i in pick else trial_right[i] for i in range(n)) / n)
    return sum(draws) / len(draws)


def accuracy(rows: list[dict[str, Any]]) -> float:
    return sum(r["prediction"] == r["gold"] for r in rows) / len(rows)


def test_replaying_an_always_try_run_is_what_each_design_gives() -> None:
    tried = run(60, 3, {"panel_size": 3, "always_try": True})
    for k, t in ((1, 1.0), (2, 1.0), (3, 2 / 3), (3, 1.0)):
        real = run(60, 3, {"panel_size": k, "threshold": t})
        replayed = settling.replay(tried, LABELS, k, t)
        assert list(replayed.right) == [r["prediction"] == r["gold"] for r in real], (k, t)
        assert replayed.calls == pytest.approx(sum(r["calls"] for r in real) / 60), (k, t)
        assert replayed.tried == pytest.approx(sum(r["fields"]["decided_by"] == "trial" for r in real) / 60)
    with pytest.raises(ValueError, match="always_try"):
        settling.replay(run(5, 3, {"panel_size": 3}), LABELS, 2, 1.0)
    with pytest.raises(ValueError, match="failed"):
        settling.replay([*tried[:3], {"id": "x", "error": "Timeout: no answer", "fields": {}}], LABELS, 2, 1.0)


@pytest.mark.parametrize(("signal", "threshold"), [("votes", 1.0), ("confidence", 0.9)])
def test_settling_on_agreement_beats_settling_as_many_cases_at_random(signal: str, threshold: float) -> None:
    n, knobs = 400, {"panel_size": 2, "signal": signal}
    settled = run(n, 1, knobs | {"threshold": threshold})
    both = run(n, 1, knobs | {"always_try": True})  # the panel's label and the trial's verdict on every case
    panel_right = [r["fields"]["panel_label"] == r["gold"] for r in both]
    trial_right = [r["prediction"] == r["gold"] for r in both]
    assert [r["fields"]["panel_label"] for r in settled] == [r["fields"]["panel_label"] for r in both]
    chosen = [r["fields"]["decided_by"] == "panel" for r in settled]
    share = sum(chosen) / n
    assert 0.6 < share < 0.9, "the panel agrees on most cases, not all"
    at_random = settled_at_random(panel_right, trial_right, sum(chosen))
    # Under the model: 0.904 on agreement against 0.846 at random.
    assert accuracy(settled) >= at_random + 0.025, (accuracy(settled), at_random)
    on_settled = sum(p for p, c in zip(panel_right, chosen, strict=True) if c) / sum(chosen)
    assert on_settled >= sum(panel_right) / n + 0.05, "the cases settled are the ones the panel gets right"


def test_a_design_chosen_on_dev_cases_is_near_the_best_on_test_cases() -> None:
    budget = 3.5  # calls per case: a panel of 2 with its trials fits, a panel of 3 that tries does not
    dev = run(300, 11, {"panel_size": 5, "always_try": True}, kind="dev case")
    test = run(300, 12, {"panel_size": 5, "always_try": True})
    chosen = settling.choose(dev, LABELS, max_calls=budget)
    assert chosen is not None and chosen.calls <= budget
    fits = [d for d in settling.designs(test, LABELS) if d.calls <= budget]
    assert len(fits) >= 3, "a choice to make"
    scored = settling.replay(test, LABELS, chosen.panel_size, chosen.threshold)
    best = max(d.accuracy for d in fits)
    at_random = sum(d.accuracy for d in fits) / len(fits)
    assert scored.accuracy >= best - 0.015, (chosen, best)
    assert scored.accuracy >= at_random + 0.025, (scored.accuracy, at_random)
    assert scored.calls <= budget + 0.2, "the dev calls were a fair estimate of the test calls"
    assert settling.choose(dev, LABELS, max_calls=0.5) is None, "nothing fits below one call"


def test_replaying_the_confidence_signal_is_what_each_design_gives() -> None:
    tried = run(60, 4, {"panel_size": 3, "signal": "confidence", "always_try": True}, auroc=0.8)
    assert all(len(r["fields"]["panel_p"]) == 3 for r in tried)
    signals = {d.signal for d in settling.designs(tried, LABELS)}
    assert signals == {"votes", "confidence"}
    for k, t in ((1, 0.7), (2, 0.66), (3, 0.6)):
        real = run(60, 4, {"panel_size": k, "threshold": t, "signal": "confidence"}, auroc=0.8)
        replayed = settling.replay(tried, LABELS, k, t, signal="confidence")
        assert list(replayed.right) == [r["prediction"] == r["gold"] for r in real], (k, t)
        assert replayed.calls == pytest.approx(sum(r["calls"] for r in real) / 60), (k, t)
        assert 0 < replayed.tried < 1, "some settled, some tried"
    with pytest.raises(ValueError, match="signal=confidence"):
        settling.replay(run(10, 4, {"panel_size": 2, "always_try": True}), LABELS, 1, 0.7, signal="confidence")


@pytest.mark.parametrize("auroc", [0.85, 0.5])
def test_one_answer_settles_on_its_stated_confidence_only_when_that_confidence_is_informative(auroc: float) -> None:
    """A panel of one has no votes to agree on: what it settles must come from its confidence.

    With an informative confidence (AUROC 0.85) the answers it settles are right more often than
    its answers overall, and the design beats settling as many cases picked at random; with an
    uninformative one (AUROC 0.5) it does neither (the threshold alone does not learn).
    """
    n = 400
    both = run(n, 5, {"panel_size": 1, "signal": "confidence", "always_try": True}, auroc=auroc)
    panel_right = [r["fields"]["panel_label"] == r["gold"] for r in both]
    trial_right = [r["prediction"] == r["gold"] for r in both]
    design = next(d for d in settling.designs(both, LABELS, "confidence") if 0.6 <= 1 - d.tried <= 0.75)
    agreement = [r["fields"]["agreement"] for r in both]
    settled = [a >= design.threshold for a in agreement]
    share = sum(settled) / n
    on_settled = sum(p for p, s in zip(panel_right, settled, strict=True) if s) / sum(settled)
    at_random = settled_at_random(panel_right, trial_right, sum(settled))
    overall = sum(panel_right) / n
    if auroc > 0.5:
        assert on_settled >= overall + 0.05, (on_settled, overall, share)
        assert design.accuracy >= at_random + 0.025, (design.accuracy, at_random)
    else:
        assert abs(on_settled - overall) < 0.05, (on_settled, overall, share)
        assert abs(design.accuracy - at_random) < 0.025, (design.accuracy, at_random)


def _records(n: int, rng: random.Random, trial_calls: int = 9) -> list[dict[str, Any]]:
    """Always-try records of a panel of one stating a confidence (higher when right), drawn directly."""
    rows = []
    for i in range(n):
        gold = LABELS[i % 2]
        right = rng.random() < 0.75
        said = gold if right else LABELS[1 - i % 2]
        p = min(0.999, max(0.5, rng.gauss(0.8 if right else 0.65, 0.1)))
        dist = {said: p, next(lab for lab in LABELS if lab != said): 1 - p}
        verdict = gold if rng.random() < 0.9 else LABELS[1 - i % 2]
        fields = {"panel_votes": [said], "panel_p": [dist], "decided_by": "trial"}
        rows.append({"gold": gold, "prediction": verdict, "fields": fields, "calls": 1 + trial_calls})
    return rows


def test_the_margin_keeps_a_dev_chosen_design_within_the_budget_on_new_cases() -> None:
    """Chosen on dev among hundreds of thresholds, a design just fits there and overspends on new
    cases often; a margin on the difference of the two means (``new_cases``) holds the budget on
    nearly every new set."""
    rng = random.Random(7)
    budget, n, reps = 4.05, 200, 100
    over: dict[str, int] = {"none": 0, "dev SE": 0, "difference SE": 0}
    for _ in range(reps):
        dev, new = _records(n, rng), _records(n, rng)
        for name, kw in (
            ("none", {}),
            ("dev SE", {"margin": 1.645}),
            ("difference SE", {"margin": 1.645, "new_cases": n}),
        ):
            d = settling.choose(dev, LABELS, max_calls=budget, signal="confidence", **kw)
            assert d is not None
            on_new = settling.replay(new, LABELS, d.panel_size, d.threshold, "confidence")
            over[name] += on_new.calls > budget
    assert over["none"] >= 0.2 * reps, over
    assert over["difference SE"] <= 0.1 * reps and over["difference SE"] <= over["dev SE"], over
