"""Cut-off and malformed answers fail the call: retried once under a new rollout, never used.

A response with ``finish_reason == "length"``, or one whose JSON does not parse as sent (DSPy's
JSONAdapter would repair ``{"argument": "A s`` into ``"A s"``), must never become argument
text or a decision, for any role.
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from typing import Any

import dspy
import pytest
from dspy.lm15 import Response

from courtroom.eval.harness import run_example
from courtroom.models.lms import RoleLMs
from courtroom.programs import build_program
from courtroom.testing import FakeServer, ScriptedEngine
from courtroom.testing._fakes import FakeLM, answer_for_schema

LABELS = ["True", "False"]
FULL = "COMPLETE-ANSWER-" + "y" * 60 + "-END"
"""Every free-text field's full answer: any cut of it leaves a prefix of ``COMP...`` without it."""
CASE = dspy.Example(case="not ( True ) and ( True ) is", label="False", id="0").with_inputs("case")


def _kind(schema: dict[str, Any]) -> str:
    """``decision`` for roles that pick a label (an enum in the schema), else ``advocate``."""
    props = (schema.get("properties") or {}).values()
    return "decision" if any("enum" in p for p in props) else "advocate"


class _Plan:
    """Faults the first ``times`` requests of one kind of role; records every prompt."""

    def __init__(self, fault: str, kind: str, times: int = 1) -> None:
        self.fault, self.kind, self.times = fault, kind, times
        self.prompts: list[str] = []
        self.faulted = Counter[str]()
        self._lock = threading.Lock()
        self._broken: set[int] = set()
        self.first: str | None = None

    def fault_for(self, prompt: str, schema: dict[str, Any]) -> str | None:
        with self._lock:
            self.prompts.append(prompt)
            if _kind(schema) != self.kind or self.faulted[self.kind] >= self.times:
                return None
            if self.first is None:
                self.first = prompt
            elif prompt != self.first:  # only that call and its retries (the same request)
                return None
            self.faulted[self.kind] += 1
            if self.fault == "broken-json":
                self._broken.add(threading.get_ident())  # the responder breaks this one (finish_reason stop)
                return None
            return self.fault

    def respond(self, prompt: str, schema: dict[str, Any]) -> Any:
        text = json.dumps(answer_for_schema(schema, {}, FULL))
        with self._lock:
            if threading.get_ident() in self._broken:
                self._broken.discard(threading.get_ident())
                return text[: len(text) // 2]  # valid JSON only after repair
        return text


def _no_cut_text(text: str) -> bool:
    return "COMP" not in text.replace(FULL, "")


def _run(server: FakeServer, *, cache: bool = False) -> Any:
    lm = server.lm(f"openai/answers-{time.time_ns()}", cache=cache, timeout=5)
    program = build_program("jot", LABELS, lms=RoleLMs({"default": lm}))
    return program, run_example(program, CASE)


@pytest.mark.parametrize("kind", ["advocate", "decision"])
@pytest.mark.parametrize("fault", ["truncated", "garbage", "broken-json"])
def test_a_bad_answer_is_retried_once_and_never_reaches_transcript_or_next_prompt(fault: str, kind: str) -> None:
    plan = _Plan(fault, kind)
    with FakeServer(plan.respond, fault_for=plan.fault_for) as server:
        _, result = _run(server)
    assert plan.faulted[kind] == 1
    assert result.error is None and result.prediction in LABELS, result.error
    transcript = json.dumps(result.transcript)
    assert FULL in transcript and _no_cut_text(transcript), "a cut answer reached the transcript"
    assert all(_no_cut_text(p) for p in plan.prompts), "a cut answer reached a later role's prompt"
    # The bad answer is one failed call; its retry is one more call, sent afresh.
    usage = result.usage
    assert usage["failed"] == 1
    assert usage["sent"] == server.counts["requests"] == usage["calls"]


@pytest.mark.parametrize("kind", ["advocate", "decision"])
@pytest.mark.parametrize("fault", ["truncated", "broken-json"])
def test_a_bad_answer_twice_fails_the_example_with_a_named_error(fault: str, kind: str) -> None:
    plan = _Plan(fault, kind, times=2)
    with FakeServer(plan.respond, fault_for=plan.fault_for) as server:
        _, result = _run(server)
    assert plan.faulted[kind] == 2  # the call and its one retry, no more
    assert result.prediction is None and result.transcript == []
    assert ("cut off" if fault == "truncated" else "not valid JSON") in result.error
    assert "COMP" not in result.error
    assert all(_no_cut_text(p) for p in plan.prompts)
    assert result.usage["failed"] == 2


def test_the_cached_cut_answer_is_not_served_to_the_retry() -> None:
    """With the cache on, the cut answer is cached under the first rollout; the retry asks afresh."""
    plan = _Plan("truncated", "advocate")
    with FakeServer(plan.respond, fault_for=plan.fault_for) as server:
        program, first = _run(server, cache=True)
        sent = server.counts["requests"]
        assert first.error is None and server.counts["truncated"] == 1
        again = run_example(program, CASE)
        assert server.counts["requests"] == sent  # all from the cache, the retry's answer included
    assert again.error is None and again.transcript == first.transcript
    # Every call was answered from the cache, the one whose (cut) answer failed included.
    u = again.usage
    assert u["sent"] == 0 and u["failed"] == 1
    assert u["cached"] == u["calls"] == first.usage["calls"]


class _CutOnce(ScriptedEngine):
    """Native-engine path: the first decision call ends with ``finish_reason="length"``, valid JSON or not."""

    def __init__(self) -> None:
        super().__init__({})
        self.cut = 0

    def complete(self, request: Any) -> Response:
        response = super().complete(request)
        schema = dict((request.config.response_format or {}).get("schema") or {})
        if _kind(schema) == "decision" and not self.cut:
            self.cut += 1
            return Response(
                id=None, model="fake", message=response.message, finish_reason="length", usage=response.usage
            )
        return response


def test_finish_reason_length_fails_the_call_even_when_the_json_is_whole() -> None:
    engine = _CutOnce()
    lm = FakeLM(f"fake/cut-{time.time_ns()}", engine=engine, cache=False)
    program = build_program("jot", LABELS, lms=RoleLMs({"default": lm}))
    with dspy.context(disable_history=True):  # detection does not depend on the user's history setting
        result = run_example(program, CASE)
    assert engine.cut == 1 and result.error is None, result.error
    assert result.usage["failed"] == 1
    judge_turns = sum(1 for t in result.transcript if t["role"] == "judge")
    assert engine.counts["judge"] == judge_turns + 1  # one retry for the cut decision
