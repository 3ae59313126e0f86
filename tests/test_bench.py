"""Every benchmark runs: each script in bench/ at its smallest size (bench/run_all.py's ``smoke``).

Each script's ``main`` runs in this process (an interpreter started per script cost seconds of
imports each); what a script changes in the process is put back after it (:func:`isolated`).

Only that it runs and prints its figures is checked, never a figure against a target: the figures
are timings on a shared machine. ``make bench`` prints them at a small size.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import sys
import tempfile
import types
from collections.abc import Iterator
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
    "price": (
        "## self-consistency",
        "today (bill)",
        "+ layout (auto)",
        "+ stop",
        "layouts in batch: classic",
        "every lever on, against the bill of today's default:",
        "auto against the cheaper of classic and cache (batch):",
        "targets (issue 50, 300 words)",
        "self-consistency k=9 at gpt-4o-mini, 60 words: 1.00 requests per case with n-sampling",
        "auto 1.000x of the cheaper layout: ok",
    ),
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


def load(name: str) -> types.ModuleType:
    """``bench/NAME.py`` as a module, its ``main`` not run."""
    spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # a bench's dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """What a bench changes in its process is put back after it: the environment, the working folder,
    the courtroom cache, DSPy's settings, logging's level and root handlers, ``sys.path``.

    Its temporary folders (its caches, SQLite files) are under ``tmp_path``, in memory where the machine
    has ``/dev/shm`` (tests/conftest.py's basetemp).
    """
    import dspy

    from courtroom.models import cache

    scratch = tmp_path / "scratch"
    scratch.mkdir()
    settings = importlib.import_module("dspy.dsp.utils.settings")  # the module (dspy.settings is its instance)
    env = dict(os.environ)
    dspy_config = dict(settings.main_thread_config)
    saved_cache, configured = dspy.cache, cache._configured
    disabled = logging.root.manager.disable
    root_handlers, root_level = logging.root.handlers[:], logging.root.level
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(BENCH))  # settle.py imports _settle_model, as ``python bench/settle.py`` can
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # the benches' mkdtemp folders
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(scratch / "cache"))
    cache.configure_cache(scratch / "cache")
    try:
        yield tmp_path
    finally:
        os.environ.clear()
        os.environ.update(env)
        settings.main_thread_config.clear()
        settings.main_thread_config.update(dspy_config)
        with dspy._cache_lock:
            dspy.cache = saved_cache
        cache._configured = configured
        logging.disable(disabled)
        logging.root.handlers[:] = root_handlers  # the CLI's basicConfig, when a bench calls it in process
        logging.root.setLevel(root_level)


@pytest.mark.parametrize("name", sorted(bench_all.SIZES))
def test_benchmark_runs_at_its_smallest_size(name: str, isolated: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bench = load(name)
    bench.main(list(bench_all.SIZES[name]["smoke"]))
    out = capsys.readouterr().out
    assert len(out.strip().splitlines()) >= 3, out
    for needle in PRINTS.get(name, ()):
        assert needle in out, needle


def test_best_schedule_of_critical_path_is_exact() -> None:
    bench = load("critical_path")
    # One Courtroom-LLM decision at 4 in flight: hearing, advocates, 4 judges, the fifth judge. Both
    # old bounds say 3 latencies (the path; 8 calls over 4 slots is 2): no schedule does it in 3.
    assert bench.best_steps([1, 2, 5], 1, 4) == (4, 4)
    # The bench's shapes at its default size pack every step: the best is the work bound.
    assert bench.best_steps([2, 1] * 3, 8, 4, open_cap=4) == (18, 18)
    assert bench.best_steps([1] + [2, 2, 1, 1] * 2, 8, 4, open_cap=4) == (26, 26)
    # Two decisions of two calls then one, one slot per decision but only one open at a time.
    assert bench.best_steps([2, 1], 2, 2, open_cap=1) == (4, 4)
    assert bench.best_steps([2, 1], 2, 2) == (3, 3)


def test_the_price_bench_prints_the_cached_shares_beside_caselaws(
    isolated: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--shares`` prints, per case length, the share OpenAI's rule caches beside issue 44's CaseLaw figures."""
    bench = load("price")
    bench.main(["--shares", str(bench.CASELAW_WORDS), "--cases", "1"])
    out = capsys.readouterr().out
    assert "issue 44 on 5 CaseLaw cases, classic layout: jot 0%, courtroom-llm 39%, debate-feedback 16%" in out
    assert "400 words (~41" in out and "jot classic " in out and "debate-feedback cache " in out
