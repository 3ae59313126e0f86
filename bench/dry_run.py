"""Dry-run speed and accuracy: estimate vs the real run on the fake server (SPEC §10).

Prints, for jot, courtroom-llm and self-consistency on N boolean-expression cases:

* the dry run's wall time for the three frameworks together (target: under 5 s for 1,000 cases),
  measured in a process that has imported LiteLLM (as any run does; the import time is printed
  apart);
* estimated vs real LM calls (target: equal) and prompt tokens (target: within 10%), the real
  run sent to :class:`courtroom.testing.FakeServer`, which counts tokens as an OpenAI server does
  (every message, LiteLLM's tokenizer), with the cache off.

    python bench/dry_run.py [--examples 1000] [--real 1000] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

FRAMEWORKS = ("jot", "courtroom-llm", "self-consistency")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--examples", type=int, default=1000, help="Cases the dry run estimates.")
    parser.add_argument("--real", type=int, default=1000, help="Cases the real run (fake server) evaluates.")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    import litellm  # noqa: F401

    from courtroom.cost.dry_run import estimate_runs
    from courtroom.data.generators import boolean_expressions
    from courtroom.models.cache import configure_cache
    from courtroom.models.lms import RoleLMs
    from courtroom.runner.config import RunConfig
    from courtroom.runner.runs import run
    from courtroom.testing import FakeServer

    imports = time.perf_counter() - start
    tmp = Path(tempfile.mkdtemp(prefix="courtroom-bench-"))
    configure_cache(tmp / "cache")
    pool = max(args.examples, args.real) * 5 // 3 + 10  # the test split is 60% of the file
    data = tmp / "cases.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in boolean_expressions(pool, seed=7)) + "\n")

    with FakeServer() as server:

        def config(framework: str, limit: int) -> RunConfig:
            return RunConfig(
                framework,
                "boolean_expressions",
                data=str(data),
                limit=limit,
                lm="openai/fake",
                api_base=server.url,
                concurrency=args.concurrency,
                out=str(tmp / "runs"),
            )

        estimate_runs({"self-consistency": config("self-consistency", 5)})  # warm: tokenizer, schemas
        start = time.perf_counter()
        big = estimate_runs({f: config(f, args.examples) for f in FRAMEWORKS})
        dry_seconds = time.perf_counter() - start
        assert server.counts["requests"] == 0, "the dry run sent a request"
        print(f"imports (litellm, courtroom): {imports:.2f} s")
        print(f"dry run, {len(FRAMEWORKS)} frameworks x {args.examples} cases: {dry_seconds:.2f} s (target < 5 s)")
        for f, e in big.items():
            print(f"  {f}: {e.calls} calls ({'exact' if e.calls_exact else 'max'}), {e.prompt_tokens} prompt tokens")

        if not args.real:
            return
        estimates = big if args.real == args.examples else estimate_runs({f: config(f, args.real) for f in FRAMEWORKS})
        print(f"\nestimate vs real run on the fake server, {args.real} cases, cache off:")
        print("| framework | calls est. | calls real | prompt tokens est. | prompt tokens real | error |")
        print("|---|---|---|---|---|---|")
        for f in FRAMEWORKS:
            before = server.counts["requests"]
            start = time.perf_counter()
            # No cache: identical prompts (the fake answers the same text every time) are all sent.
            lms = RoleLMs({"default": server.lm("openai/fake", cache=False)})
            outcome = run(config(f, args.real), lms=lms)
            sent = server.counts["requests"] - before
            real = outcome.summary["prompt_tokens"]
            est = estimates[f]
            err = (est.prompt_tokens - real) / real
            print(
                f"| {f} | {est.calls} | {sent} (program calls {outcome.summary['calls']}) | {est.prompt_tokens} "
                f"| {real} | {err:+.1%} |  ({time.perf_counter() - start:.0f} s real run)"
            )


if __name__ == "__main__":
    main()
