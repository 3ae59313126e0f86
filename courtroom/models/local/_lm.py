"""The embedded model's ``dspy.LM``: llama.cpp's server takes the schema as ``json_object``."""

from __future__ import annotations

import os
from typing import Any

import dspy

from courtroom._env import max_chars
from courtroom.models.local._server import DEFAULT_MAX_TOKENS, MAX_STRING_CHARS, shared_server

LOCAL_TIMEOUT = 300.0
"""Seconds per request to the embedded model: 135M parameters on 2 shared cores are slow under load."""


def string_cap() -> int | None:
    """The per-field character cap on top of the ``max_tokens`` budget (None: the budget alone).

    ``$COURTROOM_LOCAL_MAX_CHARS`` sets it (0: no cap beyond the budget). Otherwise the bundled
    135M model keeps short fields (it rambles past ~240 characters), and a model named by
    ``$COURTROOM_LOCAL_MODEL`` gets whatever ``--max-tokens`` leaves room for.
    """
    chosen = max_chars()
    if chosen is not None:
        return chosen or None
    return None if os.environ.get("COURTROOM_LOCAL_MODEL") else MAX_STRING_CHARS


class LlamaCppLM(dspy.LM):
    """An LM served by llama.cpp's OpenAI-compatible server (schema sent as ``json_object``)."""

    schema_style = "llamacpp"
    max_string_chars: int | None = None
    saved_name = "local"
    """What a saved program records for this model: ``local`` (the port changes every start)."""


def local_lm(*, temperature: float | None = None, max_tokens: int | None = None, timeout: float | None = None) -> Any:
    """A ``dspy.LM`` on the embedded server (started if needed).

    ``engine="litellm"`` matters: DSPy's native client sends ``max_completion_tokens``, which
    llama.cpp ignores (generation then runs to the context limit).
    """
    cap = string_cap()
    server = shared_server()
    lm = LlamaCppLM(
        f"openai/{server.alias}",
        api_base=server.api_base,
        api_key="sk-local-no-key",
        engine="litellm",
        temperature=0.7 if temperature is None else temperature,
        max_tokens=max_tokens or DEFAULT_MAX_TOKENS,
        num_retries=2,
        timeout=timeout or LOCAL_TIMEOUT,
    )
    lm.max_string_chars = cap
    return lm
