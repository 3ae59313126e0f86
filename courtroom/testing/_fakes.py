"""What the fake models and the fake server share: the fake ``dspy.LM`` class and schema filling."""

from __future__ import annotations

import contextvars
from collections.abc import Mapping
from typing import Any

import dspy

_rollout: contextvars.ContextVar[int | None] = contextvars.ContextVar("courtroom_fake_rollout", default=None)


class FakeLM(dspy.LM):
    """A ``dspy.LM`` answered by a local engine; the schema is sent OpenAI-style.

    Each call makes its ``rollout_id`` (0 when none; salted repeats' included) known to the engine,
    which DSPy does not pass on: the oracle draws a sample's answer by it (:func:`current_rollout`).
    """

    schema_style = "json_schema"

    def __call__(self, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:  # noqa: D102
        token = _rollout.set(int(kwargs.get("rollout_id") or 0))
        try:
            return super().__call__(prompt, messages=messages, **kwargs)
        finally:
            _rollout.reset(token)


def current_rollout() -> int | None:
    """The ``rollout_id`` of the :class:`FakeLM` call running in this context; None outside one (a server's)."""
    return _rollout.get()


def answer_for_schema(schema: Mapping[str, Any], values: Mapping[str, Any], filler: str) -> dict[str, Any]:
    """Fill every property of ``schema``: given values first, then type-based defaults."""
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if name in values:
            out[name] = values[name]
        elif "enum" in prop:
            out[name] = prop["enum"][0]
        elif prop.get("type") in ("number", "integer"):
            out[name] = 0.5
        elif prop.get("type") == "boolean":
            out[name] = True
        elif prop.get("type") == "array":
            out[name] = []
        elif prop.get("type") == "object":
            out[name] = {}
        else:
            out[name] = filler
    return out
