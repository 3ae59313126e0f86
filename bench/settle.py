"""Settle, then trial, against the full trial and a majority vote at equal calls, on the oracle fake.

**The difficulty model.** ``--cases`` generated binary cases (gold labels alternate), of which a
seeded ``--hard`` share (30%) is *hard* and the rest *easy*. The oracle fake
(:func:`courtroom.testing.oracle_lm` with ``case_accuracy``) answers every label a role gives
correctly with a fixed probability per role and per kind of case, one seeded draw per call:

* easy cases: every role is right with probability 0.95 (``--easy``);
* hard cases: single answers, the settle panel's and the majority vote's (roles ``panel`` and
  ``classifier``), are right with probability 0.55 (``--hard-single``, near chance); the trial's
  judge, who has heard the debate, with 0.80 (``--hard-judge``).

The fake does not reason, so "the trial helps on hard cases" is an input of this model (the
judge's 0.80), not a finding: what the bench measures is what each design does with such
answers, its calls and its accuracy. The full trial is JoT with the ``jot-paper`` preset (3
rounds, 9 calls per case); its verdict is the last judgment, one independent draw.

**The settle design is chosen on dev cases, as a user would.** A separate set of ``--dev-cases``
generated cases (default: ``--cases``; their own texts, hard cases and oracle seed, the test
seed + 1000) is run once by a settle design with a panel of ``--dev-panel`` that tries every
case; replaying it (:mod:`courtroom.analysis.settling`) prices every panel size and threshold,
and the most accurate design within ``--budget`` (45%) of the trial's calls on dev is the one
scored on the test cases (``--panel K --threshold T`` fixes the design instead). It convenes that same JoT, not
shown the panel's answers, so a tried case's prompts and draws are exactly the full trial's: the
comparison is paired. The matched majority vote is ``parallel-vote`` with as many answers per
case as the settle design spends calls (rounded).

**Which standard error.** Both designs answer the same cases, so the bench compares them by the
paired difference of their accuracies, case by case, and its standard error (the SD of the
per-case differences over sqrt(n)); "within one standard error" means settle - full >= -1 such
SE. The full trial's own binomial SE is printed beside it. Beside each measured figure the bench
prints its expectation under the model (binomial sums), and over ``--seeds`` seeds how often each
target is met, so a reader can tell the design from the sampling noise of one seed.

**What any design can reach.** The bench prints the most accurate any design can be in expectation
under the model within the budget (``bench/_settle_model.py``: exact, for every policy that sees panel
answers one at a time and at most one trial's verdict, escalating panels and overruling the verdict
included). Under the default model it barely clears the full trial at 45% of the calls (0.906 vs
0.905), so there "within one SE" on one seed is a matter of sampling: the figures say so rather
than pick a seed.

**If a stated confidence were informative.** Real models state a confidence that tells right from
wrong answers to some degree (the oracle's ``confidence_auroc``; by default it states 0.9 whatever it
answers). For each ``--aurocs`` value the bench chooses on dev among both signals (``votes`` and
``confidence``; the dev run keeps each member's stated probabilities) and runs the target again,
over ``--confidence-seeds`` seeds, beside the AUROC at which a one-answer confidence design matches
the full trial in expectation. The trial and the vote read no confidence, so only the settle design
changes.

    python bench/settle.py [--cases 500] [--seed 0] [--seeds 10] [--budget 0.45] [--dev-cases N]
                            [--panel K --threshold T] [--aurocs 0.7,0.8,0.9] [--confidence-seeds 1]
                            [--margin SE]
"""

from __future__ import annotations

import argparse
import itertools
import math
import os
import random
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _settle_model import Model, auroc_to_match, bound, expected_confidence_settle  # noqa: E402

from courtroom.analysis import settling  # noqa: E402
from courtroom.analysis.flips import flip_lines, flip_matrix  # noqa: E402
from courtroom.models._concurrency import serial  # noqa: E402
from courtroom.programs import build_program  # noqa: E402
from courtroom.programs.presets import get_preset  # noqa: E402
from courtroom.testing import oracle_lm  # noqa: E402

LABELS = ["True", "False"]
TRIAL = "jot-paper"
TRIAL_CALLS = 9  # 3 rounds of lawyer, prosecutor and judge


DEV = 1000
"""The dev cases of test seed ``s`` are generated with seed ``s + DEV``."""


def make_cases(n: int, hard_share: float, seed: int, kind: str = "case") -> tuple[dict[str, str], set[str]]:
    """``n`` cases with gold labels (fixed-width ids: no case text contains another) and the hard ones."""
    gold = {f"{kind} {i:04d}: is the defendant liable under the contract?": LABELS[i % 2] for i in range(n)}
    hard = set(random.Random(seed).sample(sorted(gold), round(hard_share * n)))
    return gold, hard


def run(name: str, knobs: dict[str, Any], gold: dict[str, str], accuracy: dict[str, Any], seed: int) -> dict:
    """One design on every case, on a fresh oracle: per-case rows, correctness and calls."""
    lm = oracle_lm(
        gold,
        LABELS,
        accuracy=accuracy["all"],
        case_accuracy=accuracy["cases"],
        seed=seed,
        confidence_auroc=accuracy.get("auroc"),
    )
    program = build_program(name, LABELS, lm=lm, knobs=knobs)
    rows = []
    for case, label in gold.items():
        before = sum(lm.engine_impl.counts.values())
        pred = program(case=case)
        fields = {k: v for k, v in pred.items() if k not in ("label", "transcript")}
        rows.append(
            {
                "gold": label,
                "prediction": pred.label,
                "fields": fields,
                "calls": sum(lm.engine_impl.counts.values()) - before,
            }
        )
    right = [r["prediction"] == r["gold"] for r in rows]
    return {
        "rows": rows,
        "right": right,
        "accuracy": sum(right) / len(right),
        "calls": sum(r["calls"] for r in rows) / len(rows),
        "tried": sum(r["fields"].get("decided_by") == "trial" for r in rows) / len(rows),
    }


def se(p: float, n: int) -> float:
    """Standard error of a proportion."""
    return math.sqrt(p * (1 - p) / n)


def in_se(d: float, d_se: float) -> float:
    """``d`` in standard errors (a zero SE: all differences equal)."""
    return d / d_se if d_se else 0.0 if d == 0 else math.copysign(math.inf, d)


def paired(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, float]:
    """Mean difference a - b over the same cases and its standard error."""
    d = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    return mean, math.sqrt(var / len(d))


def setup(
    args: argparse.Namespace, seed: int, kind: str = "case", auroc: float | None = None
) -> tuple[dict[str, str], set[str], dict[str, Any]]:
    """The cases, the hard ones and the oracle's accuracies (and confidence's AUROC) for ``seed``."""
    gold, hard = make_cases(args.cases, args.hard, seed, kind)
    single = {"panel": args.hard_single, "classifier": args.hard_single, "judge": args.hard_judge}
    return gold, hard, {"all": {"default": args.easy}, "cases": dict.fromkeys(hard, single), "auroc": auroc}


def settle_knobs(k: int, t: float, signal: str = "votes") -> dict[str, Any]:
    return {"panel_size": k, "threshold": t, "signal": signal, "trial": "jot", "trial_preset": TRIAL}


def choose_on_dev(args: argparse.Namespace, seed: int, auroc: float | None = None) -> settling.Design:
    """The most accurate design within the budget on the dev cases of test seed ``seed``.

    With an informative confidence (``auroc``) the dev run states it, and both signals compete.
    """
    dev = argparse.Namespace(**vars(args) | {"cases": args.dev_cases})
    gold, _, accuracy = setup(dev, seed + DEV, "dev case", auroc)
    signal = "votes" if auroc is None else "confidence"
    knobs = settle_knobs(args.dev_panel, 1.0, signal) | {"always_try": True}
    tried = run("settle", knobs, gold, accuracy, seed + DEV)
    trial_calls = tried["calls"] - args.dev_panel
    best = settling.choose(
        tried["rows"], LABELS, max_calls=args.budget * trial_calls, margin=args.margin, new_cases=args.cases
    )
    assert best is not None, "a panel of one always fits"
    return best


def headline(args: argparse.Namespace, seed: int, auroc: float | None = None) -> dict[str, Any]:
    """The design (chosen on dev, or fixed), the full trial and the matched majority vote on one seed's cases."""
    if args.panel is None or auroc is not None:
        dev = choose_on_dev(args, seed, auroc)
        k, t, signal = dev.panel_size, dev.threshold, dev.signal
    else:
        k, t, signal, dev = args.panel, args.threshold, "votes", None
    gold, hard, accuracy = setup(args, seed, auroc=auroc)
    full = run("jot", dict(get_preset(TRIAL).knobs), gold, accuracy, seed)
    head = run("settle", settle_knobs(k, t, signal), gold, accuracy, seed)
    m = max(1, round(head["calls"]))
    vote = run("parallel-vote", {"n_models": m}, gold, accuracy, seed)
    d_full, d_full_se = paired(head["right"], full["right"])
    d_vote, d_vote_se = paired(head["right"], vote["right"])
    return {
        "seed": seed,
        "gold": gold,
        "hard": hard,
        "accuracy": accuracy,
        "full": full,
        "settle": head,
        "vote": vote,
        "m": m,
        "k": k,
        "t": t,
        "signal": signal,
        "auroc": auroc,
        "dev": dev,
        "d_full": (d_full, d_full_se),
        "d_vote": (d_vote, d_vote_se),
        "share": head["calls"] / full["calls"],
    }


def met(res: dict[str, Any], budget: float) -> dict[str, bool]:
    """Which targets one seed meets: within one paired SE, within the calls budget, above the vote."""
    (d, d_se), (dv, _) = res["d_full"], res["d_vote"]
    return {"within": d >= -d_se, "calls": res["share"] <= budget + 1e-9, "vote": dv > 0}


def print_headline(args: argparse.Namespace, res: dict[str, Any], model: Model) -> None:
    full, head, matched, n = res["full"], res["settle"], res["vote"], len(res["gold"])
    k, t, m = res["k"], res["t"], res["m"]
    print(
        f"{n} cases (seed {res['seed']}): {n - len(res['hard'])} easy (every role right w.p. {args.easy}), "
        f"{len(res['hard'])} hard (single answers w.p. {args.hard_single}, the trial's judge w.p. "
        f"{args.hard_judge}); oracle fake"
    )
    if res["dev"] is not None:
        dev = res["dev"]
        print(
            f"chosen on {args.dev_cases} dev cases (seed {res['seed'] + DEV}, one always-try run with a panel of "
            f"{args.dev_panel}, "
            f"replayed): panel {k}, threshold {t:.3g}: dev accuracy {dev.accuracy:.3f} at {dev.calls:.2f} calls/case, "
            f"the most accurate within {100 * args.budget:.0f}% of the trial's calls"
            + (f" with {args.margin:g} SE of its calls (dev minus test) to spare" if args.margin else "")
        )
    print()
    print(f"{'design':<44} {'accuracy':>15} {'calls/case':>10} {'% of trial':>10} {'tried':>6}   expected acc, calls")
    exp_acc, exp_calls = model.settle(k, t)
    rows = [
        (f"full trial: jot ({TRIAL})", full, model.full(), float(TRIAL_CALLS)),
        (f"settle: panel {k}, threshold {t:.3g}, then jot", head, exp_acc, exp_calls),
        (f"matched majority vote: parallel-vote n={m}", matched, model.vote(m), float(m)),
    ]
    for name, r, e_acc, e_calls in rows:
        print(
            f"{name:<44} {r['accuracy']:>7.3f} ± {se(r['accuracy'], n):.3f} {r['calls']:>10.2f} "
            f"{100 * r['calls'] / full['calls']:>9.1f}% {100 * r['tried']:>5.1f}%   {e_acc:.3f}, {e_calls:.2f}"
        )
    print("(± is each accuracy's own binomial SE; the comparisons below use the SE of the paired difference)")
    (d, d_se), (dv, dv_se), ok = res["d_full"], res["d_vote"], met(res, args.budget)
    print()
    print(
        f"settle vs full trial: accuracy {d:+.3f}, SE of the paired difference {d_se:.3f} "
        f"(the full trial's own SE: {se(full['accuracy'], n):.3f}): {in_se(d, d_se):+.2f} SE, "
        f"{'within' if ok['within'] else 'NOT within'} one SE; calls {100 * res['share']:.1f}% of the full "
        f"trial's ({'<=' if ok['calls'] else '>'} {100 * args.budget:.0f}%)"
    )
    print(
        f"settle vs majority vote at equal calls (n={m}): accuracy {dv:+.3f} (paired SE {dv_se:.3f}): "
        f"{'beats it' if ok['vote'] else 'does NOT beat it'}"
    )
    verdict = "MET" if all(ok.values()) else "NOT met (" + ", ".join(w for w, v in ok.items() if not v) + ")"
    print(f"target on seed {res['seed']}: {verdict}")


def print_bound(args: argparse.Namespace, model: Model) -> None:
    """The most any design can reach under the model, at the budget and around it."""
    kinds, full = model.as_kinds(), model.full()
    print()
    print(
        "the most any design can reach under this model, in expectation (exact: knowing every panel answer and the "
        "trial's verdict; panels up to 15, escalating, overruling the verdict: bench/_settle_model.py):"
    )
    print(
        f"{'calls':>8} {'bound':>7} {'vs full':>8}  one policy (a corner of the frontier: mixing two reaches the bound)"
    )
    for budget in sorted({0.35, args.budget, 0.55, 0.65}):
        b = bound(kinds, budget * TRIAL_CALLS, TRIAL_CALLS)
        print(
            f"{100 * budget:>7.0f}% {b.accuracy:>7.4f} {b.accuracy - full:>+8.4f} "
            f"{b.best_accuracy:>9.4f} at {100 * b.best_calls / TRIAL_CALLS:.1f}%"
        )
    gap, p = model.within(2, 1.0, args.cases)
    at_budget = bound(kinds, args.budget * TRIAL_CALLS, TRIAL_CALLS).accuracy
    print(
        f"the full trial is expected at {full:.4f}; within {100 * args.budget:.0f}% of its calls no design beats it "
        f"in expectation by more than {at_budget - full:+.4f}, so whether a seed of {args.cases} cases lands within "
        f"one paired SE is sampling (panel 2, threshold 1: expected gap {gap:+.4f}, probability {p:.2f})"
    )
    print(
        f"the bound at {100 * args.budget:.0f}% minus the full trial's accuracy, over other difficulty models "
        f"({100 * args.hard:.0f}% hard; rows: easy accuracy / the trial's judge on hard cases; columns: a single "
        "answer on hard cases):"
    )
    singles = (0.5, 0.55, 0.6, 0.65)
    print(f"{'':>12}" + "".join(f"{q:>9}" for q in singles))
    for easy, judge in itertools.product((0.9, 0.95, 0.98), (0.8, 0.9)):
        cells = []
        for q in singles:
            other = Model(easy, q, judge, args.hard, TRIAL_CALLS)
            cells.append(bound(other.as_kinds(), args.budget * TRIAL_CALLS, TRIAL_CALLS).accuracy - other.full())
        print(f"{easy:>5} / {judge:<4}  " + "".join(f"{c:>+9.4f}" for c in cells))
    need = auroc_to_match(kinds, full, args.budget * TRIAL_CALLS, TRIAL_CALLS)
    print(
        f"what would change it: a single answer's stated confidence that tells right from wrong (AUROC >= {need:.2f}: "
        "a panel of one settling on it matches the full trial in expectation; below)"
    )


def print_confidence(args: argparse.Namespace, model: Model) -> None:
    """The target again when the oracle's stated confidence is informative, at each ``--aurocs``."""
    print()
    print(
        "if a stated confidence were informative (the oracle's confidence_auroc: a right answer states more "
        "confidence than a wrong one with that probability), the design chosen on dev among both signals:"
    )
    cols = ("AUROC", "seed", "design", "full", "settle", "Δ", "paired SE", "Δ/SE", "calls %", "vote", "Δ vote")
    print(" ".join(f"{c:>10}" for c in cols) + "  met        expected")
    for auroc, seed in itertools.product(args.aurocs, range(args.seed, args.seed + args.confidence_seeds)):
        res = headline(args, seed, auroc)
        (d, d_se), (dv, _), ok = res["d_full"], res["d_vote"], met(res, args.budget)
        verdict = "yes" if all(ok.values()) else "no (" + ", ".join(w for w, v in ok.items() if not v) + ")"
        design = f"{res['signal'][:4]} {res['k']},{res['t']:.3g}"
        expected = "-"
        if res["signal"] == "confidence" and res["k"] == 1:
            expected = f"{expected_confidence_settle(model.as_kinds(), auroc, res['t'], TRIAL_CALLS)[0]:.3f}"
        elif res["signal"] == "votes":
            expected = f"{model.settle(res['k'], res['t'])[0]:.3f}"
        print(
            f"{auroc:>10.2f} {seed:>10} {design:>10} {res['full']['accuracy']:>10.3f} "
            f"{res['settle']['accuracy']:>10.3f} "
            f"{d:>+10.3f} {d_se:>10.3f} {in_se(d, d_se):>+10.2f} {100 * res['share']:>9.1f}% "
            f"{res['vote']['accuracy']:>10.3f} {dv:>+10.3f}  {verdict:<10} {expected}"
        )
    print(
        "(design: signal, panel, threshold; expected: the model's accuracy for that design; the full trial "
        "and the vote do not read confidence)"
    )


def print_curve(args: argparse.Namespace, res: dict[str, Any], model: Model) -> None:
    gold, accuracy, full, n, seed = res["gold"], res["accuracy"], res["full"], len(res["gold"]), res["seed"]
    votes: dict[int, dict] = {res["m"]: res["vote"]}

    def vote(k: int) -> dict:
        if k not in votes:
            votes[k] = run("parallel-vote", {"n_models": k}, gold, accuracy, seed)
        return votes[k]

    print()
    print("accuracy-calls curve over the threshold, on the test cases (vote share; each value a distinct design):")
    print(
        f"{'panel':>5} {'threshold':>9} {'accuracy':>15} {'calls/case':>10} {'% of trial':>10} {'tried':>6} "
        f"{'vote at =calls':>15}   expected acc, calls"
    )
    for k in (1, 2, 3, 5):
        for t in sorted({max(j, k - j) / k for j in range(k + 1)}):
            same = (k, round(t, 6)) == (res["k"], round(res["t"], 6))
            r = res["settle"] if same else run("settle", settle_knobs(k, t), gold, accuracy, seed)
            m = max(1, round(r["calls"]))
            e_acc, e_calls = model.settle(k, t)
            print(
                f"{k:>5} {t:>9.3f} {r['accuracy']:>7.3f} ± {se(r['accuracy'], n):.3f} {r['calls']:>10.2f} "
                f"{100 * r['calls'] / full['calls']:>9.1f}% {100 * r['tried']:>5.1f}% "
                f"{vote(m)['accuracy']:>9.3f} (n={m})   {e_acc:.3f}, {e_calls:.2f}"
            )


def print_flips(args: argparse.Namespace, res: dict[str, Any]) -> None:
    full, head, gold, hard = res["full"], res["settle"], res["gold"], res["hard"]
    print()
    print("what the trial changed:")
    for name, result, framework in (("full trial (jot)", full, "jot"), (f"settle (panel {res['k']})", head, "settle")):
        for line in flip_lines(name, flip_matrix(result["rows"], framework, LABELS) or {}):
            print("  " + line)
    for name, wanted in (("easy", False), ("hard", True)):
        part = [r for r, case in zip(full["rows"], gold, strict=True) if (case in hard) is wanted]
        for line in flip_lines(f"full trial, {name} cases", flip_matrix(part, "jot", LABELS) or {}):
            print("  " + line)


def print_seeds(args: argparse.Namespace, runs: list[dict[str, Any]], model: Model) -> None:
    n = len(runs[0]["gold"])
    print()
    print(f"the headline over seeds {runs[0]['seed']}..{runs[-1]['seed']} ({n} test cases each):")
    cols = ("seed", "design", "full", "settle", "Δ", "paired SE", "Δ/SE", "within", "calls %", "vote", "Δ vote", "met")
    print(" ".join(f"{c:>9}" for c in cols))
    counts = dict.fromkeys(("within", "calls", "vote", "all"), 0)
    for res in runs:
        f, st, v = res["full"]["accuracy"], res["settle"]["accuracy"], res["vote"]["accuracy"]
        (d, d_se), ok = res["d_full"], met(res, args.budget)
        for key, value in ok.items():
            counts[key] += value
        counts["all"] += all(ok.values())
        design = f"{res['k']}, {res['t']:.3g}"
        print(
            f"{res['seed']:>9} {design:>9} {f:>9.3f} {st:>9.3f} {d:>+9.3f} "
            f"{d_se:>9.3f} {in_se(d, d_se):>+9.2f} {'yes' if ok['within'] else 'no':>9} {100 * res['share']:>8.1f}% "
            f"{v:>9.3f} {st - v:>+9.3f} {'yes' if all(ok.values()) else 'no':>9}"
        )
    gaps = [r["d_full"][0] for r in runs]
    mean = sum(gaps) / len(gaps)
    sd = math.sqrt(sum((g - mean) ** 2 for g in gaps) / max(len(gaps) - 1, 1))
    calls = sum(r["share"] for r in runs) / len(runs)
    over = sum(r["d_vote"][0] for r in runs) / len(runs)
    s = len(runs)
    print(
        f"mean over seeds: settle - full {mean:+.4f} (SE over seeds {sd / math.sqrt(s):.4f}), calls "
        f"{100 * calls:.1f}% of the full trial's, settle - vote {over:+.3f}"
    )
    print(
        f"targets met: within one paired SE {counts['within']}/{s}, calls <= {100 * args.budget:.0f}% "
        f"{counts['calls']}/{s}, beats the vote {counts['vote']}/{s}, all three {counts['all']}/{s}"
    )
    designs = sorted({(r["k"], r["t"]) for r in runs})
    for k, t in designs:
        gap, p = model.within(k, t, n)
        acc, c = model.settle(k, t)
        chosen = sum((r["k"], r["t"]) == (k, t) for r in runs)
        print(
            f"under the model, panel {k}, threshold {t:.3g} (chosen on {chosen}/{s} seeds): accuracy {acc:.3f} "
            f"vs the full trial's {model.full():.3f} (expected gap {gap:+.4f}), {100 * c / TRIAL_CALLS:.1f}% of its "
            f"calls; a seed of {n} cases is within one paired SE with probability {p:.2f}"
        )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=10, help="also summarise the headline over this many seeds")
    parser.add_argument("--hard", type=float, default=0.3, help="share of hard cases")
    parser.add_argument("--easy", type=float, default=0.95, help="every role's accuracy on easy cases")
    parser.add_argument("--hard-single", type=float, default=0.55, help="a single answer's accuracy on hard cases")
    parser.add_argument("--hard-judge", type=float, default=0.80, help="the trial judge's accuracy on hard cases")
    parser.add_argument("--budget", type=float, default=0.45, help="calls the settle design may spend, x the trial's")
    parser.add_argument("--dev-cases", type=int, default=None, help="dev cases the design is chosen on (--cases)")
    parser.add_argument("--dev-panel", type=int, default=5, help="panel of the always-try dev run (its largest)")
    parser.add_argument("--panel", type=int, default=None, help="fix the panel size instead of choosing on dev")
    parser.add_argument("--threshold", type=float, default=1.0, help="with --panel: its threshold (vote share)")
    parser.add_argument(
        "--confidence-seeds", type=int, default=1, help="seeds (from --seed) of the informative-confidence runs"
    )
    parser.add_argument(
        "--margin", type=float, default=0.0, help="SEs of its calls (dev minus test) kept below the budget"
    )
    parser.add_argument(
        "--aurocs",
        type=lambda text: [float(a) for a in text.split(",") if a],
        default=[0.7, 0.8, 0.9],
        help="also run the target with an informative stated confidence at these AUROCs ('' for none)",
    )
    args = parser.parse_args(argv)
    args.dev_cases = args.dev_cases or args.cases
    token = serial.set(True)  # one call after another: the oracle's draws do not depend on thread timing
    try:
        model = Model(args.easy, args.hard_single, args.hard_judge, args.hard, TRIAL_CALLS)
        first = headline(args, args.seed)
        print_headline(args, first, model)
        print_bound(args, model)
        print_curve(args, first, model)
        print_flips(args, first)
        if args.aurocs:
            print_confidence(args, model)
        if args.seeds > 1:
            runs = [first] + [headline(args, s) for s in range(args.seed + 1, args.seed + args.seeds)]
            print_seeds(args, runs, model)
    finally:
        serial.reset(token)


if __name__ == "__main__":
    main()
