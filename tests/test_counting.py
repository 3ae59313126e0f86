"""Counting: cache hits are counted as they happen; token figures say which calls they count."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import dspy
import pytest

from courtroom.eval.harness import run_example
from courtroom.models.lms import RoleLMs
from courtroom.programs import build_program
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer


def test_a_cached_answer_that_fails_to_parse_is_counted_once_as_cached_and_failed() -> None:
    """Before, cached = calls - sent - failed subtracted such a call twice (it is cached and failed)."""
    example = dspy.Example(case="True and False is", label="False", id="0").with_inputs("case")
    with FakeServer(faults={"garbage": 1.0}) as server:
        lm = server.lm(f"openai/count-{time.time_ns()}", cache=True)
        program = build_program("zero-shot", ["True", "False"], lms=RoleLMs({"default": lm}))
        first = run_example(program, example)
        again = run_example(program, example)
    assert first.usage["sent"] == first.usage["failed"] == first.usage["calls"] == 2  # the call and its retry
    assert first.usage["cached"] == 0
    assert again.usage == {**again.usage, "calls": 2, "sent": 0, "failed": 2, "cached": 2}


def test_a_resumed_summary_says_its_tokens_are_those_of_sent_calls(tmp_path: Path) -> None:
    def config(out: Path) -> RunConfig:
        return RunConfig("jot", "web_of_lies", limit=12, seed=3, knobs={"n_loops": 1}, concurrency=3, out=str(out))

    with FakeServer(latency=0.01) as server:
        ref = run(config(tmp_path / "ref"), lms=RoleLMs({"default": server.lm("openai/tok-ref", cache=False)}))
        lms = RoleLMs({"default": server.lm(f"openai/tok-{time.time_ns()}")})
        seen: list[str] = []

        def stop_after_three(res: Any) -> None:
            seen.append(res.id)
            if len(seen) == 3:
                raise KeyboardInterrupt

        with pytest.raises(KeyboardInterrupt):
            run(config(tmp_path / "new"), lms=lms, progress=stop_after_three)
        (run_dir,) = (tmp_path / "new").iterdir()
        outcome = resume(run_dir, lms=lms)
    s, r = outcome.summary, ref.summary
    assert s["calls"] == r["calls"] and s["cached"] >= 1  # examples in flight at the interrupt: from the cache
    assert s["tokens_counted"] == r["tokens_counted"] == "sent"
    _, rows, _ = load_run(run_dir)
    in_rows = sum(x["usage"]["prompt_tokens"] + x["usage"]["completion_tokens"] for x in rows)
    # Cache hits add no tokens; the figure is the folder's spend over both sessions, so the calls of
    # examples cut off by the interrupt (answered, but in no result line) count too: it equals the
    # uninterrupted run's, as nothing was sent twice. This session's own share is told apart.
    assert in_rows < s["tokens"] == r["tokens"]
    assert s["session"]["tokens"] < r["tokens"]
    assert "tokens (sent calls)" in (run_dir / "summary.md").read_text()
