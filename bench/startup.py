"""Start-up: whole-process wall time and peak memory of short commands, each beside ``import dspy``.

Every figure is the median of ``--runs`` runs, taken in turn with ``python -c "import dspy"``
(A B A B ...), so a machine that slows down mid-run slows both; the ratio is the median of the
pairwise ratios. The commands:

- ``courtroom --help`` and a bad option (refused before DSPy loads); target < 0.5 s each;
- ``courtroom run zero-shot --task boolean_expressions --limit 1`` on a fake OpenAI-compatible
  server in this process (a fresh cache each run, so the request is sent); target < 2.5 s;
- ``courtroom predict program.json CASE`` from a program compiled once up front; target < 2.5 s.

Peak memory is the largest resident set of the command's process (``wait4``'s ``ru_maxrss``).
``--only help predict`` times only those commands (its smallest size, in ``bench/run_all.py``).

    python bench/startup.py [--runs 5] [--warm-ups 1] [--only help bad-option run predict]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

TARGETS = {"--help": 0.5, "bad option": 0.5, "run --limit 1": 2.5, "predict one case": 2.5}
ONLY = {"help": "--help", "bad-option": "bad option", "run": "run --limit 1", "predict": "predict one case"}
"""``--only`` names -> the commands' names."""


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    """Wall seconds, peak MiB and exit status of one whole process."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024, proc.returncode


SERVE = """
import sys
from courtroom.testing import FakeServer
with FakeServer() as server:
    print(server.url, flush=True)
    sys.stdin.read()  # until the bench closes the pipe
"""


@contextlib.contextmanager
def fake_server(env: dict[str, str], here: bool) -> Iterator[str]:
    """A fake OpenAI-compatible server in a child process (in a thread of this one if ``here``); its base URL."""
    if here:
        from courtroom.testing import FakeServer

        with FakeServer() as server:
            yield server.url
        return
    proc = subprocess.Popen(
        [sys.executable, "-c", SERVE], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        if not url:
            raise SystemExit("the fake server did not start")
        yield url
    finally:
        if proc.stdin:
            proc.stdin.close()
        proc.wait(timeout=30)


def compile_program(args: list[str], env: dict[str, str], here: bool) -> None:
    """``courtroom compile ARGS`` in a child process (in this one if ``here``): the program predict loads."""
    if here:
        from courtroom.cli import main

        out, saved = io.StringIO(), dict(os.environ)
        os.environ.update(env)  # the child's environment (its cache folder), for this call only
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
                code = main(args)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        log = out.getvalue()
    else:
        done = subprocess.run(
            [sys.executable, "-m", "courtroom.cli", *args], capture_output=True, text=True, env=env, check=False
        )
        code, log = done.returncode, done.stderr
    if code != 0:
        raise SystemExit(f"could not compile the program predict loads:\n{log[-2000:]}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="counted runs of each command (after the warm-ups)")
    parser.add_argument(
        "--warm-ups", type=int, default=1, help="uncounted runs of each command first (the file cache, .pyc files)"
    )
    parser.add_argument("--only", nargs="+", choices=list(ONLY), help="time only these commands")
    args = parser.parse_args(argv)
    names = [ONLY[name] for name in args.only or ONLY]

    py = sys.executable
    cli = [py, "-m", "courtroom.cli"]
    work = Path(tempfile.mkdtemp(prefix="courtroom-startup-"))
    env = {**os.environ, "COURTROOM_CACHE_DIR": str(work / "cache"), "COLUMNS": "100"}
    # The fake server and the compile run in processes of their own: this one stays small, so that
    # a forked command's peak memory is its own (ru_maxrss counts the parent's pages a child starts
    # with). A process that holds DSPy already (main() called from the test suite) is not small
    # whatever it runs, and runs both itself: two interpreters fewer to start.
    here = "dspy" in sys.modules
    with fake_server(env, here) as url:
        model = ["--lm", "openai/fake", "--api-base", url]
        program = work / "program.json"
        if "predict one case" in names:
            compile_program(
                ["compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=1", "--train-limit", "2",
                 "--dev-limit", "1", "--test-limit", "0", "-o", str(program), *model],
                env, here,
            )  # fmt: skip
        commands = {
            "--help": ([*cli, "--help"], 0),
            "bad option": ([*cli, "run", "zero-shot", "--no-such-option"], 2),
            "run --limit 1": (
                [*cli, "run", "zero-shot", "--task", "boolean_expressions", "--limit", "1", "--out", str(work / "runs"),
                 *model], 0,
            ),
            "predict one case": ([*cli, "predict", str(program), "True and not False is", "--api-base", url], 0),
        }  # fmt: skip
        commands = {name: commands[name] for name in names}
        baseline = [py, "-c", "import dspy"]
        rows = []
        for name, (cmd, expected) in commands.items():
            walls, peaks, base_walls, base_peaks, ratios = [], [], [], [], []
            for i in range(args.warm_ups + args.runs):
                run_env = {**env, "COURTROOM_CACHE_DIR": str(work / f"cache-{name.split()[0]}-{i}")}
                b, base_peak, _ = timed(baseline, run_env)
                w, peak, code = timed(cmd, run_env)
                if code != expected:
                    raise SystemExit(f"{name}: exit status {code}, expected {expected}: {' '.join(cmd)}")
                if i < args.warm_ups:
                    continue  # warm-up: the file cache, .pyc files
                walls.append(w)
                peaks.append(peak)
                base_walls.append(b)
                base_peaks.append(base_peak)
                ratios.append(w / b)
            rows.append((name, statistics.median(walls), statistics.median(base_walls), statistics.median(ratios),
                         max(peaks), max(base_peaks), min(walls), max(walls)))  # fmt: skip
    print(f"median of {args.runs} runs each, paired with python -c 'import dspy' ({sys.version.split()[0]})")
    print(f"{'command':<18} {'wall':>7} {'import dspy':>12} {'ratio':>6} {'peak MiB':>14} {'min-max':>13}  target")
    for name, wall, base, ratio, peak, base_peak, lo, hi in rows:
        verdict = "OK" if wall < TARGETS[name] else "ABOVE"
        print(
            f"{name:<18} {wall:>6.2f}s {base:>11.2f}s {ratio:>5.1f}x {peak:>5.0f} (dspy {base_peak:>3.0f})"
            f" {lo:>5.2f}-{hi:<5.2f}s  < {TARGETS[name]} s {verdict}"
        )


if __name__ == "__main__":
    main()
