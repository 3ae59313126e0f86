"""Per-scope accounting of LM calls, cache hits, tokens and cost.

A :class:`Meter` is installed as DSPy's ``usage_tracker`` for one example (or any scope). DSPy
reports usage only for calls that reached the provider, and courtroom's retry loop reports each
failed attempt, so ``sent`` counts every real request; the adapter counts cache hits directly
(an answer came back and nothing was sent). Tokens are those of sent requests only: a cache hit
costs nothing and reports no tokens.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

import dspy
from dspy.utils.usage_tracker import UsageTracker

_meter: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("courtroom_meter", default=None)
_preparing: contextvars.ContextVar[bool] = contextvars.ContextVar("courtroom_preparing", default=False)


@dataclass
class Usage:
    """Counts for one scope."""

    calls: int = 0
    """LM calls made by the program (a retry of a bad answer is one more), including cache hits."""
    sent: int = 0
    """Requests that reached a model server, each retry one more (courtroom owns retries:
    :mod:`courtroom.models._requests`)."""
    failed: int = 0
    """Calls that raised: transport errors after the retries, and bad answers (cut off, not valid
    JSON, not the schema), whether sent or served from the cache."""
    cached: int = 0
    """Calls answered from the cache (counted as they happen, failed ones included)."""
    shared: int = 0
    """Calls answered in another call's request (n-sampling: one request, several samples;
    :mod:`courtroom.models.sampling`): sent, but not a request of their own."""
    prompt_tokens: int = 0
    """Prompt tokens of sent calls only."""
    completion_tokens: int = 0
    """Completion tokens of sent calls only."""
    cached_tokens: int = 0
    """Prompt plus completion tokens the cache hits cost when they were sent (not spent again)."""
    cache_read_tokens: int = 0
    """Prompt tokens of sent calls that the provider's prompt cache served (OpenAI's
    ``prompt_tokens_details.cached_tokens``, Anthropic's ``cache_read_input_tokens``): within
    ``prompt_tokens``, billed at the provider's cached price."""
    cache_write_tokens: int = 0
    """Prompt tokens of sent calls written to the provider's prompt cache (Anthropic's
    ``cache_creation_input_tokens``): within ``prompt_tokens``, billed at its cache-write price."""
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    """Model -> ``sent``, ``prompt_tokens``, ``completion_tokens`` (and ``cache_read_tokens``,
    ``cache_write_tokens`` where the provider's cache served or stored any)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def cost(self, prices: Mapping[str, tuple[float, float]] | None = None, *, batch: bool = False) -> float | None:
        """Dollar cost: a user price (per 1M input, output tokens) or LiteLLM's, else None.

        ``batch``: at batch prices (:func:`batch_price_per_token`).
        """
        total, known = 0.0, False
        for model, counts in self.by_model.items():
            price = batch_price_per_token(model, prices) if batch else price_per_token(model, prices)
            if price is None:
                continue
            known = True
            read, write = int(counts.get("cache_read_tokens", 0)), int(counts.get("cache_write_tokens", 0))
            total += (counts["prompt_tokens"] - read - write) * price[0] + counts["completion_tokens"] * price[1]
            if read or write:
                cached = cache_price_per_token(model, prices, batch=batch) or (price[0], price[0])
                total += read * cached[0] + write * cached[1]
        return total if known else None


def price_per_token(model: str, prices: Mapping[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """(input, output) dollars per token for ``model``, from ``prices`` (per 1M tokens) or LiteLLM."""
    if prices and model in prices:
        inp, out = prices[model]
        return inp / 1e6, out / 1e6
    from courtroom.models._litellm_facts import may_be_priced

    keys = (model, model.split("/", 1)[-1])
    if not may_be_priced(keys):
        return None
    import litellm

    for key in keys:
        info = litellm.model_cost.get(key)
        if info and "input_cost_per_token" in info:
            return float(info["input_cost_per_token"]), float(info.get("output_cost_per_token", 0.0))
    return None


def batch_price_per_token(
    model: str, prices: Mapping[str, tuple[float, float]] | None = None
) -> tuple[float, float] | None:
    """(input, output) dollars per token through the provider's batch API.

    LiteLLM's ``input_cost_per_token_batches`` / ``output_cost_per_token_batches`` where it has
    them (and the user's table does not name the model), else half the live price: what OpenAI,
    Anthropic, Google, Mistral and Together charge for batches.
    """
    live = price_per_token(model, prices)
    if live is None:
        return None
    if not (prices and model in prices):
        import litellm

        for key in (model, model.split("/", 1)[-1]):
            info = litellm.model_cost.get(key) or {}
            if "input_cost_per_token_batches" in info:
                return float(info["input_cost_per_token_batches"]), float(
                    info.get("output_cost_per_token_batches", live[1] / 2)
                )
    return live[0] / 2, live[1] / 2


def cache_price_per_token(
    model: str, prices: Mapping[str, tuple[float, float]] | None = None, *, batch: bool = False
) -> tuple[float, float] | None:
    """(cached read, cache write) dollars per prompt token: LiteLLM's cache prices for ``model``.

    ``cache_read_input_token_cost`` and ``cache_creation_input_token_cost`` (their ``_batches``
    twins in batch mode). A price LiteLLM lacks is the plain input price (live or batch): no
    discount is assumed where none is published (gpt-4o-mini has no batch cache price). None for a
    model priced by the user's table (which has no cache prices: its input price applies).
    """
    if prices and model in prices:
        return None
    live = batch_price_per_token(model) if batch else price_per_token(model)
    if live is None:
        return None
    import litellm

    suffix = "_batches" if batch else ""
    for key in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(key) or {}
        if "input_cost_per_token" in info:
            read = info.get(f"cache_read_input_token_cost{suffix}")
            write = info.get(f"cache_creation_input_token_cost{suffix}")
            return (
                float(read) if read is not None else live[0],
                float(write) if write is not None else live[0],
            )
    return live[0], live[0]


def cache_tokens(usage_entry: Mapping[str, Any] | None) -> tuple[int, int]:
    """(cache read, cache write) prompt tokens of one answer's usage (DSPy's ``prompt_tokens_details``)."""
    details = (usage_entry or {}).get("prompt_tokens_details") or {}
    if not isinstance(details, Mapping):
        return 0, 0
    read = details.get("cached_tokens") or 0
    write = details.get("cache_creation_tokens") or details.get("cache_write_tokens") or 0
    return int(read), int(write)


class Meter(UsageTracker):
    """Thread-safe usage counter; DSPy calls ``add_usage`` once per answer that reached a server.

    An answer that shared its request with others (``"requests": 0``, :mod:`courtroom.models.sampling`)
    adds its tokens, not a request.
    """

    def __init__(self) -> None:
        super().__init__()
        self.usage = Usage()
        self._lock = threading.Lock()

    def add_usage(self, lm: str, usage_entry: dict[str, Any]) -> None:  # noqa: D102
        prompt = int((usage_entry or {}).get("prompt_tokens") or 0)
        completion = int((usage_entry or {}).get("completion_tokens") or 0)
        # A sample that came back in another sample's request (n-sampling) is a call, not a request.
        sent = int((usage_entry or {}).get("requests", 1))
        with self._lock:
            u = self.usage
            u.sent += sent
            u.shared += 1 - sent
            u.prompt_tokens += prompt
            u.completion_tokens += completion
            m = u.by_model.setdefault(lm, {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
            m["sent"] += sent
            m["prompt_tokens"] += prompt
            m["completion_tokens"] += completion
            read, write = cache_tokens(usage_entry)
            u.cache_read_tokens += read
            u.cache_write_tokens += write
            for key, value in (("cache_read_tokens", read), ("cache_write_tokens", write)):
                if value:
                    m[key] = m.get(key, 0) + value

    def count_failed_request(self, lm: str) -> None:
        """Record one request that reached the server and failed (429, 5xx, time-out): sent, no tokens."""
        with self._lock:
            self.usage.sent += 1
            m = self.usage.by_model.setdefault(lm, {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
            m["sent"] += 1

    def count_cache_hit(self, tokens: int = 0) -> None:
        """Record one call answered from the cache (the adapter sees these; DSPy reports no usage)."""
        with self._lock:
            self.usage.cached += 1
            self.usage.cached_tokens += tokens

    def count_call(self, failed: bool = False) -> None:
        """Record one program-level LM call."""
        with self._lock:
            self.usage.calls += 1
            self.usage.failed += int(failed)


@contextlib.contextmanager
def metered(meter: Meter | None = None) -> Iterator[Meter]:
    """Account every LM call made inside the block (in this thread and its copied contexts)."""
    meter = meter or Meter()
    token = _meter.set(meter)
    try:
        with dspy.context(usage_tracker=meter):
            yield meter
    finally:
        _meter.reset(token)


def current_meter() -> Meter | None:
    """The meter of the enclosing :func:`metered` block, if any."""
    return _meter.get()


@contextlib.contextmanager
def preparing() -> Iterator[None]:
    """Mark the LM calls made inside the block as fitting a program on the train split, not answering examples.

    The progress display counts them apart, as the run summary does (``training_sent``).
    """
    token = _preparing.set(True)
    try:
        yield
    finally:
        _preparing.reset(token)


def in_preparation() -> bool:
    """Whether this call is made inside a :func:`preparing` block (in this thread or a copied context)."""
    return _preparing.get()
