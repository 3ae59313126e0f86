"""The one adapter every role call goes through: JSON output constrained by the signature's schema."""

from __future__ import annotations

import functools
import json
from typing import Any

import dspy
from dspy.adapters.json_adapter import _get_structured_outputs_response_format


@functools.lru_cache(maxsize=512)
def _schema_json(signature: type[dspy.Signature]) -> str:
    return json.dumps(_get_structured_outputs_response_format(signature).model_json_schema())


# Signature classes hash by identity at run time; mypy sees the metaclass's __eq__ and doubts it.


def output_schema(signature: type[dspy.Signature]) -> dict[str, Any]:
    """JSON schema of a signature's outputs (Literal fields become ``enum``); a fresh copy each call.

    Signatures are immutable classes (DSPy's ``with_*`` make new ones), so the schema is built
    once per class: building it creates a pydantic model, a third of a call's CPU time.
    """
    return json.loads(_schema_json(signature))  # type: ignore[arg-type]


def string_budget(lm: Any, n_fields: int, n_free: int) -> int | None:
    """Characters allowed per free-text field so that the JSON answer fits in ``max_tokens``.

    About 2.5 characters per token is a safe floor for English and JSON escapes; 12 tokens per
    field pay for keys, quotes and enum values. The LM's ``max_string_chars``, if set, caps it.
    """
    cap = getattr(lm, "max_string_chars", None)
    max_tokens = (getattr(lm, "kwargs", None) or {}).get("max_tokens")
    if not max_tokens or not n_free:
        return cap
    budget = max(8, int((max_tokens - 12 * n_fields) * 2.5 / n_free))
    return min(cap, budget) if cap else budget


@functools.lru_cache(maxsize=512)
def _system_message(adapter_type: type, signature: type[dspy.Signature]) -> str:
    return dspy.JSONAdapter.format_system_message(adapter_type(), signature)


class SchemaJSONAdapter(dspy.JSONAdapter):
    """JSONAdapter that sends the output schema in the shape the target server accepts.

    An LM may declare ``schema_style``:
    ``"llamacpp"`` sends ``{"type": "json_object", "schema": ...}`` (llama.cpp's server rejects
    OpenAI's ``json_schema`` with HTTP 500); ``"json_schema"`` sends OpenAI structured outputs
    (used by the fakes, which answer by the schema). Other LMs keep DSPy's own choice.
    """

    def format_system_message(self, signature: type[dspy.Signature]) -> str:
        """DSPy's system message, built once per signature class."""
        return _system_message(type(self), signature)  # type: ignore[arg-type]

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
        style = getattr(lm, "schema_style", None)
        if style == "llamacpp":
            schema = output_schema(signature)
            free = [p for p in schema.get("properties", {}).values() if p.get("type") == "string" and "enum" not in p]
            limit = string_budget(lm, len(schema.get("properties", {})), len(free))
            if limit:
                # Bounded strings keep the whole JSON object inside max_tokens, so it always parses.
                for prop in free:
                    prop["maxLength"] = limit
            lm_kwargs["response_format"] = {"type": "json_object", "schema": schema}
        elif style == "json_schema":
            lm_kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": "outputs", "schema": output_schema(signature), "strict": True},
            }
        else:
            super()._prepare_response_format(lm, lm_kwargs, signature)


ADAPTER = SchemaJSONAdapter()
