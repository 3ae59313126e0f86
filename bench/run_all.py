"""Every benchmark in bench/, one after another, each at a small size; prints every figure.

``make bench`` runs this. ``--size smoke`` runs each at its smallest size (seconds each): what
tests/test_bench.py runs, so that no script can break unnoticed. Each script's own defaults are
the full size; run it alone for those (see its docstring).

    python bench/run_all.py [--size small|smoke] [--only NAME ...]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

SIZES: dict[str, dict[str, list[str]]] = {
    "startup": {"small": ["--runs", "5"], "smoke": ["--runs", "1", "--warm-ups", "0", "--only", "help", "predict"]},
    "overhead": {"small": ["--decisions", "100", "--repeats", "3"], "smoke": ["--decisions", "5", "--repeats", "1"]},
    "critical_path": {
        "small": ["--latency", "0.2", "--examples", "8", "--concurrency", "4"],
        "smoke": ["--latency", "0.01", "--examples", "2", "--concurrency", "2"],
    },
    "dry_run": {
        "small": ["--examples", "200", "--real", "50"],
        "smoke": ["--examples", "5", "--real", "3", "--concurrency", "4"],
    },
    "early_stopping": {"small": ["--cases", "50"], "smoke": ["--cases", "4"]},
    "price": {
        "small": ["--cases", "20"],
        "smoke": ["--cases", "2", "--words", "60", "--designs", "self-consistency,jot"],
    },
    "study_reuse": {
        "small": ["--trials", "12", "--dev", "10", "--train", "5"],
        "smoke": ["--trials", "2", "--dev", "3", "--train", "3"],
    },
    "design_search": {
        "small": ["--trials", "20", "--dev", "40", "--test", "100"],
        "smoke": ["--trials", "3", "--dev", "4", "--test", "4", "--train", "4"],
    },
    "study_selection": {
        "small": ["--budgets", "100", "400", "--seeds", "4"],
        "smoke": ["--budgets", "20", "--seeds", "1", "--spaces", "vote", "models", "learnable"],
    },
    "race_allocation": {"small": ["--draws", "500"], "smoke": ["--draws", "5", "--dev", "16"]},
    "settle": {
        "small": ["--cases", "200", "--seeds", "2"],
        "smoke": ["--cases", "10", "--dev-cases", "20", "--seeds", "2", "--aurocs", "0.9"],
    },
    "optimizers": {
        "small": ["--train", "16", "--dev", "12", "--test", "30", "--seeds", "30"],
        "smoke": [
            "--frameworks",
            "zero-shot",
            "--optimizers",
            "labeled",
            "--train",
            "4",
            "--dev",
            "4",
            "--test",
            "6",
            "--seeds",
            "2",
            "--fdr-test",
            "6",
        ],
    },
    "scale": {
        "small": ["--cases", "600", "--concurrency", "32", "--pairs", "1"],
        "smoke": ["--cases", "8", "--concurrency", "4", "--pairs", "1"],
    },
    "batch": {
        "small": ["--examples", "50", "--turnaround", "0.5"],
        "smoke": ["--examples", "4", "--turnaround", "0.05", "--designs", "jot,settle"],
    },
}
"""Script name -> size -> its arguments. Every ``bench/*.py`` but this one has an entry (a test checks)."""


def command(name: str, size: str) -> list[str]:
    """The command line that runs benchmark ``name`` at ``size``."""
    return [sys.executable, str(HERE / f"{name}.py"), *SIZES[name][size]]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", choices=("small", "smoke"), default="small")
    parser.add_argument("--only", nargs="*", choices=sorted(SIZES), help="run only these benchmarks")
    args = parser.parse_args(argv)
    failed = []
    for name in args.only or SIZES:
        cmd = command(name, args.size)
        print(f"\n=== bench/{name}.py {' '.join(SIZES[name][args.size])}", flush=True)
        start = time.perf_counter()
        done = subprocess.run(cmd, check=False)
        print(f"--- {name}: exit {done.returncode}, {time.perf_counter() - start:.1f} s", flush=True)
        if done.returncode != 0:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
