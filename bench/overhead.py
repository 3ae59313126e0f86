"""Framework overhead per LM call, measured against an instant fake model.

The goal is courtroom's own cost per LM call: time per LM call through whole JoT decisions
(courtroom + DSPy adapter/parse + the fake's engine) minus time per bare ``dspy.Predict`` call
through the same adapter and fake. That difference is what the program layer adds (role routing,
metering, threads per round, transcript). Target: at most 0.3 ms per call.

    python bench/overhead.py [--decisions 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from courtroom.models.lms import RoleLMs, use_role  # noqa: E402
from courtroom.models.usage import metered  # noqa: E402
from courtroom.programs import JudgmentOfThought  # noqa: E402
from courtroom.signatures.jot import Judge  # noqa: E402
from courtroom.testing import scripted_lm  # noqa: E402

TARGET_MS = 0.3
"""Courtroom's own cost per LM call over bare ``dspy.Predict`` (same adapter, same fake)."""


def per_call_jot(decisions: int) -> tuple[float, int]:
    lm = scripted_lm({"judge": {"decision": "True"}})
    prog = JudgmentOfThought(["True", "False"], lm=lm, n_loops=3)
    prog(case="warm up is")
    start = time.perf_counter()
    with metered() as meter:
        for i in range(decisions):
            prog(case=f"True and not False {i} is")
    return (time.perf_counter() - start) / meter.usage.calls, meter.usage.calls


def per_call_bare(calls: int) -> float:
    lm = scripted_lm({"default": {"decision": "True"}})
    judge = dspy.Predict(Judge)
    inputs = dict(
        case="x",
        positive_position="True",
        negative_position="False",
        lawyer_argument="a",
        prosecutor_argument="b",
        judgment_round="judgment 1",
    )
    with use_role(RoleLMs(default=lm), "default"):  # same adapter, no courtroom program around it
        judge(**inputs)
        start = time.perf_counter()
        for i in range(calls):
            judge(**{**inputs, "case": f"x {i}"})
    return (time.perf_counter() - start) / calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    jot, bare = [], []
    calls = 0
    for _ in range(args.repeats):
        t, calls = per_call_jot(args.decisions)
        jot.append(t)
        bare.append(per_call_bare(calls))
    j, b = statistics.median(jot) * 1e3, statistics.median(bare) * 1e3
    print(f"LM calls per repeat:              {calls} ({args.decisions} JoT decisions x 9 calls)")
    print(f"per call through JoT:             {j:.3f} ms  (median of {args.repeats})")
    print(f"per call, bare dspy.Predict:      {b:.3f} ms")
    print(f"courtroom overhead per call:      {j - b:.3f} ms  ({j / b:.2f}x bare)")
    print(f"overhead vs target 0.3 ms:        {'OK' if j - b <= TARGET_MS else 'ABOVE'} ({j - b:.3f} ms)")


if __name__ == "__main__":
    main()
