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

from courtroom.cost.prices import (  # noqa: F401 - re-exported: the prices' old home
    HOUR_WRITE,
    Prices,
    batch_price_per_token,
    cache_price_per_token,
    price_per_token,
)

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
