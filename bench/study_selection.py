"""How often a study picks the true optimum, and how far its dev score overstates the chosen trial.

The space has a known optimum: parallel-vote with ``n_models`` in 1..5 on the cached oracle fake
(``courtroom.testing.oracle_lm``), every vote right with probability ``p`` (default 0.7),
independently per call, on generated boolean expressions. A majority of n votes (a tie broken by
the first vote, right half the time) is right with a probability known in closed form, which rises
with the odd n: n = 5 is the one optimum (0.837 at p = 0.7; n = 3 and 4 tie at 0.784).

For each dev size and seed (the seed drives the sampler and the oracle's draws), the bench runs a
study as ``courtroom study`` does (TPE, the paper default as trial 0, a configuration evaluated
once, the chosen trial scored on ``--test`` held-out examples by default) and records:

* whether the chosen trial is the optimum (n = 5);
* its dev score, its test score and its true accuracy (closed form);
* the gap dev - test (the optimism of picking the best of several noisy dev scores), and the gap
  dev - true;
* how many trials ran and how many repeated configurations took a stored value instead.

Run: ``.venv/bin/python bench/study_selection.py [--dev 20 50 100] [--seeds 8] [--trials 10] [--test 200]``.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import tempfile
import time

LABELS = ["True", "False"]


def majority(n: int, p: float, tie: float = 0.5) -> float:
    """P(a majority of n independent votes, each right with p, is right); a tie is right with ``tie``."""
    win = sum(math.comb(n, j) * p**j * (1 - p) ** (n - j) for j in range(n // 2 + 1, n + 1))
    if n % 2 == 0:
        win += math.comb(n, n // 2) * (p * (1 - p)) ** (n // 2) * tie
    return win


def one_study(dev: int, seed: int, args: argparse.Namespace, workdir: str) -> dict[str, float | int | bool]:
    """Run one study; what it chose, and how its dev and test scores compare with the truth."""
    import courtroom
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.testing import oracle_lm

    # The study's seed also draws its generated cases: the oracle must know those.
    splits = {s: load_task("boolean_expressions", data="generate", split=s, limit=n, seed=seed).examples
              for s, n in (("train", 4), ("dev", dev), ("test", args.test))}  # fmt: skip
    gold = {e.case: e.label for part in splits.values() for e in part}
    lm = oracle_lm(gold, LABELS, accuracy=args.p, seed=seed, cache=True, model=f"fake/oracle-{seed}")
    outcome = courtroom.study(
        "parallel-vote",
        task="boolean_expressions",
        data="generate",
        trials=args.trials,
        train_limit=4,
        dev_limit=dev,
        test_limit=args.test,
        seed=seed,
        space={"n_models": "1:5"},
        storage=f"sqlite:///{workdir}/dev{dev}-seed{seed}.db",
        out=os.path.join(workdir, f"rep-{dev}-{seed}"),
        lms=RoleLMs({"default": lm}),
        progress=False,
    )
    best = outcome.best[0]
    n = int(best.user_attrs["config"]["n_models"])
    test = outcome.test[best.number]
    trials = outcome.study.trials
    return {
        "optimum": n == 5,
        "n": n,
        "dev": float(best.values[0]),
        "test": float(test["accuracy"]),
        "true": majority(n, args.p),
        "ran": sum(1 for t in trials if "duplicate_of" not in t.user_attrs),
        "repeats": sum(1 for t in trials if "duplicate_of" in t.user_attrs),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dev", type=int, nargs="+", default=[20, 50, 100], help="Dev sizes.")
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--trials", type=int, default=10)
    parser.add_argument("--test", type=int, default=200, help="Held-out test examples the chosen trial is scored on.")
    parser.add_argument("--p", type=float, default=0.7, help="Every vote's accuracy.")
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix="courtroom-bench-")
    os.environ["COURTROOM_CACHE_DIR"] = os.path.join(workdir, "cache")
    truth = {n: majority(n, args.p) for n in range(1, 6)}
    print(f"parallel-vote n_models 1..5, p = {args.p}: true accuracy " +
          ", ".join(f"n={n} {a:.3f}" for n, a in truth.items()) + "; the optimum is n=5")  # fmt: skip
    print(f"{args.trials} trials per study, {args.seeds} seed(s) per dev size, test split {args.test} examples\n")
    print(f"{'dev':>5} {'optimum chosen':>15} {'dev - test':>11} {'dev - true':>11} {'test - true':>12} "
          f"{'regret':>7} {'ran':>4} {'reused':>6} {'s/study':>8}")  # fmt: skip
    for dev in args.dev:
        rows = []
        start = time.perf_counter()
        for seed in range(args.seeds):
            rows.append(one_study(dev, seed, args, workdir))
        took = (time.perf_counter() - start) / len(rows)

        def mean(key: str, rows: list[dict[str, float | int | bool]] = rows) -> float:
            return statistics.fmean(float(r[key]) for r in rows)

        hits = sum(bool(r["optimum"]) for r in rows)
        gap = statistics.fmean(float(r["dev"]) - float(r["test"]) for r in rows)
        over = statistics.fmean(float(r["dev"]) - float(r["true"]) for r in rows)
        noise = statistics.fmean(float(r["test"]) - float(r["true"]) for r in rows)
        regret = statistics.fmean(truth[5] - float(r["true"]) for r in rows)
        print(f"{dev:>5} {f'{hits}/{len(rows)}':>15} {gap:>+11.3f} {over:>+11.3f} {noise:>+12.3f} {regret:>7.3f} "
              f"{mean('ran'):>4.1f} {mean('repeats'):>6.1f} {took:>8.1f}")  # fmt: skip
        print("      chosen n per seed: " + " ".join(str(r["n"]) for r in rows))
    print("\ndev - test: how much the dev score of the chosen trial overstates it on new cases (mean over seeds);")
    print("regret: the true accuracy given up against the optimum; ran/reused: trials per study that ran, or")
    print("repeated a configuration and took its stored value (not counted against --trials).")


if __name__ == "__main__":
    main()
