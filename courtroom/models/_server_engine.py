"""DSPy's native engine toward one OpenAI-compatible server (``--api-base``), sending ``max_tokens``.

A model served from a user's ``--api-base`` (vLLM, Ollama, llama.cpp, LM Studio, the fake server)
speaks OpenAI's chat wire. DSPy 3.4 can send it two ways, and neither fits as is:

- LiteLLM (``engine="litellm"``) sends ``max_tokens``, which every such server honours, but
  importing LiteLLM costs about 3 s, more than all the rest of a command's start-up;
- its native client routes ``openai/NAME`` to OpenAI's own preset, which sends
  ``max_completion_tokens``: llama.cpp's server ignores that field and generates to the context
  limit (86 s calls were measured; SPEC section 9).

So this engine declares the server as its own lm15 provider whose compat policy sends
``max_tokens``, and hands every request to DSPy's native ``LM15Engine``
(``dspy.clients.engines.lm15_engine``) under that provider's name. DSPy keeps what an engine
does not own: the cache (the key is still the LM's own model string, so answers cached through
LiteLLM stay hits), retries, history, callbacks and usage. The base URL and the key live here,
not in the LM's ``kwargs``: a custom engine owns its connection.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import threading
from typing import Any
from urllib.parse import urlsplit

PROVIDER = "courtroom-server"
"""The lm15 provider id the requests are routed under (never written anywhere)."""

SERVER = "the --api-base server"
"""What an error names instead of the server's address (no base URL is ever written to disk)."""


def _compat() -> Any:
    from dspy.lm15 import OpenAIChatCompat

    # The plain OpenAI chat wire, as lm15's presets for local servers spell it (ollama, lmstudio,
    # vllm): system role, max_tokens, usage in streams, and no vendor-specific fields but OpenAI's
    # prompt_cache_key, sent only when a request asks for it (courtroom.models._layout.cache_hint:
    # openai/ names, or the cache layout); servers without a prompt cache ignore the field.
    return OpenAIChatCompat(
        instruction_role="system",
        max_tokens_field="max_tokens",
        stream_usage="include",
        thinking_format="none",
        tool_result_name="omit",
        strict_tools="omit",
        cache_control="openai_implicit",
        tool_result_media="reject",
    )


def _wire_model(model: str) -> str:
    """``openai/NAME`` (any provider prefix) as this engine's provider routes it: the server sees ``NAME``."""
    return f"{PROVIDER}/{model.split('/', 1)[-1]}"


class ServerEngine:
    """One OpenAI-compatible server at ``api_base``, reached through DSPy's native engine.

    Args:
        api_base: the server's base URL (ending in ``/v1`` as the OpenAI client expects).
        api_key: sent as a bearer token (local servers accept any).
        timeout: seconds a request may wait for the next byte before it fails (then retried).
        asynchronous: build the async twin (DSPy's ``async_engine``).
    """

    def __init__(self, api_base: str, api_key: str, timeout: float | None, *, asynchronous: bool = False) -> None:
        self.api_base = api_base
        self.timeout = timeout
        self._api_key = api_key
        self._server = urlsplit(api_base).netloc
        self._asynchronous = asynchronous
        self._engine: Any = None
        self._prepared = False
        self._batches: Any = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the base URL: it can hold a user and password
        return f"{type(self).__name__}()"

    def _inner(self) -> Any:
        from courtroom.models import _usage_door

        _usage_door.install()  # a provider's bad usage count never loses its answer
        with self._lock:
            if self._engine is None:
                # Imported by name: mypy following dspy._vendor loses dspy's own star-exports.
                AccessPolicy = importlib.import_module("dspy._vendor.lm15.features").AccessPolicy
                from dspy.clients.engines.lm15_engine import AsyncLM15Engine, LM15Engine, timeouts_for
                from dspy.lm15 import ProviderDefinition, RouterConfig

                definition = ProviderDefinition.chat(
                    AccessPolicy(provider=PROVIDER, base_url=self.api_base), compat=_compat()
                )
                config = RouterConfig(
                    env={},
                    api_keys={PROVIDER: self._api_key},
                    timeouts=timeouts_for(self.timeout),
                    providers=(definition,),
                )
                cls = AsyncLM15Engine if self._asynchronous else LM15Engine
                self._engine = cls(config, model_type="chat")
            return self._engine

    def complete(self, request: Any) -> Any:
        """Send ``request`` (its model renamed to this engine's provider) and return DSPy's response.

        In batch mode (:mod:`courtroom.models.batch`) the same wire body joins the current batch
        instead, and this thread waits for its line's answer.
        """
        from courtroom.models import batch

        try:
            collector = batch.current()
            if collector is not None:
                return self._batched(collector, request)
            return self._inner().complete(dataclasses.replace(request, model=self._route(request.model)))
        except Exception as exc:
            self._scrub(exc)
            raise

    def _route(self, model: str) -> str:
        """The model string the native engine routes (here: this server's provider)."""
        return _wire_model(model)

    def batches(self) -> Any:
        """This server's Files and Batches API (:class:`courtroom.models.batch.OpenAIBatches`), made once."""
        from courtroom.models.batch import OpenAIBatches

        with self._lock:
            if self._batches is None:
                self._batches = OpenAIBatches(self.api_base, self._api_key)
            return self._batches

    def _provider(self, name: str) -> Any:
        """lm15's provider LM for model ``name`` (it builds the wire body and parses the answer)."""
        return self._inner().router.lm(f"{PROVIDER}:{name}")

    def _parse(self, provider: Any, body: dict[str, Any], name: str) -> Any:
        """A batch line's answer body as DSPy's response."""
        # By name, as in _inner(): mypy following dspy._vendor loses dspy's own star-exports.
        chat = importlib.import_module("dspy._vendor.lm15.providers.openai_chat")
        return chat.response_from_openai_chat(body, model=name)

    def _batched(self, collector: Any, request: Any) -> Any:
        name = request.model.split("/", 1)[-1]
        provider = self._provider(name)
        wire = provider.build_request(dataclasses.replace(request, model=name), stream=False)
        answer = collector.ask(self.batches(), self._line_params(json.loads(wire.body)))
        return self._parse(provider, self._line_body(answer, request), name)

    def _line_params(self, body: dict[str, Any]) -> dict[str, Any]:
        """A request body as it goes in a batch line (as sent live, unless a provider's batches differ)."""
        return body

    @staticmethod
    def _line_body(answer: dict[str, Any], request: Any) -> dict[str, Any]:
        """A batch line's answer body, or the error that line's request raises (retried in the next batch)."""
        from dspy.utils.exceptions import LMServerError, LMTransportError, LMUnexpectedError

        response = answer.get("response") or {}
        if int(response.get("status_code") or 0) == 200:
            return dict(response["body"])
        error = answer.get("error") or (response.get("body") or {}).get("error") or {}
        message = f"batch line failed: {error.get('message') or error.get('code') or response.get('status_code')}"
        if answer.get("unsent"):  # the provider did not answer it: not counted as sent (_requests._reached_wire)
            error_cls = LMUnexpectedError if answer.get("final") else LMTransportError
            exc = error_cls(message, model=request.model, retry_after=0)
            exc.unsent = True  # type: ignore[attr-defined]
            raise exc
        status = int(response.get("status_code") or 500)
        raise LMServerError(message, model=request.model, status=status, retry_after=0)

    takes_n = True
    """Whether the server's chat wire takes ``n`` (:mod:`courtroom.models.sampling`)."""

    def complete_n(self, request: Any, n: int) -> list[Any]:
        """``n`` samples of ``request`` in one request (``"n": n``; one batch line in batch mode).

        One response per choice the server returned (a server that ignores ``n`` returns one);
        the usage is split as :func:`courtroom.models.sampling.choice_bodies` says.
        """
        from courtroom.models import batch, sampling

        name = request.model.split("/", 1)[-1]
        provider = self._provider(name)
        routed = dataclasses.replace(request, model=name)
        try:
            collector = batch.current()
            if collector is not None:
                wire = provider.build_request(routed, stream=False)
                body = self._line_body(collector.ask(self.batches(), sampling.with_n(wire.body, n)), request)
                return [self._parse(provider, one, name) for one in sampling.choice_bodies(body)]
            return sampling.openai_n(provider, routed, n)
        except Exception as exc:
            self._scrub(exc)
            raise

    def _scrub(self, exc: Exception) -> None:
        """Take the server's address out of ``exc``: its text becomes an example's recorded error."""
        if self._server:
            exc.args = tuple(a.replace(self._server, SERVER) if isinstance(a, str) else a for a in exc.args)
            message = getattr(exc, "message", None)
            if isinstance(message, str):
                exc.message = message.replace(self._server, SERVER)  # type: ignore[attr-defined]

    def stream(self, request: Any) -> Any:
        """Stream ``request`` (not used by courtroom; part of DSPy's engine contract)."""
        return self._inner().stream(dataclasses.replace(request, model=self._route(request.model)))

    def close(self) -> None:
        """Close the connection pool, if one was opened."""
        if self._engine is not None:
            self._engine.close()

    def prepare(self) -> None:
        """Build the route (provider, adapter, HTTP client) now, in this thread; nothing is sent."""
        if self._asynchronous or self._prepared:
            return
        self._inner()
        with self._lock:
            if self._prepared:
                return
            self._prepared = True
        # lm15's router builds (and keeps) the provider's LM for this model string on first use.
        self._provider("courtroom-warm-up")


class AsyncServerEngine(ServerEngine):
    """The async twin of :class:`ServerEngine` (DSPy's ``acall`` path)."""

    def __init__(self, api_base: str, api_key: str, timeout: float | None) -> None:  # noqa: D107
        super().__init__(api_base, api_key, timeout, asynchronous=True)

    async def complete(self, request: Any) -> Any:  # type: ignore[override]  # noqa: D102
        try:
            return await self._inner().complete(dataclasses.replace(request, model=self._route(request.model)))
        except Exception as exc:
            self._scrub(exc)
            raise

    async def aclose(self) -> None:  # noqa: D102
        if self._engine is not None:
            await self._engine.aclose()


def server_engines(api_base: str, api_key: str, timeout: float | None) -> dict[str, Any]:
    """``engine=`` and ``async_engine=`` for a ``dspy.LM`` served at ``api_base``."""
    return {
        "engine": ServerEngine(api_base, api_key, timeout),
        "async_engine": AsyncServerEngine(api_base, api_key, timeout),
    }
