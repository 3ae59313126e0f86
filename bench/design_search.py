"""A study over designs recovers a Pareto front known in closed form (SPEC §11).

Models: the cached oracle fake (``courtroom.testing.oracle_lm``), every role right with
probability ``p`` (default 0.7), independently per call, on binary generated boolean
expressions. Then every design's accuracy and cost (LM calls per example) is known exactly:

* self-consistency (k samples) and parallel-vote (n answers): a majority of k independent
  draws; a tie goes to the first vote, right half the time. k calls.
* courtroom-llm (no precedents): clerk, prosecutor and attorney, then n judges: parallel judges
  vote (a tie goes to the clerk's answer, right with p); sequential judges end on the last one
  (p). 3 + n calls; with ``early_stop`` the judges come in waves until the rest could not change
  the majority: the same verdict, and the expected number of judges called, by enumerating every
  vote sequence with the program's own wave rule.
* jot: the last judgment decides (p); each loop calls the judge and each advocate present.
* khan-debate: the judge decides (p) after 2 debaters per round: 2 rounds + 1 calls.

jot's and courtroom-llm's ``stop_when_stable`` and khan-debate's ``stop_on_concession`` are held off
(their expected calls have no closed form here). The bench enumerates every configuration of the search space,
takes its Pareto front (accuracy up, calls down), runs a study with ``cost_objective`` (NSGA-II,
trial 0 of each design its paper default, a configuration evaluated once, the train split given
so self-consistency's demos can be drawn) and prints the found front beside the true one.

A found point is judged by its true accuracy and true cost (both exact), not by a noisy measure:
it is **on the true front** when no configuration is as accurate and no dearer, one of the two
strictly; its gap (the front's accuracy at its cost minus its own) is printed beside. Its
measured dev accuracy is checked against its true accuracy (within 2 standard errors,
sqrt(p(1-p)/dev)), and every found point is scored on
``--test`` held-out examples (the study's own test scoring), printed beside dev and truth. It
also prints the LM calls the trials made (the naive count, with no cache) against those sent.

Run: ``.venv/bin/python bench/design_search.py [--trials 40] [--dev 100] [--test 200] [--p 0.7] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

DESIGNS = ["self-consistency", "parallel-vote", "courtroom-llm", "jot", "khan-debate"]
SPACE = {
    "courtroom-llm.k_precedents": "0",
    "courtroom-llm.stop_when_stable": "0",
    "jot.stop_when_stable": "0",
    "khan-debate.stop_on_concession": "false",
}


def majority(n: int, p: float, tie: float) -> float:
    """P(a majority of n independent votes, each right with p, is right); a tie is right with ``tie``."""
    win = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n // 2 + 1, n + 1))
    if n % 2 == 0:
        win += math.comb(n, n // 2) * (p * (1 - p)) ** (n // 2) * tie
    return win


PREPARE_CALLS = {"self-consistency": 3}
"""Calls a design's ``prepare`` makes on the train split (self-consistency's 3 zero-shot-CoT demos):
a study across designs counts them in the trial's cost, spread over the dev examples."""


def truth(design: str, k: dict[str, Any], p: float, dev: float = math.inf) -> tuple[float, float]:
    """(accuracy, LM calls per dev example) of a configuration, in closed form (rounded: equal is equal)."""
    acc, calls = _truth(design, k, p)
    return round(acc, 10), round(calls + PREPARE_CALLS.get(design, 0) / dev, 10)


def _truth(design: str, k: dict[str, Any], p: float) -> tuple[float, float]:
    if design in ("self-consistency", "parallel-vote"):
        n = int(k.get("k_samples", k.get("n_models", 1)))
        return majority(n, p, 0.5), n
    if design == "courtroom-llm":
        n = int(k["n_judges"])
        if k["judge_mode"] != "parallel":
            return p, 3 + n
        judges = expected_judges(n, p) if k.get("early_stop") else n
        return majority(n, p, p), 3 + judges
    if design == "jot":
        return p, int(k["n_loops"]) * (1 + bool(k["use_lawyer"]) + bool(k["use_prosecutor"]))
    if design == "khan-debate":
        return p, 2 * int(k["n_rounds"]) + 1
    raise ValueError(design)


def expected_judges(n: int, p: float) -> float:
    """Expected judges called by Courtroom-LLM's early stop (parallel judges in waves), over every vote sequence.

    Votes are ``R`` (right, probability p) or ``W``; the clerk's answer (the tie's winner) is right with p.
    """
    import itertools

    from courtroom.programs._common import settled_majority, smallest_wave

    total = 0.0
    for clerk_right in (True, False):
        a1, a2 = ("R", "W") if clerk_right else ("W", "R")
        for seq in itertools.product("RW", repeat=n):
            prob = (p if clerk_right else 1 - p) * math.prod(p if v == "R" else 1 - p for v in seq)
            called = 0
            while called < n:
                votes, left = list(seq[:called]), n - called
                if settled_majority(votes, left, (a1, a2), ["R", "W"], prefer=a1) is not None:
                    break
                called += smallest_wave(votes, left, (a1, a2), ["R", "W"], prefer=a1)
            total += prob * called
    return total


def configurations(space: Sequence[Any], design: str) -> Iterator[dict[str, Any]]:
    """Every configuration of ``design`` in the (conditional) space, by define-by-run enumeration."""
    own = [q for q in space if q.name.startswith(design + ".")]

    def walk(i: int, got: dict[str, Any]) -> Iterator[dict[str, Any]]:
        if i == len(own):
            yield {name.split(".", 1)[1]: v for name, v in got.items()}
            return
        q = own[i]
        if q.off(got):
            yield from walk(i + 1, got | {q.name: q.otherwise})
            return
        values = q.choices if q.kind == "cat" else range(int(q.low), int(q.high) + 1)
        for v in values:
            yield from walk(i + 1, got | {q.name: v})

    yield from walk(0, {})


def front(points: Sequence[tuple[float, float, Any]]) -> list[tuple[float, float, Any]]:
    """Pareto front of (accuracy, cost, label): nothing else has >= accuracy at <= cost, one strictly."""
    out = []
    for a, c, lab in points:
        if not any((a2 >= a and c2 <= c) and (a2 > a or c2 < c) for a2, c2, _ in points):
            out.append((a, c, lab))
    best: dict[float, tuple[float, float, Any]] = {}
    for a, c, lab in sorted(out, key=lambda x: (x[1], -x[0])):
        best.setdefault(c, (a, c, lab))
    return sorted(best.values(), key=lambda x: x[1])


def true_front_at(true: Sequence[tuple[float, float, Any]], cost: float) -> float:
    """The best true accuracy at a cost of at most ``cost``."""
    return max((a for a, c, _ in true if c <= cost), default=0.0)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--test", type=int, default=200, help="Held-out examples every found point is scored on.")
    parser.add_argument("--train", type=int, default=8, help="Train examples (self-consistency draws demos).")
    parser.add_argument("--p", type=float, default=0.7, help="Every role's accuracy.")
    parser.add_argument("--seed", type=int, default=0, help="Sampler seed.")
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix="courtroom-bench-")
    os.environ["COURTROOM_CACHE_DIR"] = os.path.join(workdir, "cache")

    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study._design_report import design_table
    from courtroom.optimize.study.designs import DesignStudyConfig, design_space, run_design_study
    from courtroom.optimize.study.holdout import score_chosen
    from courtroom.testing import oracle_lm

    parts = {s: load_task("boolean_expressions", split=s, limit=n).examples
             for s, n in (("train", args.train), ("dev", args.dev), ("test", args.test))}  # fmt: skip
    dev = parts["dev"]
    labels = ["True", "False"]
    gold = {e.case: e.label for part in parts.values() for e in part}
    lm = oracle_lm(gold, labels, accuracy=args.p, cache=True)
    lms = RoleLMs({"default": lm})
    config = DesignStudyConfig(
        frameworks=DESIGNS,
        trials=args.trials,
        dev=len(dev),
        train=args.train,
        seed=args.seed,
        storage=f"sqlite:///{workdir}/study.db",
        cost_objective=True,
        cost="calls",
        space=dict(SPACE),
        concurrency=4,
    )
    space = design_space(config)
    points = [
        (*truth(d, k, args.p, len(dev)), (d, tuple(sorted(k.items()))))
        for d in DESIGNS
        for k in configurations(space, d)
    ]
    true = front(points)
    se = math.sqrt(args.p * (1 - args.p) / len(dev))

    start = time.perf_counter()
    outcome = run_design_study(config, lms=lms, trainset=parts["train"], devset=dev, labels=labels)
    seconds = time.perf_counter() - start
    study = outcome.study
    test = score_chosen(outcome, args.test, lms=lms)
    trials = study.trials
    ran = [t for t in trials if t.state.name != "WAITING" and "duplicate_of" not in t.user_attrs]
    done = [t for t in ran if t.state.name == "COMPLETE"]
    found = front([(t.values[0], t.values[1], t) for t in done])

    print(
        f"{len(points)} configurations of {len(DESIGNS)} designs; p = {args.p}; dev = {len(dev)}; "
        f"2 SE = {2 * se:.3f}; test = {args.test}"
    )
    print("\ntrue Pareto front (closed form):")
    print(f"  {'calls':>6} {'accuracy':>9}  configurations")
    for a, c, _ in true:
        same = sorted({lab[0] + str(dict(lab[1])) for a2, c2, lab in points if c2 == c and abs(a2 - a) < 1e-12})
        print(f"  {c:>6.3g} {a:>9.4f}  {'; '.join(same[:3])}{' ...' if len(same) > 3 else ''}")
    print(f"\nper design, trials that ran ({args.trials} asked; a repeated configuration reuses its value):")
    for d in DESIGNS:
        mine = [t for t in ran if t.user_attrs.get("design") == d]
        print(f"  {d:<17} {len(mine):>3} ran, {sum(t.state.name == 'COMPLETE' for t in mine):>3} complete")
    reused = sum(1 for t in trials if "duplicate_of" in t.user_attrs)
    print(f"\nfound Pareto front ({len(ran)} trials ran, {reused} reused a stored value, {seconds:.0f} s):")
    print(f"  {'calls':>6} {'dev':>6} {'test':>6} {'true':>7} {'front':>7} {'gap':>6}  {'on':>3} {'dev ok':>6}  "
          "trial design params")  # fmt: skip
    on_front, measured_ok, gaps, test_gaps = 0, 0, [], []
    for a, c, t in found:
        design, knobs = t.user_attrs["design"], t.user_attrs["config"]
        t_acc, t_cost = truth(design, knobs, args.p, len(dev))
        gap = max(0.0, true_front_at(true, t_cost) - t_acc)
        # On the front: no configuration as accurate and no dearer, one of them strictly (ties of truth are equal).
        on = not any(a2 >= t_acc and c2 <= t_cost and (a2 > t_acc or c2 < t_cost) for a2, c2, _ in points)
        ok = abs(a - t_acc) <= 2 * se and abs(c - t_cost) <= max(0.5, 0.05 * t_cost)
        on_front += on
        measured_ok += ok
        gaps.append(gap)
        score = test.get(t.number, {}).get("accuracy")
        if score is not None:
            test_gaps.append(a - score)
        print(
            f"  {c:>6.3g} {a:>6.3f} {'-' if score is None else f'{score:.3f}':>6} {t_acc:>7.4f} "
            f"{true_front_at(true, t_cost):>7.4f} {gap:>6.3f}  {'yes' if on else 'no':>3} {'yes' if ok else 'NO':>6}  "
            f"{t.number:>5} {design} {knobs}"
        )
    covered = [
        any(truth(t.user_attrs["design"], t.user_attrs["config"], args.p, len(dev))[1] <= c + 1e-9
            and truth(t.user_attrs["design"], t.user_attrs["config"], args.p, len(dev))[0] >= a - 1e-9
            for _, _, t in found)
        for a, c, _ in true
    ]  # fmt: skip
    print(
        f"\nfound points on the true front: {on_front} of {len(found)}; largest gap to it: {max(gaps, default=0):.3f}"
    )
    print(f"true front points reached by a found point (as accurate, no dearer): {sum(covered)} of {len(true)}")
    print(f"found points whose dev accuracy is within 2 SE of the truth: {measured_ok} of {len(found)}")
    if test_gaps:
        print(f"dev - test over the found front: mean {statistics.fmean(test_gaps):+.3f} (the optimism of selection)")
    table = design_table(study)
    naive, sent = int(table["calls"].sum()), int(table["sent"].sum())
    print(
        f"\nLM calls: naive {naive} (what the trials' programs made), sent {sent}, reused from the cache {naive - sent}"
    )
    print(table[["design", "trials", "complete", "calls", "sent", "cached"]].to_string(index=False))


if __name__ == "__main__":
    main()
