"""Does each optimizer learn, and does compile's proof hold? Held-out gains on the learnable oracle, and the FDR.

For every framework (zero-shot, JoT, Courtroom-LLM, Debate-Feedback) and every optimizer, a compile
on generated boolean expressions against :func:`courtroom.testing.learnable_lm`: the deciding
role (classifier or judge) answers right with probability ``--base`` (0.5), and ``--learned``
(0.9) once its own prompt holds demos (for the demo optimizers: labeled, bootstrap, bootstrap-rs,
knn) or the phrase "weigh both sides" in its instructions (for the instruction optimizers: mipro,
copro, gepa; their proposer, :func:`courtroom.testing.proposer_lm`, offers that phrase or "Be
brief." in turn). Printed per row: held-out test accuracy before and after (95% Wilson), the
paired difference (95% Newcombe) with the exact McNemar p, compile's verdict, and the LM calls the
whole compile spent (program roles and the optimizer's own model). The oracle's draws are seeded
by the prompt's case, so every optimizer that delivers the lift gets the same held-out answers:
rows of one framework differ in whether they learned and what they spent, not by sampling luck.

Then the false-discovery rate: ``--seeds`` compiles (zero-shot + labeled, and zero-shot + bootstrap)
against the no-signal oracle (accuracy ``--base`` whatever the prompt holds, a new seed each); the
share of compiles that claim a significant held-out gain. The test's level is 5% two-sided, so a
rate near or below 2.5% (one side) is expected; each rate has its 95% Wilson interval.

Run: ``.venv/bin/python bench/optimizers.py [--frameworks zero-shot,jot,courtroom-llm,debate-feedback]
[--optimizers all] [--train 20] [--dev 20] [--test 50] [--seeds 100]``.
"""

from __future__ import annotations

import argparse
import logging
import os
import tempfile
import time
from typing import Any

DEMOS = {"labeled": {"k": 2}, "bootstrap": {"max_bootstrapped_demos": 2}, "bootstrap-rs": {"num_candidate_programs": 2},
         "knn": {"k": 2}}  # fmt: skip
INSTRUCTIONS = {
    "mipro": {"auto": None, "num_candidates": 3, "num_trials": 6, "minibatch": False, "max_bootstrapped_demos": 0},
    "copro": {"breadth": 3, "depth": 1},
    "gepa": {"auto": None, "max_metric_calls": 150, "reflection_minibatch_size": 5},
}
KNOBS = {
    "zero-shot": {},
    "jot": {"n_loops": 1},
    "courtroom-llm": {"n_judges": 1, "k_precedents": 0},
    "debate-feedback": {"n_rounds": 1, "n_debaters": 2},
}
DECIDER = {"zero-shot": "classifier", "jot": "judge", "courtroom-llm": "judge", "debate-feedback": "judge"}
PHRASE = "weigh both sides"


def one_compile(framework: str, optimizer: str, data: tuple[Any, ...], base: float, learned: float) -> dict[str, Any]:
    """One compile on the learnable oracle; its held-out figures and calls."""
    from courtroom.errors import ConfigError
    from courtroom.optimize.compile import compile_program
    from courtroom.testing import learnable_lm, proposer_lm

    train, dev, test, gold = data
    role = DECIDER[framework]
    demos = optimizer in DEMOS
    lm = learnable_lm(gold, ["True", "False"], base, with_demos={role: learned} if demos else None,
                      phrase=None if demos else {role: (PHRASE, learned)})  # fmt: skip
    helper = proposer_lm([f"{PHRASE.capitalize()}, then decide.", "Be brief."])
    start = time.perf_counter()
    try:
        result = compile_program(framework, optimizer=optimizer, settings={**DEMOS, **INSTRUCTIONS}[optimizer],
                                 knobs=KNOBS[framework], trainset=train, devset=dev, testset=test,
                                 labels=["True", "False"], lm=lm, prompt_lm=helper)  # fmt: skip
    except ConfigError as exc:
        return {"framework": framework, "optimizer": optimizer, "skipped": str(exc).split(":")[0]}
    g = result.test
    assert g is not None
    return {
        "framework": framework,
        "optimizer": optimizer,
        "through": "demos" if demos else "instructions",
        "before": f"{g.before.accuracy:.2f} [{g.before.ci_low:.2f}, {g.before.ci_high:.2f}]",
        "after": f"{g.after.accuracy:.2f} [{g.after.ci_low:.2f}, {g.after.ci_high:.2f}]",
        "gain": f"{g.difference:+.2f} [{g.ci_low:+.2f}, {g.ci_high:+.2f}]",
        "p": f"{g.p_value:.2g}",
        "verdict": g.verdict,
        "calls": sum(lm.engine_impl.counts.values()) + helper.engine_impl.calls,
        "seconds": round(time.perf_counter() - start, 1),
    }


def false_discoveries(optimizer: str, seeds: range, data: tuple[Any, ...], base: float) -> tuple[int, int, int]:
    """(significant gains, significant losses, compiles) over no-signal compiles of zero-shot, one per seed.

    The no-signal draws do not depend on what a prompt holds, so two optimizers on the same seed give
    the same answers: each optimizer gets seeds of its own.
    """
    from courtroom.optimize.compile import compile_program
    from courtroom.testing import learnable_lm

    train, dev, test, gold = data
    gains = losses = 0
    for seed in seeds:
        result = compile_program("zero-shot", optimizer=optimizer, settings=DEMOS[optimizer], trainset=train,
                                 devset=dev, testset=test, labels=["True", "False"], seed=seed,
                                 lm=learnable_lm(gold, ["True", "False"], base, seed=seed))  # fmt: skip
        assert result.test is not None
        gains += result.test.verdict == "gain"
        losses += result.test.verdict == "loss"
    return gains, losses, len(seeds)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frameworks", default="zero-shot,jot,courtroom-llm,debate-feedback")
    parser.add_argument("--optimizers", default="all", help="comma-separated, or all")
    parser.add_argument("--train", type=int, default=20)
    parser.add_argument("--dev", type=int, default=20)
    parser.add_argument("--test", type=int, default=50)
    parser.add_argument("--seeds", type=int, default=100, help="no-signal compiles per FDR row (0: none)")
    parser.add_argument("--fdr-test", type=int, default=20, help="held-out cases of each no-signal compile")
    parser.add_argument("--base", type=float, default=0.5)
    parser.add_argument("--learned", type=float, default=0.9)
    args = parser.parse_args(argv)

    workdir = tempfile.mkdtemp(prefix="courtroom-bench-")
    os.environ["COURTROOM_CACHE_DIR"] = os.path.join(workdir, "cache")
    logging.disable(logging.WARNING)  # dspy's per-optimizer chatter; the figures are printed below

    import pandas as pd

    from courtroom.data.tasks import load_task
    from courtroom.eval.metrics import wilson

    def split(name: str, n: int) -> list[Any]:
        return list(load_task("boolean_expressions", split=name, limit=n).examples)

    train, dev, test = split("train", args.train), split("dev", args.dev), split("test", max(args.test, args.fdr_test))
    gold = {e.case: e.label for e in train + dev + test}
    optimizers = [*DEMOS, *INSTRUCTIONS] if args.optimizers == "all" else args.optimizers.split(",")
    print(f"learnable oracle: base {args.base}, learned {args.learned}; train {len(train)}, dev {len(dev)}, "
          f"held-out test {args.test}")  # fmt: skip
    rows = []
    for fw in args.frameworks.split(","):
        for opt in optimizers:
            rows.append(one_compile(fw, opt, (train, dev, test[: args.test], gold), args.base, args.learned))
            print("  " + ", ".join(f"{k} {v}" for k, v in rows[-1].items()), flush=True)  # progress, row by row
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(pd.DataFrame(rows).astype(object).fillna("").to_string(index=False))
    if args.seeds:
        print(f"\nno-signal oracle (accuracy {args.base} whatever the prompt), zero-shot, held-out test "
              f"{args.fdr_test}, {args.seeds} seeds:")  # fmt: skip
        for i, opt in enumerate(("labeled", "bootstrap")):
            seeds = range(i * args.seeds, (i + 1) * args.seeds)
            gains, losses, n = false_discoveries(opt, seeds, (train[:4], dev[:8], test[: args.fdr_test], gold),
                                                 args.base)  # fmt: skip
            low, high = wilson(gains / n, n)
            print(f"  {opt} (seeds {seeds.start}-{seeds.stop - 1}): significant gain claimed in {gains} of {n} "
                  f"({gains / n:.1%}, 95% CI "
                  f"[{low:.1%}, {high:.1%}]); significant loss in {losses}")  # fmt: skip


if __name__ == "__main__":
    main()
