"""The one adapter every role call goes through: JSON output constrained by the signature's schema."""

from __future__ import annotations

from typing import Any

import dspy
from dspy.adapters.json_adapter import _get_structured_outputs_response_format


def output_schema(signature: type[dspy.Signature]) -> dict[str, Any]:
    """JSON schema of a signature's outputs (Literal fields become ``enum``)."""
    return _get_structured_outputs_response_format(signature).model_json_schema()


class SchemaJSONAdapter(dspy.JSONAdapter):
    """JSONAdapter that sends the output schema in the shape the target server accepts.

    An LM may declare ``schema_style``:
    ``"llamacpp"`` sends ``{"type": "json_object", "schema": ...}`` (llama.cpp's server rejects
    OpenAI's ``json_schema`` with HTTP 500); ``"json_schema"`` sends OpenAI structured outputs
    (used by the fakes, which answer by the schema). Other LMs keep DSPy's own choice.
    """

    def _prepare_response_format(self, lm: Any, lm_kwargs: dict[str, Any], signature: Any) -> None:
        style = getattr(lm, "schema_style", None)
        if style == "llamacpp":
            schema = output_schema(signature)
            limit = getattr(lm, "max_string_chars", None)
            if limit:
                # Bounded strings keep the whole JSON object inside max_tokens, so it always parses.
                for prop in schema.get("properties", {}).values():
                    if prop.get("type") == "string" and "enum" not in prop:
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
