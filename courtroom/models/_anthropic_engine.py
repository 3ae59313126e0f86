"""DSPy's native Anthropic route toward one Messages API base URL, which joins the batch in batch mode.

An ``anthropic/NAME`` model given a base URL (``--api-base``, or in batch mode
``$ANTHROPIC_BASE_URL`` or Anthropic's own) is served by this engine. Live, it hands the request
to DSPy's native ``LM15Engine`` with lm15's Anthropic provider bound to that base URL and
``$ANTHROPIC_API_KEY`` (no LiteLLM import). In batch mode (:mod:`courtroom.models.batch`) lm15's
provider builds the same Messages body (``build_request``), which joins the current batch as a
Message Batches line's ``params``; the succeeded ``message`` is parsed back by the provider's own
``parse_response``, so a batch answer reads exactly as a live one. As in
:mod:`courtroom.models._server_engine`, DSPy keeps the cache, retries, history and usage, and the
base URL and key live here, never in the LM's ``kwargs`` or on disk.
"""

from __future__ import annotations

import importlib
from typing import Any

from courtroom.models._server_engine import AsyncServerEngine, ServerEngine

PROVIDER = "anthropic"
"""lm15's provider id for Anthropic's Messages API."""


def _cache_in_input(response: Any) -> Any:
    """``response`` with its cache reads and writes inside ``input_tokens``.

    Anthropic's ``input_tokens`` leave them out; DSPy's own Anthropic route (and LiteLLM) count them
    in, and courtroom's usage reads them as part of the prompt (:mod:`courtroom.models.usage`).
    """
    import dataclasses

    usage: Any = getattr(response, "usage", None)
    extra = (getattr(usage, "cache_read_tokens", None) or 0) + (getattr(usage, "cache_write_tokens", None) or 0)
    if not extra or usage.input_tokens is None:
        return response
    inputs = usage.input_tokens + extra
    total = inputs + (usage.output_tokens or 0)
    return dataclasses.replace(response, usage=dataclasses.replace(usage, input_tokens=inputs, total_tokens=total))


HOUR = {"type": "ephemeral", "ttl": "1h"}
"""Anthropic's 1-hour cache breakpoint (``cache_control``)."""


def hour_cache(body: Any) -> Any:
    """``body`` (a Messages body's system or messages) with each ``cache_control`` breakpoint in the 1-hour cache."""
    if isinstance(body, dict):
        return {k: dict(HOUR) if k == "cache_control" and v else hour_cache(v) for k, v in body.items()}
    if isinstance(body, list):
        return [hour_cache(v) for v in body]
    return body


class AnthropicEngine(ServerEngine):
    """Anthropic's Messages API at ``api_base``, reached through DSPy's native engine (module docstring)."""

    takes_n = False
    """The Messages API has no ``n``: k samples are k requests (:mod:`courtroom.models.sampling`)."""

    def _inner(self) -> Any:
        from courtroom.models import _usage_door

        _usage_door.install()  # a provider's bad usage count never loses its answer
        with self._lock:
            if self._engine is None:
                from dspy.clients.engines.lm15_engine import AsyncLM15Engine, LM15Engine, timeouts_for
                from dspy.lm15 import RouterConfig

                config = RouterConfig(
                    env={},
                    api_keys={PROVIDER: self._api_key},
                    base_urls={PROVIDER: self.api_base},
                    timeouts=timeouts_for(self.timeout),
                )
                cls = AsyncLM15Engine if self._asynchronous else LM15Engine
                self._engine = cls(config, model_type="chat")
            return self._engine

    def _route(self, model: str) -> str:
        return f"{PROVIDER}/{model.split('/', 1)[-1]}"

    def _provider(self, name: str) -> Any:
        return self._inner().router.lm(f"{PROVIDER}:{name}")

    def _parse(self, provider: Any, body: dict[str, Any], name: str) -> Any:
        # By name: mypy following dspy._vendor loses dspy's own star-exports. The cache's tokens are
        # added in by complete(), which a batch line's answer returns through (adding them here too
        # counted every cache read and write twice in batch mode: issue 50).
        base = importlib.import_module("dspy._vendor.lm15.providers.base")
        request = base.batch_entry_request(body.get("model") or name)
        return provider.parse_response(request, base.batch_entry_http(body))

    def _line_params(self, body: dict[str, Any]) -> dict[str, Any]:
        """A batch line's params: every ``cache_control`` breakpoint in Anthropic's 1-hour cache.

        A batch takes minutes to hours, longer than the 5-minute cache: a round's lines read what
        the previous round's lines wrote only if it lives an hour (its write is priced at 2x the
        input price instead of 1.25x; its reads at 0.1x, as ever).
        """
        return {k: hour_cache(v) if k in ("system", "messages") else v for k, v in body.items()}

    def complete(self, request: Any) -> Any:
        """:meth:`ServerEngine.complete`, prompt tokens counted as DSPy's own Anthropic route counts them.

        Live or a batch line's answer alike, once.
        """
        return _cache_in_input(super().complete(request))

    def batches(self) -> Any:
        """Anthropic's Message Batches API at this base URL (:class:`~courtroom.models.batch.AnthropicBatches`)."""
        from courtroom.models.batch import AnthropicBatches

        with self._lock:
            if self._batches is None:
                self._batches = AnthropicBatches(self.api_base, self._api_key)
            return self._batches


class AsyncAnthropicEngine(AnthropicEngine, AsyncServerEngine):
    """The async twin of :class:`AnthropicEngine` (DSPy's ``acall`` path; always live).

    :class:`AsyncServerEngine`'s ``complete`` and ``aclose`` over this engine's route and provider.
    """

    async def complete(self, request: Any) -> Any:  # type: ignore[override]  # noqa: D102
        return _cache_in_input(await AsyncServerEngine.complete(self, request))


def anthropic_engines(api_base: str, api_key: str, timeout: float | None) -> dict[str, Any]:
    """``engine=`` and ``async_engine=`` for a ``dspy.LM`` named ``anthropic/...`` served at ``api_base``."""
    return {
        "engine": AnthropicEngine(api_base, api_key, timeout),
        "async_engine": AsyncAnthropicEngine(api_base, api_key, timeout),
    }
