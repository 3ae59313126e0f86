"""How much any allocation of a study's requests can lower the exported configuration's regret: a model.

``bench/study_selection.py`` runs real studies, 20 to 100 seeds a row; at those counts a
difference in mean regret below about 0.01 hides in the noise. This model answers the question
behind it with thousands of draws in seconds: on the learnable spaces (six configurations that
share no calls; one vote a case, right with a known probability; zero-shot and few-shot on one
model decided by the same random number, as ``courtroom.testing.learnable_lm`` draws them), what
regret does each way of spending the same requests leave?

* **today**: today's rule: the six configurations in a random order on ``dev`` cases in four
  blocks, Optuna's median pruner as the study sets it (after 3 trials, a trial whose running
  accuracy is below the median of the earlier ones' at the same block stops), the best complete
  one exported; its requests are what the other rules get, draw by draw;
* **uniform**: every configuration on ``calls / 6`` cases, the best point estimate exported;
* **race**: the race's extension rule (``courtroom.optimize.study.extend``): every configuration on
  ``--start`` of the dev cases, then rounds of a block for the leader (the best among the longest
  records) and its closest challenger (the largest one-sided McNemar p of "worse than the
  leader", ``courtroom.optimize.study.race.one_sided_p``), the last round partial; the best among
  the longest records exported;
* **told top 2**: a reference no rule can follow: the two best configurations, known in advance,
  share every request (each at most the 400 cases of the pool); the better point estimate exported.

Run: ``.venv/bin/python bench/race_allocation.py [--draws 2000] [--dev 16 66 266]``: the dev cases
of the bench's budgets 100, 400 and 1,600 on these spaces.
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from courtroom.optimize.study.race import one_sided_p

SPACES = {
    # (alone, with demos) per model: configurations zero-shot a, b, c then few-shot a, b, c.
    "learnable": ((0.70, 0.80), (0.75, 0.65), (0.60, 0.78)),
    "spread": ((0.70, 0.80), (0.60, 0.76), (0.50, 0.55)),
}


def draw(space: tuple[tuple[float, float], ...], n: int, rng: random.Random) -> list[list[int]]:
    """Six configurations' outcomes on ``n`` cases: zero-shot and few-shot of a model share a random number."""
    u = [[rng.random() for _ in range(n)] for _ in space]
    zero = [[int(x < alone) for x in row] for row, (alone, _) in zip(u, space, strict=True)]
    few = [[int(x < demos) for x in row] for row, (_, demos) in zip(u, space, strict=True)]
    return zero + few


def today(x: list[list[int]], dev: int, rng: random.Random) -> tuple[int, int]:
    """Today's rule on ``dev`` cases: (the configuration exported, the requests it sent)."""
    order = list(range(len(x)))
    rng.shuffle(order)
    block = -(-dev // 4)
    steps = [min(dev, block * j) for j in range(1, 5)]
    seen: list[dict[int, float]] = []
    calls, complete = 0, []
    for i in order:
        running: dict[int, float] = {}
        for step in steps:
            running[step] = sum(x[i][:step]) / step
            earlier = [h[step] for h in seen if step in h]
            if step < dev and len(seen) >= 3 and earlier and running[step] < statistics.median(earlier):
                break
        calls += max(running)
        seen.append(running)
        if max(running) == dev:
            complete.append(i)
    return max(complete, key=lambda i: sum(x[i][:dev])), calls


def uniform(x: list[list[int]], calls: int) -> int:
    """The configuration exported after every one is scored on ``calls // 6`` cases."""
    k = max(1, calls // len(x))
    return max(range(len(x)), key=lambda i: sum(x[i][:k]))


def told(x: list[list[int]], calls: int, truth: list[float]) -> int:
    """The better of the two true best configurations, each scored on half the calls."""
    a, b = sorted(range(len(x)), key=lambda i: -truth[i])[:2]
    k = max(1, calls // 2)
    return a if sum(x[a][:k]) >= sum(x[b][:k]) else b


def race(x: list[list[int]], calls: int, start: int, block: int) -> int:
    """The extension rule: leader and closest challenger, block by block, the last round partial."""
    n = [start] * len(x)
    left = calls - start * len(x)
    pool = len(x[0])

    def acc(i: int) -> float:
        return sum(x[i][: n[i]]) / n[i]

    def leader() -> int:
        longest = max(n)
        return max((i for i in range(len(x)) if n[i] == longest), key=acc)

    def p_worse(i: int, lead: int) -> float:
        k = min(n[i], n[lead])
        losses = sum(1 for a, b in zip(x[i][:k], x[lead][:k], strict=True) if a < b)
        wins = sum(1 for a, b in zip(x[i][:k], x[lead][:k], strict=True) if a > b)
        return one_sided_p(losses, wins)

    while left > 0:
        lead = leader()
        rival = max((i for i in range(len(x)) if i != lead), key=lambda i: (p_worse(i, lead), acc(i)))
        target = min(max(n[lead], n[rival]) + block, pool)
        while target > min(n[lead], n[rival]) and sum(max(0, target - n[i]) for i in (lead, rival)) > left:
            target -= 1
        if target <= min(n[lead], n[rival]):
            break
        for i in (lead, rival):
            left -= max(0, target - n[i])
            n[i] = max(n[i], target)
    return leader()


def mean_ci(values: list[float]) -> str:
    """Mean with its 95% normal interval."""
    return f"{statistics.fmean(values):.4f} ±{1.96 * statistics.stdev(values) / math.sqrt(len(values)):.4f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=2000)
    parser.add_argument("--dev", type=int, nargs="+", default=[16, 66, 266])
    parser.add_argument("--start", type=float, default=0.25, help="race: its first cases, as a share of dev.")
    parser.add_argument("--spaces", nargs="+", default=list(SPACES), choices=list(SPACES))
    args = parser.parse_args(argv)
    print(f"{args.draws} draws a row; regret: best true accuracy minus the exported one's, mean ±95%;")
    print("every rule on the requests today's rule sent on the same draw")
    print(f"{'space':>9} {'dev':>4} {'calls':>6} {'today':>16} {'uniform':>16} {'race':>16} {'race - today':>16} "
          f"{'told top 2':>16}")  # fmt: skip
    for name in args.spaces:
        space = SPACES[name]
        truth = [alone for alone, _ in space] + [demos for _, demos in space]
        best = max(truth)
        for dev in args.dev:
            rng = random.Random(dev)
            start = max(2, round(dev * args.start))
            block = max(1, -(-start // 4))
            rows, sent = [], []
            for _ in range(args.draws):
                x = draw(space, 400, rng)
                pick, calls = today(x, dev, rng)
                sent.append(calls)
                picks = (pick, uniform(x, calls), race(x, calls, start, block), told(x, calls, truth))
                rows.append([best - truth[p] for p in picks])
            now, uni, rac, top = ([r[i] for r in rows] for i in range(4))
            diff = [a - b for a, b in zip(rac, now, strict=True)]
            print(f"{name:>9} {dev:>4} {statistics.fmean(sent):>6.0f} {mean_ci(now):>16} {mean_ci(uni):>16} "
                  f"{mean_ci(rac):>16} {mean_ci(diff):>16} {mean_ci(top):>16}", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
