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
rounds, 9 calls per case); its verdict is the last judgment, one independent draw. The settle
design asks a panel of ``k`` answers, settles when their vote share reaches the threshold, and
otherwise convenes that same JoT (not shown the panel's answers, so a tried case's prompts and
draws are exactly the full trial's: the comparison is paired). The matched majority vote is
``parallel-vote`` with as many answers per case as the settle design spends calls (rounded).
Beside each measured figure the bench prints its expectation under the model (binomial sums), so
a reader can tell the design from the sampling noise of one seed.

    python bench/settle.py [--cases 500] [--seed 0] [--seeds 5] [--panel 2] [--threshold 1.0]
"""

from __future__ import annotations

import argparse
import math
import os
import random
from collections.abc import Sequence
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from courtroom.analysis.flips import flip_lines, flip_matrix  # noqa: E402
from courtroom.models._concurrency import serial  # noqa: E402
from courtroom.programs import build_program  # noqa: E402
from courtroom.programs.presets import get_preset  # noqa: E402
from courtroom.testing import oracle_lm  # noqa: E402

LABELS = ["True", "False"]
TRIAL = "jot-paper"
TRIAL_CALLS = 9  # 3 rounds of lawyer, prosecutor and judge


def make_cases(n: int, hard_share: float, seed: int) -> tuple[dict[str, str], set[str]]:
    """``n`` cases with gold labels (fixed-width ids: no case text contains another) and the hard ones."""
    gold = {f"case {i:04d}: is the defendant liable under the contract?": LABELS[i % 2] for i in range(n)}
    hard = set(random.Random(seed).sample(sorted(gold), round(hard_share * n)))
    return gold, hard


def run(name: str, knobs: dict[str, Any], gold: dict[str, str], accuracy: dict[str, Any], seed: int) -> dict:
    """One design on every case, on a fresh oracle: per-case rows, correctness and calls."""
    lm = oracle_lm(gold, LABELS, accuracy=accuracy["all"], case_accuracy=accuracy["cases"], seed=seed)
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


def paired(a: Sequence[bool], b: Sequence[bool]) -> tuple[float, float]:
    """Mean difference a - b over the same cases and its standard error."""
    d = [int(x) - int(y) for x, y in zip(a, b, strict=True)]
    mean = sum(d) / len(d)
    var = sum((x - mean) ** 2 for x in d) / (len(d) - 1)
    return mean, math.sqrt(var / len(d))


# -- what the difficulty model predicts ----------------------------------------------------------------


def _outcomes(k: int, q: float) -> list[tuple[float, float, bool]]:
    """(probability, vote share of the majority, majority right) of a panel of ``k`` answers right w.p. ``q``.

    A tie goes to the first answer (right with probability j/k when j of k are right).
    """
    out = []
    for j in range(k + 1):
        p = math.comb(k, j) * q**j * (1 - q) ** (k - j)
        share = max(j, k - j) / k
        if 2 * j == k:
            out += [(p * j / k, share, True), (p * (k - j) / k, share, False)]
        else:
            out.append((p, share, 2 * j > k))
    return out


def expected_settle(k: int, t: float, q: float, r: float) -> tuple[float, float]:
    """(accuracy, calls per case) of settle(k, t) on one kind of case: panel right w.p. q, trial w.p. r."""
    acc = calls = 0.0
    for p, share, right in _outcomes(k, q):
        settled = share >= t - 1e-9
        acc += p * (right if settled else r)
        calls += p * (k + (0 if settled else TRIAL_CALLS))
    return acc, calls


def expected_vote(n: int, q: float) -> float:
    """Accuracy of a majority of ``n`` answers right w.p. ``q`` (tie: the first answer)."""
    return sum(p for p, _, right in _outcomes(n, q) if right)


def mix(easy: float, hard: float, hard_share: float) -> float:
    return (1 - hard_share) * easy + hard_share * hard


def setup(args: argparse.Namespace, seed: int) -> tuple[dict[str, str], set[str], dict[str, Any]]:
    """The cases, the hard ones and the oracle's accuracies for ``seed``."""
    gold, hard = make_cases(args.cases, args.hard, seed)
    single = {"panel": args.hard_single, "classifier": args.hard_single, "judge": args.hard_judge}
    return gold, hard, {"all": {"default": args.easy}, "cases": dict.fromkeys(hard, single)}


def settle_knobs(k: int, t: float) -> dict[str, Any]:
    return {"panel_size": k, "threshold": t, "trial": "jot", "trial_preset": TRIAL}


def headline(args: argparse.Namespace, seed: int) -> dict[str, Any]:
    """The full trial, the headline settle design and the matched majority vote on one seed's cases."""
    gold, hard, accuracy = setup(args, seed)
    full = run("jot", dict(get_preset(TRIAL).knobs), gold, accuracy, seed)
    head = run("settle", settle_knobs(args.panel, args.threshold), gold, accuracy, seed)
    k = max(1, round(head["calls"]))
    vote = run("parallel-vote", {"n_models": k}, gold, accuracy, seed)
    return {"gold": gold, "hard": hard, "accuracy": accuracy, "full": full, "settle": head, "vote": vote, "k": k}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--seeds", type=int, default=5, help="also summarise the headline over this many seeds")
    parser.add_argument("--hard", type=float, default=0.3, help="share of hard cases")
    parser.add_argument("--easy", type=float, default=0.95, help="every role's accuracy on easy cases")
    parser.add_argument("--hard-single", type=float, default=0.55, help="a single answer's accuracy on hard cases")
    parser.add_argument("--hard-judge", type=float, default=0.80, help="the trial judge's accuracy on hard cases")
    parser.add_argument("--panel", type=int, default=2, help="panel size of the headline settle design")
    parser.add_argument("--threshold", type=float, default=1.0, help="its threshold (vote share)")
    args = parser.parse_args()
    token = serial.set(True)  # one call after another: the oracle's draws do not depend on thread timing
    first = headline(args, args.seed)
    gold, hard, accuracy = first["gold"], first["hard"], first["accuracy"]
    full, head, matched, matched_k = first["full"], first["settle"], first["vote"], first["k"]
    n, h = len(gold), len(hard) / len(gold)
    q_e, q_h, r_e, r_h = args.easy, args.hard_single, args.easy, args.hard_judge
    print(
        f"{n} cases (seed {args.seed}): {n - len(hard)} easy (every role right w.p. {args.easy}), {len(hard)} hard "
        f"(single answers w.p. {args.hard_single}, the trial's judge w.p. {args.hard_judge}); oracle fake"
    )
    full_se = se(full["accuracy"], n)
    exp_head = [expected_settle(args.panel, args.threshold, q, r) for q, r in ((q_e, r_e), (q_h, r_h))]
    exp_acc, exp_calls = mix(exp_head[0][0], exp_head[1][0], h), mix(exp_head[0][1], exp_head[1][1], h)

    print()
    print(f"{'design':<44} {'accuracy':>15} {'calls/case':>10} {'% of trial':>10} {'tried':>6}   expected acc, calls")
    vote_acc = mix(*(expected_vote(matched_k, q) for q in (q_e, q_h)), h)
    rows = [
        (f"full trial: jot ({TRIAL})", full, mix(r_e, r_h, h), float(TRIAL_CALLS)),
        (f"settle: panel {args.panel}, threshold {args.threshold:g}, then jot", head, exp_acc, exp_calls),
        (f"matched majority vote: parallel-vote n={matched_k}", matched, vote_acc, float(matched_k)),
    ]
    for name, r, e_acc, e_calls in rows:
        print(
            f"{name:<44} {r['accuracy']:>7.3f} ± {se(r['accuracy'], n):.3f} {r['calls']:>10.2f} "
            f"{100 * r['calls'] / full['calls']:>9.1f}% {100 * r['tried']:>5.1f}%   {e_acc:.3f}, {e_calls:.2f}"
        )
    d_full, d_full_se = paired(head["right"], full["right"])
    d_vote, d_vote_se = paired(head["right"], matched["right"])
    share = head["calls"] / full["calls"]
    print()
    print(
        f"settle vs full trial: accuracy {d_full:+.3f} (paired SE {d_full_se:.3f}); one SE of the full trial is "
        f"{full_se:.3f}: {'within' if head['accuracy'] >= full['accuracy'] - full_se else 'NOT within'} one SE; "
        f"calls {100 * share:.1f}% of the full trial's ({'<=' if share <= 0.45 else '>'} 45%)"
    )
    print(
        f"settle vs majority vote at equal calls (n={matched_k}): accuracy {d_vote:+.3f} (paired SE {d_vote_se:.3f}): "
        f"{'beats it' if d_vote > 0 else 'does NOT beat it'}"
    )

    votes: dict[int, dict] = {matched_k: matched}

    def vote(k: int) -> dict:
        if k not in votes:
            votes[k] = run("parallel-vote", {"n_models": k}, gold, accuracy, args.seed)
        return votes[k]

    print()
    print("accuracy-calls curve over the threshold (vote share; only these values give distinct designs):")
    print(
        f"{'panel':>5} {'threshold':>9} {'accuracy':>15} {'calls/case':>10} {'% of trial':>10} {'tried':>6} "
        f"{'vote at =calls':>15}   expected acc, calls"
    )
    for k in (1, 2, 3, 5):
        for t in sorted({max(j, k - j) / k for j in range(k + 1)}):
            same = (k, t) == (args.panel, args.threshold)
            r = head if same else run("settle", settle_knobs(k, t), gold, accuracy, args.seed)
            m = max(1, round(r["calls"]))
            e = [expected_settle(k, t, q, rr) for q, rr in ((q_e, r_e), (q_h, r_h))]
            print(
                f"{k:>5} {t:>9.3f} {r['accuracy']:>7.3f} ± {se(r['accuracy'], n):.3f} {r['calls']:>10.2f} "
                f"{100 * r['calls'] / full['calls']:>9.1f}% {100 * r['tried']:>5.1f}% "
                f"{vote(m)['accuracy']:>9.3f} (n={m})   {mix(e[0][0], e[1][0], h):.3f}, {mix(e[0][1], e[1][1], h):.2f}"
            )

    print()
    print("what the trial changed:")
    for name, result, framework in (
        ("full trial (jot)", full, "jot"),
        (f"settle (panel {args.panel})", head, "settle"),
    ):
        for line in flip_lines(name, flip_matrix(result["rows"], framework, LABELS) or {}):
            print("  " + line)
    for name, wanted in (("easy", False), ("hard", True)):
        part = [r for r, case in zip(full["rows"], gold, strict=True) if (case in hard) is wanted]
        for line in flip_lines(f"full trial, {name} cases", flip_matrix(part, "jot", LABELS) or {}):
            print("  " + line)

    if args.seeds > 1:
        print()
        print(f"the headline over seeds {args.seed}..{args.seed + args.seeds - 1} ({n} cases each):")
        cols = ("seed", "full", "settle", "Δ", "1 SE", "within", "calls %", "vote", "Δ vote")
        print(" ".join(f"{c:>7}" for c in cols))
        runs = [first] + [headline(args, s) for s in range(args.seed + 1, args.seed + args.seeds)]
        for s, res in enumerate(runs, args.seed):
            f, st, v = res["full"]["accuracy"], res["settle"]["accuracy"], res["vote"]["accuracy"]
            within = "yes" if st >= f - se(f, n) else "no"
            calls = 100 * res["settle"]["calls"] / res["full"]["calls"]
            print(
                f"{s:>7} {f:>7.3f} {st:>7.3f} {st - f:>+7.3f} {se(f, n):>7.3f} {within:>7} {calls:>6.1f}% "
                f"{v:>7.3f} {st - v:>+7.3f}"
            )
        mean = sum(r["settle"]["accuracy"] - r["full"]["accuracy"] for r in runs) / len(runs)
        calls = sum(r["settle"]["calls"] / r["full"]["calls"] for r in runs) / len(runs)
        over = sum(r["settle"]["accuracy"] - r["vote"]["accuracy"] for r in runs) / len(runs)
        print(
            f"mean: settle - full {mean:+.3f}, calls {100 * calls:.1f}% of the full trial's, settle - vote {over:+.3f}"
        )
    serial.reset(token)


if __name__ == "__main__":
    main()
