"""Every benchmark runs: each script in bench/ at its smallest size (bench/run_all.py's ``smoke``).

Only that it runs and prints its figures is checked, never a figure against a target: the figures
are timings on a shared machine. ``make bench`` prints them at a small size.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"
_spec = importlib.util.spec_from_file_location("bench_run_all", BENCH / "run_all.py")
assert _spec and _spec.loader
bench_all = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_all)  # the size table of bench/run_all.py


def test_every_script_has_a_size() -> None:
    scripts = {p.stem for p in BENCH.glob("*.py") if not p.stem.startswith("_")} - {"run_all"}
    assert scripts == set(bench_all.SIZES)


PRINTS = {
    "settle": (
        "full trial: jot (jot-paper)",
        "settle vs full trial",
        "matched majority vote",
        "curve",
        "seeds 0..1",
        "chosen on 20 dev cases",
        "SE of the paired difference",
        "targets met: within one paired SE",
        "the most any design can reach under this model",
        "if a stated confidence were informative",
    ),
}
"""What a benchmark must print at its smoke size, beyond running."""


@pytest.mark.parametrize("name", sorted(bench_all.SIZES))
def test_benchmark_runs_at_its_smallest_size(name: str, tmp_path: Path) -> None:
    env = {**os.environ, "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    done = subprocess.run(
        bench_all.command(name, "smoke"), capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env
    )
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    assert len(done.stdout.strip().splitlines()) >= 3, done.stdout
    for needle in PRINTS.get(name, ()):
        assert needle in done.stdout, needle


def test_best_schedule_of_critical_path_is_exact() -> None:
    spec = importlib.util.spec_from_file_location("bench_critical_path", BENCH / "critical_path.py")
    assert spec and spec.loader
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    # One Courtroom-LLM decision at 4 in flight: hearing, advocates, 4 judges, the fifth judge. Both
    # old bounds say 3 latencies (the path; 8 calls over 4 slots is 2): no schedule does it in 3.
    assert bench.best_steps([1, 2, 5], 1, 4) == (4, 4)
    # The bench's shapes at its default size pack every step: the best is the work bound.
    assert bench.best_steps([2, 1] * 3, 8, 4, open_cap=4) == (18, 18)
    assert bench.best_steps([1] + [2, 2, 1, 1] * 2, 8, 4, open_cap=4) == (26, 26)
    # Two decisions of two calls then one, one slot per decision but only one open at a time.
    assert bench.best_steps([2, 1], 2, 2, open_cap=1) == (4, 4)
    assert bench.best_steps([2, 1], 2, 2) == (3, 3)
