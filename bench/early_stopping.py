"""Calls saved by the early-stopping knobs, and what they cost in accuracy, on the oracle fake.

Each row runs one configuration on the same generated cases twice, without and with its knob,
each time on a fresh :func:`courtroom.testing.oracle_lm` (same seed, per-role accuracies), and
prints the LM calls of both runs, the calls saved (absolute and %), the share of cases that
stopped early, and both accuracies with their difference.

Read the accuracy column with the fake in mind: the oracle's correctness does not depend on
what a role reads, only on its accuracy and a draw seeded by the prompt. Courtroom-LLM's judges
must give the full panel's verdict (same prompts, same draws); elsewhere a shorter run sends
different later prompts, hence other draws, so a small accuracy change is sampling noise, not a
measured effect of stopping on a real model.

    python bench/early_stopping.py [--cases 200] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from courtroom.programs import get_framework  # noqa: E402
from courtroom.testing import oracle_lm  # noqa: E402

LABELS = ["True", "False"]
ROWS: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, float]]] = [
    # framework, base knobs, the knob on, per-role accuracy
    ("jot", {"n_loops": 5}, {"stop_when_stable": 2}, {"judge": 0.8, "default": 0.7}),
    (
        "courtroom-llm",
        {"n_judges": 5, "k_precedents": 0},
        {"early_stop": True},
        {"clerk": 0.75, "judge": 0.7, "default": 0.7},
    ),
    # The default probability fields: the oracle puts 0.9 on the label it chose.
    (
        "debate-feedback",
        {"n_rounds": 3},
        {"stop_epsilon": 0.05},
        {"judge": 0.75, "debater": 0.7, "default": 0.7},
    ),
    ("khan-debate", {"n_rounds": 3}, {"stop_on_concession": True}, {"debater": 0.7, "judge": 0.75, "default": 0.7}),
    # The shared rule (courtroom.programs._stopping) in the designs that had none of their own.
    (
        "debate-feedback",
        {"n_rounds": 3},
        {"stop_when_stable": 2},
        {"judge": 0.75, "debater": 0.7, "default": 0.7},
    ),
    (
        "courtroom-llm",
        {"n_judges": 5, "k_precedents": 0, "judge_mode": "sequential"},
        {"stop_when_stable": 2},
        {"clerk": 0.75, "judge": 0.7, "default": 0.7},
    ),
]


def cases(n: int) -> dict[str, str]:
    """``n`` cases with gold labels; fixed-width ids, so no case text contains another."""
    return {f"case {i:04d}: does the conclusion follow from the premises?": LABELS[i % 2] for i in range(n)}


def run(framework: str, knobs: dict[str, Any], gold: dict[str, str], accuracy: dict[str, float], seed: int) -> dict:
    lm = oracle_lm(gold, LABELS, accuracy=accuracy, seed=seed)
    program = get_framework(framework)(LABELS, lm=lm, **knobs)
    preds = [(program(case=case), label) for case, label in gold.items()]
    return {
        "calls": len(lm.engine_impl.turns),
        "accuracy": sum(p.label == label for p, label in preds) / len(preds),
        "stopped": sum(bool(p.get("stopped_early")) for p, _ in preds) / len(preds),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    gold = cases(args.cases)
    head = (
        f"{'framework':<16} {'knob':<22} {'calls off':>9} {'calls on':>9} {'saved':>7} {'saved %':>8} "
        f"{'stopped':>8} {'acc off':>8} {'acc on':>8} {'Δ acc':>7}"
    )
    print(f"{args.cases} cases, oracle fake (seed {args.seed}); calls are all LM calls of the run")
    print(head)
    print("-" * len(head))
    for framework, base, knob, accuracy in ROWS:
        off = run(framework, base, gold, accuracy, args.seed)
        on = run(framework, base | knob, gold, accuracy, args.seed)
        saved = off["calls"] - on["calls"]
        name, value = next(iter(knob.items()))
        print(
            f"{framework:<16} {f'{name}={value}':<22} {off['calls']:>9} {on['calls']:>9} {saved:>7} "
            f"{100 * saved / off['calls']:>7.1f}% {100 * on['stopped']:>7.1f}% {off['accuracy']:>8.3f} "
            f"{on['accuracy']:>8.3f} {on['accuracy'] - off['accuracy']:>+7.3f}"
        )
    print("base configurations: " + "; ".join(f"{f} {b}" for f, b, _, _ in ROWS))


if __name__ == "__main__":
    main()
