"""Rendering a program's real prompts with no model: a recording engine that answers by schema filling.

Shared by the dry run (:mod:`courtroom.cost._simulate`, :mod:`courtroom.cost.estimate`) and the
layout choice (:mod:`courtroom.cost.layout_choice`); it needs no program module, so the programs can
ask for a choice before a case's first request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from typing import Any

from dspy.lm15 import Message, Response, TextPart, Usage

from courtroom.models import sampling
from courtroom.models._concurrency import depth
from courtroom.models.lms import DEFAULT, LOCAL, RoleLMs, current_role
from courtroom.testing._fakes import FakeLM, answer_for_schema

PATTERNS: tuple[dict[str, Any], ...] = (
    {"enum": 0, "number": 0.5, "boolean": True},
    {"enum": -1, "number": 1.0, "boolean": False},
    {"enum": 1, "number": 0.0, "boolean": False},
)
"""Answer patterns a dry run tries: which enum option, number and boolean every role answers."""

FILLER = "fake server reply"
"""Placeholder for free-text answers (what :class:`courtroom.testing.FakeServer` answers too)."""


def _values(schema: Mapping[str, Any], pattern: Mapping[str, Any], filler: str = FILLER) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "enum" in prop:
            options = prop["enum"]
            out[name] = options[pattern["enum"] % len(options)] if pattern["enum"] >= 0 else options[-1]
        elif prop.get("type") in ("number", "integer"):
            out[name] = pattern["number"]
        elif prop.get("type") == "boolean":
            out[name] = pattern["boolean"]
    return answer_for_schema(schema, out, filler)


class _RecordingEngine:
    """DSPy engine that keeps every rendered request's messages and answers by schema filling."""

    def __init__(self, filler: str = FILLER) -> None:
        self.filler = filler
        """Each free-text answer (a later prompt quotes it)."""
        self.requests: list[tuple[str, list[dict[str, str]], int | None]] = []
        """(role, messages, which sample of one prompt it is: None or 0 the first) per rendered request."""
        self.waves: list[int | None] = []
        """Per request, the wave it went out in (its depth on the case's critical path), where counted."""
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _RecordingEngine:
        return self

    def complete(self, request: Any) -> Response:
        messages = [{"role": str(m.role), "content": m.text or ""} for m in request.messages]
        system = request.system
        if system:
            text = system if isinstance(system, str) else "".join(getattr(p, "text", "") or "" for p in system)
            messages.insert(0, {"role": "system", "content": text})
        rounds = depth.get()  # set by whoever counts waves (courtroom.cost.layout_choice)
        if rounds is not None:
            rounds[0] += 1
        with self._lock:
            self.requests.append((current_role() or DEFAULT, messages, sampling.sample_index()))
            self.waves.append(rounds[0] if rounds is not None else None)
        fmt = request.config.response_format or {}
        schema = dict(fmt.get("schema") or fmt.get("json_schema", {}).get("schema") or {})
        text = json.dumps(_values(schema, PATTERNS[0], self.filler))
        return Response(
            id=None,
            model="dry-run",
            message=Message.assistant([TextPart(text)]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


def recording_lms(
    models: Mapping[str, str], layout: str | None = None, filler: str = FILLER
) -> tuple[RoleLMs, _RecordingEngine]:
    engine = _RecordingEngine(filler)
    built: dict[str, Any] = {}
    for model in set(models.values()):
        lm = FakeLM(model if model != LOCAL else "openai/local", engine=engine, cache=False)
        lm.prompt_layout = layout  # rendered as the run lays them out (--prompt-layout)
        lm.rehearsal = True  # nothing is sent: no meter, budget or request count sees its calls
        built[model] = lm
    lms = RoleLMs({DEFAULT: next(iter(built.values()))})
    lms.update({role: built[m] for role, m in models.items()})
    return lms, engine
