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
from collections.abc import Iterator, Mapping, Sequence
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
    cached_by_model: dict[str, dict[str, int]] = field(default_factory=dict)
    """Model -> what the cache hits' requests were billed for when they were sent (``prompt_tokens``,
    ``completion_tokens``, the provider's cache counts): what they would cost sent again."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    def cost(self, prices: Prices | None = None, *, batch: bool = False) -> float | None:
        """What the providers bill for ``by_model`` (:func:`courtroom.cost.bill.total`), else None.

        ``prices``: a user price (per 1M input, output tokens) that wins over LiteLLM's; ``batch``:
        at batch prices (:func:`batch_price_per_token`).
        """
        from courtroom.cost.bill import total

        return total(self.by_model, prices, batch=batch)

    def cached_cost(self, prices: Prices | None = None, *, batch: bool = False) -> float | None:
        """What the cache hits would cost sent again (``cached_by_model``), else None."""
        from courtroom.cost.bill import total

        return total(self.cached_by_model, prices, batch=batch)


Prices = Mapping[str, Sequence[float]]
"""A user's price table: model -> ``[input, output]`` dollars per 1M tokens, or six numbers with the
cache and batch prices too (:data:`courtroom.eval.metrics.EXTRA_PRICES`)."""


def price_per_token(model: str, prices: Prices | None = None) -> tuple[float, float] | None:
    """(input, output) dollars per token for ``model``, from ``prices`` (per 1M tokens) or LiteLLM."""
    if prices and model in prices:
        row = prices[model]
        return float(row[0]) / 1e6, float(row[1]) / 1e6
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


def batch_price_per_token(model: str, prices: Prices | None = None) -> tuple[float, float] | None:
    """(input, output) dollars per token through the provider's batch API.

    The user's row's batch prices where it names them; LiteLLM's ``input_cost_per_token_batches`` /
    ``output_cost_per_token_batches`` where it has them (and the user's table does not name the
    model); else half the live price: what OpenAI, Anthropic, Google, Mistral and Together charge
    for batches.
    """
    live = price_per_token(model, prices)
    if live is None:
        return None
    if prices and model in prices:
        row = prices[model]
        return (float(row[4]) / 1e6, float(row[5]) / 1e6) if len(row) >= 6 else (live[0] / 2, live[1] / 2)
    import litellm

    for key in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(key) or {}
        if "input_cost_per_token_batches" in info:
            return float(info["input_cost_per_token_batches"]), float(
                info.get("output_cost_per_token_batches", live[1] / 2)
            )
    return live[0] / 2, live[1] / 2


def cache_price_per_token(
    model: str, prices: Prices | None = None, *, batch: bool = False
) -> tuple[float, float] | None:
    """(cached read, cache write) dollars per prompt token: LiteLLM's cache prices for ``model``.

    ``cache_read_input_token_cost`` and ``cache_creation_input_token_cost`` (their ``_batches``
    twins in batch mode). A price LiteLLM lacks is the plain input price (live or batch): no
    discount is assumed where none is published (gpt-4o-mini has no batch cache price). A model the
    user's table prices: the row's cache prices (in batch mode with the row's batch discount on
    input), or None when it names none (its input price applies).
    """
    # courtroom's Anthropic batch lines use the 1-hour cache (:mod:`courtroom.models._anthropic_engine`):
    # its write is 2x the input price where the 5-minute one is 1.25x, at the batch's discount.
    hour = batch and model.startswith("anthropic/")
    if prices and model in prices:
        row = prices[model]
        if len(row) < 6:
            return None
        scale = float(row[4]) / float(row[0]) if batch and float(row[0]) else 0.5 if batch else 1.0
        write: Any = HOUR_WRITE * float(row[0]) if hour else float(row[3])
        return float(row[2]) / 1e6 * scale, write / 1e6 * scale
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
            if hour:
                above = info.get("cache_creation_input_token_cost_above_1hr")
                scale = live[0] / float(info["input_cost_per_token"])  # the batch discount
                write = float(above) * scale if above is not None else HOUR_WRITE * live[0]
            return (
                float(read) if read is not None else live[0],
                float(write) if write is not None else live[0],
            )
    return (live[0], HOUR_WRITE * live[0]) if hour else (live[0], live[0])


HOUR_WRITE = 2.0
"""Anthropic's 1-hour cache write, as a multiple of the input price (its 5-minute write is 1.25x)."""


def cache_tokens(usage_entry: Mapping[str, Any] | None) -> tuple[int, int]:
    """(cache read, cache write) prompt tokens of one answer's usage, checked (:func:`courtroom.cost.bill.counts`)."""
    from courtroom.cost.bill import counts

    c = counts(usage_entry)
    return c.read, c.write


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
        from courtroom.cost.bill import counts

        # Checked at the door: an answer counts whatever its usage says (a bad count is said once).
        prompt, completion, read, write = counts(usage_entry)
        # A sample that came back in another sample's request (n-sampling) is a call, not a request.
        sent = _requests(usage_entry)
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

    def count_cache_hit(
        self, tokens: int = 0, model: str | None = None, usage: Mapping[str, int] | None = None
    ) -> None:
        """Record one call answered from the cache (the adapter sees these; DSPy reports no usage).

        ``model`` and ``usage``: what its request was billed for when sent (``cached_by_model``).
        """
        with self._lock:
            self.usage.cached += 1
            self.usage.cached_tokens += tokens
            if model and usage:
                m = self.usage.cached_by_model.setdefault(model, {})
                for key, value in usage.items():
                    m[key] = m.get(key, 0) + int(value)

    def count_call(self, failed: bool = False) -> None:
        """Record one program-level LM call."""
        with self._lock:
            self.usage.calls += 1
            self.usage.failed += int(failed)


def _requests(usage_entry: Mapping[str, Any] | None) -> int:
    """1, or 0 for a sample answered in another sample's request (``"requests": 0``)."""
    value = (usage_entry or {}).get("requests", 1)
    return 0 if value == 0 else 1


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
