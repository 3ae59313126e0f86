"""Wall time vs the critical-path ideal, against a fixed-latency local fake server (SPEC §8).

One decision's ideal wall time is its critical path in model latencies: JoT = 2 per round
(advocates together, then the judge); Courtroom-LLM with parallel judges = 3 (hearing, advocates,
judges); Debate-Feedback = 1 + 2 per round + 1 (initial estimate, opinions, replies, judge per
round). Across examples the harness runs ``--concurrency`` decisions at once, so the ideal for N
examples is ceil(N / concurrency) x one decision's path. Also prints peak resident memory.

    python bench/critical_path.py [--latency 0.2] [--examples 8] [--concurrency 4]
"""

from __future__ import annotations

import argparse
import math
import os
import resource
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from courtroom.eval.harness import evaluate, total_usage  # noqa: E402
from courtroom.models.cache import configure_cache  # noqa: E402
from courtroom.programs import FRAMEWORKS  # noqa: E402
from courtroom.testing import FakeServer  # noqa: E402

CASES = {
    "jot": ({"n_loops": 3}, lambda k: 2 * k["n_loops"]),
    "courtroom-llm": ({"n_judges": 5, "judge_mode": "parallel", "k_precedents": 0}, lambda k: 3),
    "debate-feedback": ({"n_rounds": 2, "variant": "single"}, lambda k: 1 + 3 * k["n_rounds"]),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--examples", type=int, default=8)
    parser.add_argument("--concurrency", type=int, default=4)
    args = parser.parse_args()
    configure_cache(enabled=False)
    with FakeServer(latency=args.latency) as server:
        lm = server.lm(cache=False)
        print(f"latency {args.latency:.2f} s, {args.examples} examples, concurrency {args.concurrency}")
        print(f"{'framework':16} {'calls':>6} {'wall s':>8} {'ideal s':>8} {'wall/ideal':>10} {'serial s':>9}")
        for name, (knobs, path) in CASES.items():
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
            by_path = math.ceil(args.examples / args.concurrency) * path(knobs) * args.latency
            ideal = max(by_path, calls * args.latency / args.concurrency)
            serial = calls * args.latency
            print(f"{name:16} {calls:6d} {wall:8.2f} {ideal:8.2f} {wall / ideal:10.2f} {serial:9.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak resident memory: {peak:.0f} MB")


if __name__ == "__main__":
    main()
