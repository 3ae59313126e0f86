"""Wall time vs the best schedule, against a fixed-latency local fake server (SPEC §8).

Each decision is a chain of layers of calls; a layer starts when the one before it has answered:
JoT = (2 advocates, judge) per round; Courtroom-LLM with parallel judges = hearing, 2 advocates,
the judges; Debate-Feedback = initial estimate, then per round 2 opinions, 2 replies, the
summarizer and the judge. Every call takes one latency. The harness runs ``--concurrency``
decisions at once and keeps at most ``--concurrency`` requests in flight. Three yardsticks:

- ``ideal``: max(ceil(N / concurrency) x one decision's path, calls x latency / concurrency),
  the two lower bounds the bench has always printed (``wall/ideal``);
- ``best``: the fewest latencies any schedule of these calls needs under the same dependencies,
  the same cap on requests and the harness's ``concurrency`` decisions at a time, found by exact
  search (:func:`best_steps`; a range ``lo-hi`` where the search was too big). ``wall/best``
  is what courtroom loses to its own scheduling and per-call costs: 1.00 is a perfect run;
- ``serial``: every call one after another.

``occupancy`` is the mean requests in flight at the server over the cap: calls x latency /
(wall x concurrency). ``gap/step`` spreads wall - best over the best schedule's steps (ms a step
of ``concurrency`` calls loses), beside ``ms/call``: one call's own cost at zero latency (the
decision run alone against the same server, client and fake server sharing one interpreter).
When the gap per step is a few calls' worth and does not grow with the latency, the rest of the
wall time is per-call processing, not waiting for a slot. Also prints peak resident memory.

    python bench/critical_path.py [--latency 0.2] [--examples 8] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time
from collections.abc import Iterator, Sequence

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from courtroom.eval.harness import evaluate, total_usage  # noqa: E402
from courtroom.models.cache import configure_cache  # noqa: E402
from courtroom.programs import FRAMEWORKS  # noqa: E402
from courtroom.testing import FakeServer  # noqa: E402

CASES = {
    "jot": ({"n_loops": 3}, lambda k: [2, 1] * k["n_loops"]),
    "courtroom-llm": ({"n_judges": 5, "judge_mode": "parallel", "k_precedents": 0}, lambda k: [1, 2, k["n_judges"]]),
    "debate-feedback": ({"n_rounds": 2, "variant": "single"}, lambda k: [1] + [2, 2, 1, 1] * k["n_rounds"]),
}
"""Framework -> (knobs, the layers of one decision)."""


# The best schedule. A decision is a chain of layers (the calls of a layer run together; a layer
# starts when the one before it has answered), every call takes one latency, at most ``slots``
# requests are in flight. The decisions are identical, so a state is a sorted tuple of their
# progress, and a search over states finds the fewest latencies exactly. With unit calls some best
# schedule never leaves a slot idle while a call is ready (moving that call earlier breaks no
# dependency), so each step fills ``min(slots, ready)`` slots; with ``open_cap`` (at most that many
# decisions started and not finished, as the harness runs ``concurrency`` at once) every number of
# calls is tried, since opening a decision early can block another.

State = tuple[tuple[int, int], ...]
"""Per decision: (its current layer, calls of that layer not yet run); (len(layers), 0) is done."""


def best_steps(
    layers: Sequence[int], n: int, slots: int, open_cap: int | None = None, *, budget: int = 200_000
) -> tuple[int, int]:
    """(lower, upper) bound on the fewest latencies for ``n`` decisions of ``layers`` in ``slots``.

    The two are equal (the exact best) unless the search would visit more than ``budget`` states;
    then ``lower`` is the work or path bound and ``upper`` the best list schedule found.
    """
    shape = tuple(layers)
    bound = max(-(-n * sum(shape) // slots), len(shape))  # all the calls over the slots; one decision's path
    upper = min(_greedy(shape, n, slots, open_cap, ahead) for ahead in (False, True))
    if upper == bound:
        return bound, bound  # a schedule that meets a lower bound is a best one
    memo: dict[State, int] = {}

    def search(state: State) -> int:
        live = [st for st in state if st[0] < len(shape)]
        if not live:
            return 0
        if state in memo:
            return memo[state]
        if len(memo) >= budget:
            raise _TooBig
        done = ((len(shape), 0),) * (len(state) - len(live))
        memo[state] = 1 + min(
            search(tuple(sorted(nxt + done))) for nxt in _moves(shape, slots, open_cap, tuple(sorted(live)))
        )
        return memo[state]

    try:
        best = search(tuple((0, shape[0]) for _ in range(n)))
    except _TooBig:
        return bound, upper
    return best, best


class _TooBig(Exception):
    """The exact search passed its budget of states."""


def _greedy(layers: tuple[int, ...], n: int, slots: int, open_cap: int | None, ahead: bool) -> int:
    """Latencies of a list schedule: open decisions first, the most (``ahead``) or least advanced first."""
    state = [(0, layers[0]) for _ in range(n)]
    steps = 0
    while any(layer < len(layers) for layer, _ in state):
        steps += 1
        free = slots
        opened = sum(1 for s in state if s != (0, layers[0]) and s[0] < len(layers))
        order = sorted(range(n), key=lambda i: (state[i] == (0, layers[0]), -state[i][0] if ahead else state[i][0]))
        for i in order:
            layer, left = state[i]
            if layer >= len(layers) or free == 0:
                continue
            if state[i] == (0, layers[0]):
                if open_cap is not None and opened >= open_cap:
                    continue
                opened += 1
            run = min(left, free)
            free -= run
            left -= run
            if left == 0:
                layer += 1
                left = layers[layer] if layer < len(layers) else 0
            state[i] = (layer, left)
    return steps


def _moves(layers: tuple[int, ...], slots: int, open_cap: int | None, live: State) -> Iterator[State]:
    """Each next state: ``k`` calls run, split over the decisions (identical ones: amounts non-increasing)."""
    ready = sum(left for _, left in live)
    if open_cap is None:
        totals: Sequence[int] = [min(slots, ready)]
    else:
        totals = range(min(slots, ready), 0, -1)

    def fresh(s: tuple[int, int]) -> bool:
        return s == (0, layers[0])

    opened = sum(1 for s in live if not fresh(s))

    def split(i: int, k: int, cap: int, prev: tuple[int, int] | None, limit: int) -> Iterator[list[int]]:
        if i == len(live):
            if k == 0:
                yield []
            return
        s = live[i]
        top = min(s[1], k, limit if s == prev else s[1])
        if fresh(s) and cap <= 0:
            top = 0
        for a in range(top, -1, -1):
            for rest in split(i + 1, k - a, cap - (1 if fresh(s) and a else 0), s, a):
                yield [a, *rest]

    cap = (open_cap - opened) if open_cap is not None else len(live)
    for k in totals:
        for amounts in split(0, k, cap, None, k):
            out = []
            for (layer, left), a in zip(live, amounts, strict=True):
                left -= a
                if left == 0:
                    layer += 1
                    left = layers[layer] if layer < len(layers) else 0
                out.append((layer, left))
            yield tuple(out)


def best_text(layers: list[int], n: int, concurrency: int, latency: float) -> tuple[str, float]:
    """The best schedule as printed (seconds, ``lo-hi`` when only bounded), its seconds and steps (upper end)."""
    lo, hi = best_steps(layers, n, concurrency, open_cap=concurrency)
    text = f"{lo * latency:.2f}" if lo == hi else f"{lo * latency:.2f}-{hi * latency:.2f}"
    return text, hi * latency, hi


def call_ms(prog: dspy.Module, server: FakeServer, name: str, calls: int) -> float:
    """Milliseconds per call of two decisions run one after another at zero latency."""
    latency, server.latency = server.latency, 0.0
    try:
        start = time.perf_counter()
        for i in range(2):
            prog(case=f"{name} zero-latency case {i} is")
        return (time.perf_counter() - start) * 1000 / (2 * calls)
    finally:
        server.latency = latency


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args(argv)
    configure_cache(enabled=False)
    with FakeServer(latency=args.latency) as server:
        lm = server.lm(cache=False)
        print(f"latency {args.latency:.2f} s, {args.examples} examples, concurrency {args.concurrency}")
        print(
            f"{'framework':16} {'calls':>6} {'wall s':>8} {'ideal s':>8} {'wall/ideal':>10} {'best s':>8} "
            f"{'wall/best':>9} {'occupancy':>9} {'gap/step':>8} {'ms/call':>7} {'serial s':>9}"
        )
        for name, (knobs, shape) in CASES.items():
            layers = shape(knobs)
            prog = FRAMEWORKS[name](["True", "False"], lm=lm, **knobs)
            exs = [
                dspy.Example(case=f"{name} case {i} is", label="True", id=str(i)).with_inputs("case")
                for i in range(args.examples)
            ]
            prog(case=f"{name} warm-up is")  # the first call pays LiteLLM's start-up
            start = time.perf_counter()
            results = evaluate(prog, exs, concurrency=args.concurrency)
            wall = time.perf_counter() - start
            calls = total_usage(results).calls
            if calls != sum(layers) * args.examples:
                print(f"{name}: {calls} calls, but its layers {layers} make {sum(layers) * args.examples}")
            by_path = math.ceil(args.examples / args.concurrency) * len(layers) * args.latency
            ideal = max(by_path, calls * args.latency / args.concurrency)
            best, best_s, steps = best_text(layers, args.examples, args.concurrency, args.latency)
            busy = calls * args.latency / (wall * args.concurrency)
            gap = (wall - best_s) * 1000 / steps
            per_call = call_ms(prog, server, name, sum(layers))
            print(
                f"{name:16} {calls:6d} {wall:8.2f} {ideal:8.2f} {wall / ideal:10.2f} {best:>8} "
                f"{wall / best_s:9.2f} {busy:9.2f} {gap:8.1f} {per_call:7.1f} {calls * args.latency:9.2f}"
            )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
