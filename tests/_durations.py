"""Run the suite as ``make test`` does and write where its time goes to ``tests/DURATIONS.md``.

``make test-times`` runs this. The suite runs once, with pytest's JUnit XML report (each test's
seconds, set-up and tear-down included); the page gets the run's wall time, its CPU time (user +
system of pytest and everything it started, forked or not: all are waited for), the slowest 25
tests and each file's worker-seconds. Worker-seconds add up the tests' own seconds across the
xdist workers: a file's share of the machine, whatever the number of workers.

    python tests/_durations.py [PYTEST ARGS ...]   # e.g. -n 3 --dist loadgroup
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "tests" / "DURATIONS.md"
SLOWEST = 25


def run_suite(args: list[str], report: Path) -> tuple[int, float, float, str]:
    """Exit status, wall seconds, CPU seconds and pytest's closing line of one suite run."""
    cmd = [sys.executable, "-m", "pytest", *args, f"--junitxml={report}"]
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    lines = []
    for line in proc.stdout:  # shown as it comes: the run takes minutes
        sys.stdout.write(line)
        lines.append(line)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    closing = next((x.strip(" =\n") for x in reversed(lines) if re.search(r"\d+ (passed|failed)", x)), "")
    return os.waitstatus_to_exitcode(status), wall, usage.ru_utime + usage.ru_stime, closing


def times(report: Path) -> list[tuple[float, str, str, float]]:
    """(seconds, file, test id, CPU seconds) of every test in a JUnit XML report (CPU: tests/conftest.py)."""
    out = []
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "")
        file = "tests/" + module.split(".")[-1] + ".py" if module else "?"
        cpu = next((float(p.get("value") or 0) for p in case.iter("property") if p.get("name") == "cpu"), 0.0)
        out.append((float(case.get("time") or 0), file, f"{file}::{case.get('name')}", cpu))
    return out


def page(
    args: list[str], code: int, wall: float, cpu: float, closing: str, tests: list[tuple[float, str, str, float]]
) -> str:
    files: Counter[str] = Counter()
    cpus: Counter[str] = Counter()
    for seconds, file, _, used in tests:
        files[file] += seconds
        cpus[file] += used
    total = sum(files.values())
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    lines = [
        "# Where the suite's time goes",
        "",
        f"Written by `make test-times` on {when} ({os.cpu_count()} cores, Python {platform.python_version()}):",
        f"`pytest {' '.join(args)}` exited {code}: {closing}.",
        "",
        f"- wall: {wall:.0f} s",
        f"- CPU (user + system, pytest and every process it started): {cpu:.0f} s",
        f"- worker-seconds (the tests' own seconds, summed over workers): {total:.0f} s",
        f"- the tests' own CPU (set-up and call, with the children they waited for): {sum(cpus.values()):.0f} s;",
        "  the rest is the workers' start and collection and the session's services: the warm children",
        "  of tests/warm.py, the embedded model's server, PostgreSQL",
        "",
        "What each test over 20 s is for: docs/guides/testing.md (the suite's own tests).",
        "",
        f"## The {SLOWEST} slowest tests",
        "",
        "| seconds | CPU s | test |",
        "| ---: | ---: | --- |",
    ]
    lines += [f"| {s:.1f} | {c:.1f} | `{name}` |" for s, _, name, c in sorted(tests, reverse=True)[:SLOWEST]]
    lines += ["", "## Worker-seconds per file", "", "| seconds | CPU s | tests | file |"]
    lines += ["| ---: | ---: | ---: | --- |"]
    counts = Counter(file for _, file, _, _ in tests)
    lines += [f"| {s:.1f} | {cpus[f]:.1f} | {counts[f]} | `{f}` |" for f, s in files.most_common()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    with tempfile.TemporaryDirectory() as folder:
        report = Path(folder) / "report.xml"
        code, wall, cpu, closing = run_suite(args, report)
        tests = times(report) if report.exists() else []
    if not tests:
        print("no test ran: nothing written", file=sys.stderr)
        return code or 1
    PAGE.write_text(page(args, code, wall, cpu, closing, tests))
    print(f"wall {wall:.0f} s, CPU {cpu:.0f} s; written {PAGE.relative_to(ROOT)}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
