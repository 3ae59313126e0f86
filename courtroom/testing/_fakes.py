"""What the fake models and the fake server share: the fake ``dspy.LM`` class and schema filling."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import dspy


class FakeLM(dspy.LM):
    """A ``dspy.LM`` answered by a local engine; the schema is sent OpenAI-style."""

    schema_style = "json_schema"


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
