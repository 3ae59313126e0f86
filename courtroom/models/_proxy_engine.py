"""An OpenAI-compatible ``--api-base`` that carries credentials (``user:password@`` or a query token): a proxy.

DSPy's native client takes neither, so live requests go through LiteLLM (DSPy's ``LiteLLMEngine``,
one attempt each: courtroom owns the retries), as before. In batch mode
(:mod:`courtroom.models.batch`) the request joins the current batch exactly as through
:class:`~courtroom.models._server_engine.ServerEngine`: lm15 builds the wire body and parses the
answer (it sends nothing, so it is given the URL without its credentials), and the batch client
is given the whole URL (httpx sends the ``user:password`` as Basic auth, as the live path does).
The URL lives in memory only, and no error text carries it.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from courtroom.models._server_engine import SERVER, ServerEngine


def _bare(url: str) -> str:
    """``url`` without its user part and query (what lm15 is given: it only builds and parses bodies)."""
    parts = urlsplit(url)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query=""))


class ProxyEngine(ServerEngine):
    """Live through LiteLLM, batches through the batch API, toward one credentialed ``--api-base`` (module doc)."""

    def __init__(self, api_base: str, api_key: str, timeout: float | None, *, asynchronous: bool = False) -> None:  # noqa: D107
        super().__init__(_bare(api_base), api_key, timeout, asynchronous=asynchronous)
        self._proxy = api_base
        self._netloc = urlsplit(api_base).netloc
        self._live: Any = None

    def _litellm(self) -> Any:
        with self._lock:
            if self._live is None:
                from dspy.clients.engines.litellm_engine import AsyncLiteLLMEngine, LiteLLMEngine

                cls = AsyncLiteLLMEngine if self._asynchronous else LiteLLMEngine
                options: dict[str, Any] = {"api_base": self._proxy, "api_key": self._api_key}
                if self.timeout is not None:
                    options["timeout"] = self.timeout
                self._live = cls(model_type="chat", **options)
            return self._live

    def complete(self, request: Any) -> Any:
        """Join the current batch in batch mode, else send ``request`` through LiteLLM."""
        from courtroom.models import batch

        try:
            collector = batch.current()
            if collector is not None:
                return self._batched(collector, request)
            return self._litellm().complete(request)
        except Exception as exc:
            self._scrub(exc)
            raise

    def batches(self) -> Any:
        """The Files and Batches API at the whole URL, credentials included (made once)."""
        from courtroom.models.batch import OpenAIBatches

        with self._lock:
            if self._batches is None:
                self._batches = OpenAIBatches(self._proxy, self._api_key)
            return self._batches

    def _scrub(self, exc: Exception) -> None:
        """The whole address (credentials included) out of ``exc``, then the host as the parent does."""

        def clean(text: str) -> str:
            return text.replace(self._proxy, SERVER).replace(self._netloc, SERVER)

        exc.args = tuple(clean(a) if isinstance(a, str) else a for a in exc.args)
        message = getattr(exc, "message", None)
        if isinstance(message, str):
            exc.message = clean(message)  # type: ignore[attr-defined]
        super()._scrub(exc)

    def stream(self, request: Any) -> Any:  # noqa: D102
        return self._litellm().stream(request)

    def close(self) -> None:  # noqa: D102
        if self._live is not None and not self._asynchronous:
            self._live.close()
        super().close()


class AsyncProxyEngine(ProxyEngine):
    """The async twin of :class:`ProxyEngine` (DSPy's ``acall`` path; always live)."""

    def __init__(self, api_base: str, api_key: str, timeout: float | None) -> None:  # noqa: D107
        super().__init__(api_base, api_key, timeout, asynchronous=True)

    async def complete(self, request: Any) -> Any:  # type: ignore[override]  # noqa: D102
        try:
            return await self._litellm().complete(request)
        except Exception as exc:
            self._scrub(exc)
            raise

    async def aclose(self) -> None:  # noqa: D102
        if self._live is not None:
            await self._live.aclose()


def proxy_engines(api_base: str, api_key: str, timeout: float | None) -> dict[str, Any]:
    """``engine=`` and ``async_engine=`` for a ``dspy.LM`` served at a credentialed ``api_base``."""
    return {
        "engine": ProxyEngine(api_base, api_key, timeout),
        "async_engine": AsyncProxyEngine(api_base, api_key, timeout),
    }
