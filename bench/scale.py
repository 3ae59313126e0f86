"""The live path at scale: courtroom's wall against bare DSPy's, and requests in flight.

Both send one zero-shot call per case to the same loopback fake (in this process, whose main
thread only waits while a client runs: its work does not compete with the client's for the GIL),
``--concurrency`` at a time:

- courtroom: ``courtroom run zero-shot --dataset CSV --concurrency N`` (the CLI, in a subprocess);
- bare: ``dspy.Predict`` in an N-thread pool, same cases, same server, DSPy's disk cache on too.

Each pair runs back to back and the figures are their ratio (the machine's noise cancels). Goal:
courtroom's wall at most 1.1x bare's, and the peak in flight equal to ``--concurrency``. The peak
reaches ``--concurrency`` only when a request takes longer than the client's own work for that
many calls: at 0.05 s on 2 cores both clients are CPU-bound (their peaks stay below 64); at
``--latency 0.5`` both reach 64 (tests/test_in_flight.py checks courtroom's).

    python bench/scale.py [--cases 3000] [--concurrency 64] [--latency 0.05] [--pairs 2]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

LABELS = ("yes", "no")


def _answer(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Every field a schema asks for (or ``answer`` without one): the fake answers any client alike."""
    from courtroom.testing._fakes import answer_for_schema

    if schema.get("properties"):
        return dict(answer_for_schema(schema, {}, "yes"))
    return {"reasoning": "because", "answer": "yes"}


def _by_length(model: str, messages: list[dict[str, Any]], text: str) -> dict[str, int]:
    """Tokens counted by length, not by LiteLLM's tokenizer: the server must not be what sets the pace."""
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
    completion = len(text) // 4
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


@contextlib.contextmanager
def serving(latency: float) -> Iterator[Any]:
    """The fake server, answering after ``latency`` seconds, in threads of this process."""
    from courtroom.testing import FakeServer, _fake_server

    usage = _fake_server._usage
    _fake_server._usage = _by_length  # type: ignore[attr-defined]
    try:
        with FakeServer(_answer, latency=latency) as server:
            yield server
    finally:
        _fake_server._usage = usage  # type: ignore[attr-defined]


def _cases(folder: Path, n: int) -> Path:
    path = folder / "cases.csv"
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["text", "label"])
        for i in range(n * 5 // 3 + 10):  # the test split courtroom scores is 60% of a dataset
            writer.writerow([f"Case {i}: is {i} an even number?", LABELS[i % 2]])
    return path


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    """Wall seconds of one child process."""
    start = time.perf_counter()
    done = subprocess.run(cmd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{cmd[2] if len(cmd) > 2 else cmd}: exit {done.returncode}\n{done.stderr[-2000:]}")
    return wall


def bare(url: str, csv_path: str, n: int, concurrency: int) -> None:
    """The baseline: ``dspy.Predict`` over every case in a thread pool (run in its own process)."""
    from concurrent.futures import ThreadPoolExecutor

    import dspy

    class Classify(dspy.Signature):
        """Classify the input."""

        case: str = dspy.InputField()
        labels: str = dspy.InputField()
        answer: str = dspy.OutputField()

    with open(csv_path, newline="") as f:
        cases = [row["text"] for row in csv.DictReader(f)][:n]
    dspy.configure(
        lm=dspy.LM("openai/fake", api_base=url, api_key="sk-fake", num_retries=0), adapter=dspy.JSONAdapter()
    )
    predict = dspy.Predict(Classify)
    with ThreadPoolExecutor(concurrency) as pool:
        answers = list(pool.map(lambda case: predict(case=case, labels="yes, no").answer, cases))
    assert len(answers) == len(cases)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="seconds the fake takes per request")
    parser.add_argument("--pairs", type=int, default=2, help="courtroom/bare pairs, run back to back")
    parser.add_argument("--bare", nargs=2, metavar=("URL", "CSV"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.bare:
        return bare(args.bare[0], args.bare[1], args.cases, args.concurrency)
    rows: dict[str, list[tuple[float, int, int]]] = {"courtroom": [], "bare": []}
    with serving(args.latency) as server, tempfile.TemporaryDirectory(prefix="courtroom-scale-") as tmp:
        url, folder = server.url, Path(tmp)
        data = _cases(folder, args.cases)
        for pair in range(args.pairs):
            env = {
                **os.environ,
                "COURTROOM_CACHE_DIR": str(folder / f"cache-{pair}"),
                "DSPY_CACHEDIR": str(folder / f"dspy-{pair}"),
            }
            commands = {
                "courtroom": [
                    sys.executable,
                    "-m",
                    "courtroom.cli",
                    "run",
                    "zero-shot",
                    "--dataset",
                    str(data),
                    "--labels",
                    ",".join(LABELS),
                    "--text-field",
                    "text",
                    "--label-field",
                    "label",
                    "--lm",
                    "openai/fake",
                    "--api-base",
                    url,
                    "--concurrency",
                    str(args.concurrency),
                    "--out",
                    str(folder / f"run-{pair}"),
                    "--show",
                    "0",
                    "--limit",
                    str(args.cases),
                ],
                "bare": [
                    sys.executable,
                    __file__,
                    "--concurrency",
                    str(args.concurrency),
                    "--cases",
                    str(args.cases),
                    "--bare",
                    url,
                    str(data),
                ],
            }
            for name, cmd in commands.items():
                server.max_in_flight, server.counts["requests"] = 0, 0
                wall = _timed(cmd, env)
                peak, requests = server.max_in_flight, server.counts["requests"]
                rows[name].append((wall, peak, requests))
                print(
                    f"pair {pair + 1} {name:9} {wall:6.2f} s  peak {peak:3} in flight  {requests} requests", flush=True
                )
    ratio = [c[0] / b[0] for c, b in zip(rows["courtroom"], rows["bare"], strict=True)]
    print(json.dumps({"cases": args.cases, "concurrency": args.concurrency, "latency": args.latency}))
    for name, runs in rows.items():
        print(
            f"{name:9} wall {statistics.median(r[0] for r in runs):6.2f} s  peak in flight "
            f"{max(r[1] for r in runs):3}  requests {runs[0][2]}"
        )
    pairs = ", ".join(f"{r:.2f}" for r in ratio)
    print(f"courtroom / bare wall: {statistics.median(ratio):.2f}x (pairs: {pairs}; goal <= 1.1)")


if __name__ == "__main__":
    main()
