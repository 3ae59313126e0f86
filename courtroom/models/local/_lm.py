"""The embedded model's ``dspy.LM``: llama.cpp's server takes the schema as ``json_object``."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator
from typing import Any

import dspy

from courtroom._env import max_chars
from courtroom.models.local._server import DEFAULT_MAX_TOKENS, MAX_STRING_CHARS, shared_server

LOCAL_TIMEOUT = 300.0
"""Seconds per request to the embedded model at least: 135M parameters on 2 shared cores are slow under load."""
PROMPT_TOKENS = 1024
"""A courtroom prompt's tokens, at most about (300-800 measured): with ``max_tokens``, a request's budget."""
MARGIN = 3.0
"""How many times the measured time a request may take before it is retried."""
MOST = 4 * 3600.0
"""No request waits longer than this, whatever the speed."""


def timeout_for(seconds_per_token: float | None, max_tokens: int, in_flight: int) -> float:
    """Seconds a request to the embedded model may take, from the server's measured speed.

    The server answers one request at a time, so a request waits for those ahead of it: ``in_flight``
    (itself included) requests of ``PROMPT_TOKENS + max_tokens`` tokens at ``seconds_per_token``,
    :data:`MARGIN` times over, never less than :data:`LOCAL_TIMEOUT` (nor more than :data:`MOST`).
    On a machine at a load of 20 the server measured 0.117 s per token: 300 s was too short.
    """
    if not seconds_per_token or seconds_per_token <= 0:
        return LOCAL_TIMEOUT
    need = MARGIN * max(1, in_flight) * (PROMPT_TOKENS + max_tokens) * seconds_per_token
    return min(MOST, max(LOCAL_TIMEOUT, need))


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
    """An LM served by llama.cpp's OpenAI-compatible server (schema sent as ``json_object``).

    Unless ``--timeout`` fixed it, each request's timeout follows the server's measured speed and the
    requests ahead of it (:func:`timeout_for`), set as it is sent (:meth:`sending`).
    """

    schema_style = "llamacpp"
    max_string_chars: int | None = None
    saved_name = "local"
    """What a saved program records for this model: ``local`` (the port changes every start)."""
    speed: Any = None
    """The server's ``seconds_per_token`` (None: a fixed timeout)."""
    _in_flight = 0
    _lock = threading.Lock()

    @contextlib.contextmanager
    def sending(self, call: Any) -> Iterator[None]:
        """Around one request: counted in flight, its timeout set from the measured speed (not in the cache key)."""
        cls = type(self)
        with cls._lock:
            cls._in_flight += 1
            waiting = cls._in_flight
        try:
            if self.speed is not None and isinstance(getattr(call, "legacy", None), dict):
                max_tokens = int(call.legacy.get("max_tokens") or DEFAULT_MAX_TOKENS)
                call.legacy["timeout"] = timeout_for(self.speed(), max_tokens, waiting)
            yield
        finally:
            with cls._lock:
                cls._in_flight -= 1


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
    if timeout is None:  # --timeout fixes it; else it follows the server's measured speed
        lm.speed = getattr(server, "seconds_per_token", None)  # (a test's stand-in may not measure)
    return lm
