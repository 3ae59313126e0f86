"""Progress that shows: LM calls and an ETA on the bar, plain lines when not a terminal, one display in compile."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from courtroom.testing import FakeServer


def test_tracker_counts_every_lm_call_of_a_run() -> None:
    from courtroom.reporting.progress import ProgressDisplay
    from courtroom.runner.runs import RunConfig, run

    with FakeServer() as server, ProgressDisplay(console=Console(file=io.StringIO()), interactive=False) as display:
        bar = display.track("jot")
        config = RunConfig(
            "jot", "boolean_expressions", limit=3, knobs={"n_loops": 3}, lm="openai/m", api_base=server.url
        )
        outcome = run(config, progress=bar.result, on_start=bar.start)
    # A JoT example is 9 calls: the display moves with each of them, not only per example.
    assert bar.calls == outcome.summary["calls"] == 27
    line = bar.line()
    assert "3/3 examples" in line and "27 LM calls" in line and "ETA" in line


def test_lines_show_tokens_and_dollars_spent_so_far() -> None:
    # Cost while spending: the line adds the tokens and, where priced, the dollars of the finished examples.
    from courtroom.reporting.progress import ProgressDisplay
    from courtroom.runner.runs import RunConfig, run

    prices = {"openai/priced": [1000.0, 2000.0]}
    with FakeServer() as server, ProgressDisplay(prices=prices, console=Console(file=io.StringIO())) as display:
        bar = display.track("zero-shot")
        config = RunConfig(
            "zero-shot", "boolean_expressions", limit=3, lm="openai/priced", api_base=server.url, prices=prices
        )
        outcome = run(config, progress=bar.result, on_start=bar.start)
    summary = outcome.summary
    assert bar.tokens == summary["tokens"] > 0 and bar.cost == pytest.approx(summary["cost"])
    assert f"{summary['tokens']:,} tokens, ${summary['cost']:.4f}" in bar.line()


def test_bar_shows_calls_while_an_example_is_still_running() -> None:
    from courtroom.models.lms import resolve_roles
    from courtroom.programs import build_program
    from courtroom.reporting.progress import ProgressDisplay

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120)
    with FakeServer(latency=0.15) as server, ProgressDisplay(console=console) as display:
        bar = display.track("jot", total=1)
        program = build_program(
            "jot", ["True", "False"], None, knobs={"n_loops": 3}, lms=resolve_roles("openai/m", api_base=server.url)
        )
        program(case="True and False is")
        calls_before_result = bar.calls
        import time

        time.sleep(0.7)  # the bar refreshes its call count between results
    assert calls_before_result == 9 and bar.done == 0
    assert "calls 9" in out.getvalue() and "ETA" in out.getvalue()


def test_compare_prints_plain_progress_lines_when_not_a_terminal(tmp_path: Path, courtroom_cli: Any) -> None:
    env = {"COURTROOM_PROGRESS_EVERY": "0.5"}
    with FakeServer(latency=0.1) as server:
        done = courtroom_cli(
            *[
                "compare",
                "--frameworks",
                "zero-shot,cot",
                "--fail-on-error",
                "1",
                "--limit",
                "6",
                "--concurrency",
                "1",
                "--lm",
                "openai/m",
                "--api-base",
                server.url,
                "--out",
                str(tmp_path),
            ],
            env=env,
        )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if re.match(r"\[\s*\d+s\] (zero-shot|cot): ", line)]
    assert len(lines) >= 3, done.stderr
    assert any("LM calls" in line for line in lines) and any("6/6 examples" in line for line in lines)
    assert not any("/?" in line for line in lines[-2:])  # the totals are known once a run starts
    # Each row counts its own calls: zero-shot makes one per example, though cot and the matched
    # votes run after it (once, every row's line counted every later row's calls too).
    last = [line for line in lines if "zero-shot: " in line][-1]
    assert "6/6 examples, 6 LM calls" in last, last


def test_run_counts_the_calls_preparing_on_train_apart_from_the_examples(tmp_path: Path, courtroom_cli: Any) -> None:
    # Chain-of-thought writes its demos' reasoning on train first: once, the progress line added
    # those calls to the examples' ("6 LM calls") while the summary said 3 calls.
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = ["run", "cot", "--limit", "3", "--lm", "openai/m", "--api-base", server.url, "--out", str(tmp_path)]
        done = courtroom_cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    summary = json.loads(next(tmp_path.glob("*_cot_*/summary.json")).read_text())
    prepared = summary["training_sent"]
    assert summary["calls"] == 3 and prepared > 0
    last = [line for line in done.stderr.splitlines() if re.match(r"\[\s*\d+s\] cot: ", line)][-1]
    assert f"3/3 examples, 3 LM calls, {prepared} preparing on train," in last, last


def test_compile_shows_one_display_and_writes_dev_runs(tmp_path: Path, courtroom_cli: Any) -> None:
    env = {"COURTROOM_PROGRESS_EVERY": "0.5"}
    with FakeServer(latency=0.02, faults={"garbage": 0.3}) as server:
        done = courtroom_cli(
            *[
                "compile",
                "zero-shot",
                "--optimizer",
                "bootstrap",
                "--fail-on-error",
                "1",
                "--train-limit",
                "4",
                "--dev-limit",
                "6",
                "--test-limit",
                "4",
                "--lm",
                "openai/m",
                "--api-base",
                server.url,
                "-o",
                str(tmp_path / "program.json"),
            ],
            env=env,
        )
    assert done.returncode == 0, done.stderr
    assert "it/s" not in done.stderr and "%|" not in done.stderr  # no DSPy tqdm bar
    assert "dev before:" in done.stderr and "dev after:" in done.stderr and "test after:" in done.stderr
    for split, when in [(s, w) for s in ("dev", "test") for w in ("before", "after")]:
        folder = tmp_path / f"program-{split}-{when}"
        summary = json.loads((folder / "summary.json").read_text())
        rows = [json.loads(line) for line in (folder / "results.jsonl").read_text().splitlines()]
        assert summary["n"] == len(rows) == {"dev": 6, "test": 4}[split]
        # A failure counted in the scores table has its reason on disk.
        assert all(r["error"] for r in rows if r["prediction"] is None)
        assert sum(r["prediction"] is None for r in rows) == summary["failures"]
        assert f"{split} {when}: {folder}" in done.stdout
        assert json.loads((folder / "meta.json").read_text())["compile_proof"]["split"] == split


def test_compile_phases_count_their_own_calls(tmp_path: Path, courtroom_cli: Any) -> None:
    # Once, "dev before" counted every call made after it began (the optimizer's and dev after's too).
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = ["compile", "zero-shot", "--optimizer", "bootstrap", "--train-limit", "4", "--dev-limit", "5"]
        out = ["--test-limit", "0", "-o", str(tmp_path / "program.json")]
        done = courtroom_cli(*args, "--lm", "openai/m", "--api-base", server.url, *out, env=env)
        sent = server.counts["requests"]
    assert done.returncode == 0, done.stderr
    last = {m[1]: m[2] for m in re.finditer(r"\] (dev before|dev after|optimizing \(bootstrap\)): (.*)", done.stderr)}
    assert "5/5 examples, 5 LM calls" in last["dev before"], done.stderr
    assert "5/5 examples, 5 LM calls" in last["dev after"], done.stderr
    optimizing = int(re.search(r"(\d+) LM calls", last["optimizing (bootstrap)"])[1])
    assert 0 < optimizing == sent - 10


# --- every long command shows its own progress; the libraries' lines only with --debug ---------------

LIBRARY_LINES = re.compile(r"dspy\.|Average Metric|LiteLLM|Trial \d+ finished|optuna|%\|")
"""DSPy's log lines and tqdm bars, LiteLLM's warnings, Optuna's "Trial N finished" info lines."""


def _design_study(tmp_path: Path, url: str, *extra: str) -> list[str]:
    return ["study", "--frameworks", "zero-shot,cot", "--trials", "2", "--dev-limit", "3", "--train-limit", "6",
            "--compile", "bootstrap-rs", "--opt", "num_candidate_programs=2", "--lm", "openai/m", "--api-base", url,
            "--storage", f"sqlite:///{tmp_path}/s.db", "--out", str(tmp_path / "report"), *extra]  # fmt: skip


def test_design_study_prints_a_line_per_stage_and_no_library_lines(tmp_path: Path, courtroom_process: Any) -> None:
    # A real process: DSPy is imported after the command line chose to be quiet (it resets its logger then).
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        done = courtroom_process(*_design_study(tmp_path, server.url), env=env)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert not [line for line in lines if LIBRARY_LINES.search(line)], done.stderr
    assert "\r" not in done.stderr and "\x1b[" not in done.stderr  # a pipe gets lines, not a redrawn bar
    study = [line for line in lines if re.match(r"\[\s*\d+s\] study designs-boolean_expressions: ", line)]
    # Each stage once: the optimizer's phase inside a trial, then the trial's end.
    assert any(re.search(r"(zero-shot|cot) \+ bootstrap-rs: bootstrap \d+ candidate sets", line) for line in study)
    assert any("trial 0 complete" in line for line in study) and any("trial 1 " in line for line in study)
    assert len(study) == len(set(study)), study
    assert any("LM calls" in line for line in study)
    # DSPy's prints ("Bootstrapped 2 full traces", "Scores so far") never reach stdout.
    assert "Bootstrapped" not in done.stdout and "Scores so far" not in done.stdout, done.stdout


def test_debug_brings_the_library_lines_back(tmp_path: Path, courtroom_process: Any) -> None:
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        done = courtroom_process("--debug", *_design_study(tmp_path, server.url), env=env)
    assert done.returncode == 0, done.stderr
    assert "Trial 0 finished" in done.stderr  # Optuna's info line
    assert re.search(r"dspy\.|Bootstrapped \d+ full traces", done.stderr)  # DSPy's lines and prints, on stderr
    assert "Bootstrapped" not in done.stdout


def test_compile_prints_each_optimizer_phase_once(tmp_path: Path, courtroom_cli: Any) -> None:
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = ["compile", "zero-shot", "--optimizer", "mipro", "--opt", "num_candidates=2", "--opt", "num_trials=2",
                "--opt", "minibatch=false", "--train-limit", "6", "--dev-limit", "3", "--test-limit", "0",
                "--lm", "openai/m", "--api-base", server.url, "-o", str(tmp_path / "program.json")]  # fmt: skip
        done = courtroom_cli(*args, env=env)
        debug = courtroom_cli("--debug", *args, env=env)
    assert done.returncode == 0, done.stderr
    phases = [m[1] for m in re.finditer(r"\] optimizing \(mipro\): ([a-z ]+?)(?: \d+/\d+)?, ", done.stderr)]
    assert phases[:3] == ["bootstrap demos", "propose instructions", "evaluate candidates"], done.stderr
    assert "evaluate trial" in phases and "done" in phases
    # The optimizer's own calls are spent too: their tokens read from the wire (no example results here).
    done_line = re.search(r"\] optimizing \(mipro\): done, (.*)", done.stderr)[1]
    assert re.search(r"\d+ LM calls.*[\d,]+ tokens", done_line), done_line
    assert "dev before: 3/3 examples" in done.stderr and "dev after: 3/3 examples" in done.stderr
    assert not LIBRARY_LINES.search(done.stderr), done.stderr
    assert "STEP" not in done.stdout + done.stderr  # MIPROv2's own step banners stay in DSPy's log
    assert debug.returncode == 0 and "STEP 1: BOOTSTRAP" in debug.stderr and "dspy.teleprompt" in debug.stderr


@pytest.mark.parametrize(
    ("minibatch", "evaluations"),
    [
        # Without minibatches MIPROv2 says "Trial 3 / 2": the default program is its trial 1.
        ("false", ["evaluate default program", "evaluate trial 2/3", "evaluate trial 3/3"]),
        # With them its total counts the default program and the full evaluation at the end.
        ("true", ["evaluate default program", "evaluate trial 2/4", "evaluate trial 3/4", "evaluate trial 4/4"]),
    ],
)
def test_mipro_trial_count_never_passes_its_total(
    tmp_path: Path, courtroom_cli: Any, minibatch: str, evaluations: list[str]
) -> None:
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = ["compile", "zero-shot", "--optimizer", "mipro", "--opt", "num_candidates=2", "--opt", "num_trials=2",
                "--opt", f"minibatch={minibatch}", "--opt", "minibatch_size=2", "--train-limit", "6", "--dev-limit",
                "2", "--test-limit", "0", "--lm", "openai/m", "--api-base", server.url,
                "-o", str(tmp_path / "p.json")]  # fmt: skip
        done = courtroom_cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    seen = re.findall(r"\] optimizing \(mipro\): (evaluate (?:default program|trial \d+/\d+)),", done.stderr)
    assert seen == evaluations, done.stderr


def test_plain_lines_keep_coming_while_one_slow_call_holds_the_task() -> None:
    import time

    from courtroom.reporting.progress import ProgressDisplay

    out = io.StringIO()
    with ProgressDisplay(console=Console(file=out, width=200), every=0.1, interactive=False) as display:
        display.heartbeat = 0.3
        display.track("slow", total=1)
        time.sleep(1.2)  # nothing moves: no result, no call
    lines = [line for line in out.getvalue().splitlines() if "slow: 0/1 examples" in line]
    assert 3 <= len(lines) <= 6, out.getvalue()


def test_gepa_into_a_pipe_prints_lines_by_time_not_one_per_iteration(tmp_path: Path, courtroom_cli: Any) -> None:
    # GEPA wrote a line per iteration into a pipe (399 in a user's log; 130 iterations here).
    env = {"COURTROOM_PROGRESS_EVERY": "600", "COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = ["compile", "zero-shot", "--optimizer", "gepa", "--opt", "auto=light", "--train-limit", "6",
                "--dev-limit", "4", "--test-limit", "0", "--lm", "openai/m", "--api-base", server.url,
                "-o", str(tmp_path / "p.json")]  # fmt: skip
        done = courtroom_cli(*args, env=env)
    assert done.returncode == 0, done.stderr
    gepa = [line for line in done.stderr.splitlines() if "optimizing (gepa)" in line]
    assert 1 <= len(gepa) <= 3 and "done" in gepa[-1], done.stderr
    # In order: dev before, the optimizer, dev after.
    order = [done.stderr.index(k) for k in ("dev before: 4/4", "optimizing (gepa): done", "dev after: 4/4")]
    assert order == sorted(order), done.stderr


def test_the_display_counts_lm_calls_without_a_callback_on_every_module_call(monkeypatch) -> None:
    """Issue 44: a counter in ``dspy.settings`` made DSPy read the arguments of every module, adapter,
    format and parse call (``inspect.getcallargs``), about a tenth of a call's CPU."""
    import inspect

    from courtroom.models.lms import RoleLMs
    from courtroom.programs import build_program
    from courtroom.reporting.progress import ProgressDisplay
    from courtroom.testing import oracle_lm

    cases = [f"counted {i}" for i in range(3)]
    lm = oracle_lm(dict.fromkeys(cases, "True"), ["True", "False"], cache=False)
    program = build_program("zero-shot", ["True", "False"], lms=RoleLMs({"default": lm}))
    getcallargs = inspect.getcallargs
    read: list[str] = []

    def counted(func, *args, **kwargs):
        read.append(func.__qualname__)
        return getcallargs(func, *args, **kwargs)

    monkeypatch.setattr(inspect, "getcallargs", counted)
    with ProgressDisplay(enabled=False) as display:
        display.track("run", total=3)
        for case in cases:
            program(case=case)
    assert display.counter.calls == 3
    assert set(read) <= {"BaseLM.__call__", "LM.__call__"} and len(read) == 3, read  # the LM's own callbacks only
