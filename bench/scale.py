"""The live path at scale: courtroom's wall against bare DSPy's, and requests in flight.

Both send one zero-shot call per case to the same loopback fake (in this process, whose main
thread only waits while a client runs: its work does not compete with the client's for the GIL),
``--concurrency`` at a time:

- courtroom: ``courtroom run zero-shot --dataset CSV --concurrency N`` (the CLI, in a subprocess);
- bare: ``dspy.Predict`` in an N-thread pool, same cases, same server, DSPy's disk cache on too.

Each pair runs back to back and the figures are their ratio (the machine's noise cancels). Goal
(issue 44): courtroom's wall at most 1.0x bare's, and its resident memory growing by at most
4 KB per call. Per client and run it prints:

- ``wall``: the process's whole life, launch to exit;
- ``start``: launch to the server's first request (imports, data, set-up);
- ``exit``: the process's last line of output to its exit (interpreter shutdown);
- ``cpu``: the process's user + system CPU seconds, and per call over the whole life;
- ``rss/call``: the slope of its resident set (sampled every 50 ms) against the requests the
  server had answered, over the run's last three quarters (after the threads and connections
  are made), in KB per call; ``peak`` its largest resident set.

The peak in flight reaches ``--concurrency`` only when a request takes longer than the client's
own work for that many calls: at 0.05 s on 2 cores both clients are CPU-bound (their peaks stay
below 64); at ``--latency 0.5`` both reach 64 (tests/test_in_flight.py checks courtroom's).

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
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LABELS = ("yes", "no")
first: list[float] = []
"""When the server got the current client's first request (``perf_counter``)."""


def _answer(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Every field a schema asks for (or ``answer`` without one): the fake answers any client alike."""
    from courtroom.testing._fakes import answer_for_schema

    if not first:
        first.append(time.perf_counter())
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


@dataclass
class Life:
    """One client process's figures (see the module docstring)."""

    wall: float
    start: float
    exit: float
    cpu: float
    peak_mb: float
    rss: list[tuple[int, int]] = field(default_factory=list)
    """(requests answered, resident KB) every 50 ms."""

    def rss_per_call(self) -> float | None:
        """KB of resident memory per request over the run's last three quarters (least squares)."""
        top = max((n for n, _ in self.rss), default=0)
        points = [(n, kb) for n, kb in self.rss if n >= top / 4]
        if len({n for n, _ in points}) < 3:
            return None
        return statistics.linear_regression([n for n, _ in points], [kb for _, kb in points]).slope


def _rss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
    except (OSError, StopIteration, ValueError):
        return None


def _timed(cmd: list[str], env: dict[str, str], server: Any) -> Life:
    """Run one client process to its end, watching its output, its memory and the server."""
    first.clear()
    launched = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    last = [launched]
    err: list[str] = []

    def read(stream: Any, keep: list[str] | None) -> None:
        for line in stream:
            last[0] = time.perf_counter()
            if keep is not None:
                keep.append(line)

    readers = [
        threading.Thread(target=read, args=(proc.stdout, None)),
        threading.Thread(target=read, args=(proc.stderr, err)),
    ]
    for t in readers:
        t.start()
    rss: list[tuple[int, int]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(0.05):
            kb = _rss_kb(proc.pid)
            if kb is not None:
                rss.append((server.counts["requests"], kb))

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    ended = time.perf_counter()
    done.set()
    for t in [sampler, *readers]:
        t.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[2] if len(cmd) > 2 else cmd}: exit {proc.returncode}\n{''.join(err)[-2000:]}")
    return Life(
        wall=ended - launched,
        start=(first[0] if first else ended) - launched,
        exit=ended - last[0],
        cpu=usage.ru_utime + usage.ru_stime,
        peak_mb=usage.ru_maxrss / 1024,
        rss=rss,
    )


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
    print(f"{len(answers)} answers", flush=True)  # its last line, as courtroom's is its run folder


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
    rows: dict[str, list[tuple[Life, int, int]]] = {"courtroom": [], "bare": []}
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
                life = _timed(cmd, env, server)
                peak, requests = server.max_in_flight, server.counts["requests"]
                rows[name].append((life, peak, requests))
                print(f"pair {pair + 1} {name:9} {_line(life, requests)}  peak {peak:3} in flight", flush=True)
    ratio = [c[0].wall / b[0].wall for c, b in zip(rows["courtroom"], rows["bare"], strict=True)]
    print(json.dumps({"cases": args.cases, "concurrency": args.concurrency, "latency": args.latency}))
    for name, runs in rows.items():
        per_call = [r for r in (life.rss_per_call() for life, _, _ in runs) if r is not None]
        print(
            f"{name:9} median wall {statistics.median(life.wall for life, _, _ in runs):6.2f} s  "
            f"start {statistics.median(life.start for life, _, _ in runs):5.2f} s  "
            f"exit {statistics.median(life.exit for life, _, _ in runs):5.2f} s  "
            f"cpu {statistics.median(life.cpu for life, _, _ in runs):6.2f} s  "
            f"rss/call {statistics.median(per_call) if per_call else float('nan'):5.1f} KB  "
            f"peak in flight {max(r[1] for r in runs):3}  requests {runs[0][2]}"
        )
    pairs = ", ".join(f"{r:.2f}" for r in ratio)
    print(f"courtroom / bare wall: {statistics.median(ratio):.2f}x (pairs: {pairs}; goal <= 1.0)")


def _line(life: Life, requests: int) -> str:
    per_call = life.rss_per_call()
    rss = f"{per_call:5.1f}" if per_call is not None else "  n/a"
    return (
        f"wall {life.wall:6.2f} s  start {life.start:5.2f} s  exit {life.exit:5.2f} s  cpu {life.cpu:6.2f} s "
        f"({1000 * life.cpu / max(requests, 1):4.2f} ms/call)  rss/call {rss} KB  peak {life.peak_mb:5.0f} MB  "
        f"{requests} requests"
    )


if __name__ == "__main__":
    main()
