"""The embedded model's ``dspy.LM``: llama.cpp's server takes the schema as ``json_object``."""

from __future__ import annotations

from typing import Any

import dspy

from courtroom.local._server import DEFAULT_MAX_TOKENS, MAX_STRING_CHARS, shared_server


class LlamaCppLM(dspy.LM):
    """An LM served by llama.cpp's OpenAI-compatible server (schema sent as ``json_object``)."""

    schema_style = "llamacpp"
    max_string_chars: int | None = None
    saved_name = "local"
    """What a saved program records for this model: ``local`` (the port changes every start)."""


def local_lm(*, temperature: float | None = None, max_tokens: int | None = None) -> Any:
    """A ``dspy.LM`` on the embedded server (started if needed).

    ``engine="litellm"`` matters: DSPy's native client sends ``max_completion_tokens``, which
    llama.cpp ignores (generation then runs to the context limit).
    """
    server = shared_server()
    lm = LlamaCppLM(
        f"openai/{server.alias}",
        api_base=server.api_base,
        api_key="sk-local-no-key",
        engine="litellm",
        temperature=0.7 if temperature is None else temperature,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        num_retries=2,
    )
    lm.max_string_chars = MAX_STRING_CHARS
    return lm
