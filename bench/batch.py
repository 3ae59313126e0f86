"""Batch mode per design: batches, requests, live vs batch price, and wall time at a given turnaround.

Each design runs with ``--batch`` on N cases against a loopback :class:`FakeServer` whose batches
take ``--turnaround`` seconds (answers from the oracle: each role right with probability 0.7).
Prices come from a table (default: gpt-4o-mini's live $0.15 / $0.60 per 1M tokens; batch = half,
as LiteLLM's ``*_cost_per_token_batches`` says for it). ``rounds x turnaround`` is the wall a
provider's turnaround implies; ``wall`` is measured.

    python bench/batch.py [--examples 50] [--turnaround 0.5] [--designs jot,settle]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

DESIGNS = ("jot", "courtroom-llm", "debate-feedback", "settle", "self-consistency")


def main(argv: list[str] | None = None) -> None:
    """Run each design in batch mode and print one row per design."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", type=int, default=50)
    parser.add_argument("--turnaround", type=float, default=0.5, help="seconds each batch takes at the fake")
    parser.add_argument("--designs", default=",".join(DESIGNS))
    args = parser.parse_args(argv)

    from courtroom.api import run
    from courtroom.data.tasks import load_splits
    from courtroom.models.batch import recorded
    from courtroom.testing import FakeServer, oracle_responder

    work = Path(tempfile.mkdtemp(prefix="courtroom-batch-bench-"))
    os.environ["COURTROOM_CACHE_DIR"] = str(work / "cache")
    os.environ.setdefault("COURTROOM_BATCH_POLL", str(max(0.05, args.turnaround / 4)))
    prices = work / "prices.json"
    prices.write_text(json.dumps({"openai/m": [0.15, 0.60]}))
    _, splits, _ = load_splits("boolean_expressions", seed=0)
    gold = {ex.case: ex.label for examples in splits.values() for ex in examples}
    print(f"batch mode, {args.examples} cases, turnaround {args.turnaround:g} s at the fake server")
    print(f"{'design':18} {'batches':>7} {'rounds':>6} {'requests':>8} {'live $':>9} {'batch $':>9} {'wall s':>7}")
    for design in args.designs.split(","):
        os.environ["COURTROOM_CACHE_DIR"] = str(work / f"cache-{design}")  # every request is sent
        responder = oracle_responder(gold, ["True", "False"], 0.7, seed=1)
        with FakeServer(responder, turnaround=args.turnaround) as server:
            start = time.perf_counter()
            outcome = run(design, lm="openai/m", api_base=server.url, batch=True, limit=args.examples,
                          train_limit=8, prices=str(prices), out=str(work / "runs"), fail_on_error=1)  # fmt: skip
            wall = time.perf_counter() - start
        made = recorded(outcome.run_dir)
        rounds = len({r["round"] for r in made})
        s = outcome.summary
        print(
            f"{design:18} {len(made):>7} {rounds:>6} {server.counts['batch_lines']:>8} "
            f"{s['live_cost']:>9.5f} {s['cost']:>9.5f} {wall:>7.1f}",
            flush=True,
        )
        assert server.counts["requests"] == 0, "a request went out live"
    print(f"folders: {work}", file=sys.stderr)


if __name__ == "__main__":
    main()
