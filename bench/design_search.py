"""A study over designs recovers a Pareto front known in closed form (SPEC §11).

Models: the cached oracle fake (``courtroom.testing.oracle_lm``), every role right with
probability ``p`` (default 0.7), independently per call, on binary generated boolean
expressions. Then every design's accuracy and cost (LM calls per example) is known exactly:

* self-consistency (k samples) and parallel-vote (n answers): a majority of k independent
  draws; a tie goes to the first vote, right half the time. k calls.
* courtroom-llm (no precedents): clerk, prosecutor and attorney, then n judges: parallel judges
  vote (a tie goes to the clerk's answer, right with p); sequential judges end on the last one
  (p). 3 + n calls.
* jot: the last judgment decides (p); each loop calls the judge and each advocate present.
* khan-debate: the judge decides (p) after 2 debaters per round: 2 rounds + 1 calls.

The bench enumerates every configuration of the search space in closed form, takes its Pareto
front (accuracy up, calls down), runs a 40-trial study with ``cost_objective`` (NSGA-II, trial 0
of each design its paper default), and prints the found front beside the true one. A found
point is within sampling error when its measured accuracy is within 2 standard errors
(sqrt(p(1-p)/dev)) of its true accuracy and its true accuracy is within 2 standard errors of
the true front at its cost. It also prints the LM calls the trials made (the naive count, with
no cache) against those sent to the model.

Run: ``.venv/bin/python bench/design_search.py [--trials 40] [--dev 100] [--p 0.7] [--seed 0]``.
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from typing import Any

DESIGNS = ["self-consistency", "parallel-vote", "courtroom-llm", "jot", "khan-debate"]
SPACE = {"courtroom-llm.k_precedents": "0"}


def majority(n: int, p: float, tie: float) -> float:
    """P(a majority of n independent votes, each right with p, is right); a tie is right with ``tie``."""
    win = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n // 2 + 1, n + 1))
    if n % 2 == 0:
        win += math.comb(n, n // 2) * (p * (1 - p)) ** (n // 2) * tie
    return win


def truth(design: str, k: dict[str, Any], p: float) -> tuple[float, float]:
    """(accuracy, LM calls per example) of a configuration, in closed form (rounded: equal is equal)."""
    acc, calls = _truth(design, k, p)
    return round(acc, 10), calls


def _truth(design: str, k: dict[str, Any], p: float) -> tuple[float, float]:
    if design in ("self-consistency", "parallel-vote"):
        n = int(k.get("k_samples", k.get("n_models", 1)))
        return majority(n, p, 0.5), n
    if design == "courtroom-llm":
        n = int(k["n_judges"])
        acc = majority(n, p, p) if k["judge_mode"] == "parallel" else p
        return acc, 3 + n
    if design == "jot":
        return p, int(k["n_loops"]) * (1 + bool(k["use_lawyer"]) + bool(k["use_prosecutor"]))
    if design == "khan-debate":
        return p, 2 * int(k["n_rounds"]) + 1
    raise ValueError(design)


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=40)
    parser.add_argument("--dev", type=int, default=100)
    parser.add_argument("--p", type=float, default=0.7, help="Every role's accuracy.")
    parser.add_argument("--seed", type=int, default=0, help="Sampler seed.")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="courtroom-bench-")
    os.environ["COURTROOM_CACHE_DIR"] = os.path.join(workdir, "cache")

    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize._design_report import design_table
    from courtroom.optimize.designs import DesignStudyConfig, design_space, run_design_study
    from courtroom.testing import oracle_lm

    dev = load_task("boolean_expressions", split="dev", limit=args.dev).examples
    labels = ["True", "False"]
    lm = oracle_lm({e.case: e.label for e in dev}, labels, accuracy=args.p, cache=True)
    config = DesignStudyConfig(
        frameworks=DESIGNS,
        trials=args.trials,
        dev=len(dev),
        seed=args.seed,
        storage=f"sqlite:///{workdir}/study.db",
        cost_objective=True,
        cost="calls",
        space=dict(SPACE),
        concurrency=4,
    )
    space = design_space(config)
    points = [(*truth(d, k, args.p), (d, tuple(sorted(k.items())))) for d in DESIGNS for k in configurations(space, d)]
    true = front(points)
    se = math.sqrt(args.p * (1 - args.p) / len(dev))

    start = time.perf_counter()
    study = run_design_study(config, lms=RoleLMs({"default": lm}), trainset=[], devset=dev, labels=labels).study
    seconds = time.perf_counter() - start
    done = [t for t in study.trials if t.state.name == "COMPLETE"]
    found = front([(t.values[0], t.values[1], t) for t in done])

    print(
        f"{len(points)} configurations of {len(DESIGNS)} designs; p = {args.p}; dev = {len(dev)}; 2 SE = {2 * se:.3f}"
    )
    print("\ntrue Pareto front (closed form):")
    print(f"  {'calls':>6} {'accuracy':>9}  configurations")
    for a, c, _ in true:
        same = sorted({lab[0] + str(dict(lab[1])) for a2, c2, lab in points if c2 == c and abs(a2 - a) < 1e-12})
        print(f"  {c:>6g} {a:>9.4f}  {'; '.join(same[:3])}{' ...' if len(same) > 3 else ''}")
    print(f"\nfound Pareto front ({args.trials} trials, {seconds:.0f} s):")
    print(f"  {'calls':>6} {'measured':>9} {'true':>7} {'front':>7}  ok  trial design params")
    ok_all = True
    for a, c, t in found:
        design, knobs = t.user_attrs["design"], t.user_attrs["config"]
        t_acc, t_cost = truth(design, knobs, args.p)
        ok = abs(a - t_acc) <= 2 * se and true_front_at(true, t_cost) - t_acc <= 2 * se and t_cost == c
        ok_all &= ok
        print(
            f"  {c:>6g} {a:>9.3f} {t_acc:>7.4f} {true_front_at(true, c):>7.4f}  {'yes' if ok else 'NO ':3} "
            f"{t.number:>5} {design} {knobs}"
        )
    covered = [
        any(abs(truth(t.user_attrs["design"], t.user_attrs["config"], args.p)[0] - a) <= 2 * se and c2 <= c
            for _, c2, t in found)
        for a, c, _ in true
    ]  # fmt: skip
    print(f"\ntrue front points matched by a found point at no higher cost: {sum(covered)} of {len(true)}")
    print(f"every found point within sampling error: {'yes' if ok_all else 'no'}")
    table = design_table(study)
    naive, sent = int(table["calls"].sum()), int(table["sent"].sum())
    print(
        f"\nLM calls: naive {naive} (what the trials' programs made), sent {sent}, reused from the cache {naive - sent}"
    )
    print(table[["design", "trials", "complete", "calls", "sent", "cached"]].to_string(index=False))


if __name__ == "__main__":
    main()
