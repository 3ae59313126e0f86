"""What does the provider bill for the usage it reported?

One path from a provider's usage to dollars, for every figure courtroom prints or writes (the
progress line, the run summary, the batch summary, a study's cost, tracking): SPEC §18, "a price
is a bill".

* :func:`counts` reads one answer's usage at the door, as DSPy hands it on: prompt tokens (every
  one, cache reads and writes included, as OpenAI counts them and as courtroom's Anthropic engine
  reports them), completion tokens, and the prompt tokens read from and written to the
  provider's prompt cache. A count that is negative, missing where the provider gave the field,
  or not a number is unknown: said once per run and taken as no cache (the dearer reading, so a
  bill is never understated). A cache count above the prompt is cut to it, said once. Nothing
  here raises: an answered request keeps its answer and its count, whatever its usage says.
* :func:`dollars` prices one model's counts with LiteLLM's table: the input price for the
  uncached prompt, ``cache_read_input_token_cost`` for reads, ``cache_creation_input_token_cost``
  for writes, the output price for completions, each at its ``_batches`` twin in batch mode
  (:func:`courtroom.models.usage.batch_price_per_token`, :func:`~courtroom.models.usage.cache_price_per_token`);
  the user's ``--prices`` row wins for the models it names.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from courtroom.cost.prices import Prices

__all__ = ["Counts", "counts", "dollars", "forget_warnings", "total"]

logger = logging.getLogger(__name__)

CACHE_KEYS = ("cache_read_tokens", "cache_write_tokens")
"""The per-model usage keys of the provider's cache (:class:`~courtroom.models.usage.Usage`'s ``by_model``)."""


class Counts(NamedTuple):
    """One answer's usage, as the provider bills it (cache tokens are within ``prompt``)."""

    prompt: int
    completion: int
    read: int
    write: int


_said: set[str] = set()
_said_lock = threading.Lock()


def forget_warnings() -> None:
    """A new run: its usage warnings are said again, once each (:func:`counts`)."""
    with _said_lock:
        _said.clear()


def _say_once(kind: str, line: str) -> None:
    with _said_lock:
        if kind in _said:
            return
        _said.add(kind)
    logger.warning(line)


def _valid(value: Any) -> bool:
    """A whole number >= 0 (an integral float too, as a JSON number may be)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return math.isfinite(value) and value >= 0 and float(value).is_integer()


def _unknown(what: str, value: Any, priced: str) -> None:
    # One line of 80 columns after the CLI's "WARNING courtroom.cost.bill: " (a value cut to 8).
    _say_once(what, f"{what} {repr(value)[:8]} unknown: {priced}")


def _number(value: Any, what: str) -> int | None:
    """A count as the provider gave it: a whole number >= 0 (absent: 0), else None (unknown, said once)."""
    if value is None:
        return 0
    if not _valid(value):
        _unknown(what, value, "counted as 0")
        return None
    return int(value)


def _get(usage: Any, key: str) -> Any:
    return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)


def counts(usage: Mapping[str, Any] | None) -> Counts:
    """One answer's usage (DSPy's usage entry, OpenAI's field names) read at the door (module docstring)."""
    usage = usage or {}
    prompt = _number(_get(usage, "prompt_tokens"), "prompt tokens") or 0
    completion = _number(_get(usage, "completion_tokens"), "completion tokens") or 0
    details = _get(usage, "prompt_tokens_details")
    if not isinstance(details, Mapping):
        if details is not None and hasattr(details, "cached_tokens"):  # LiteLLM's PromptTokensDetails
            details = {k: getattr(details, k, None) for k in ("cached_tokens", "cache_creation_tokens")}
        else:
            details = {}
    # The provider gave a cache field: a null in it is an unknown count, not zero.
    read = _cache_count(details, ("cached_tokens",), "cached tokens")
    write = _cache_count(details, ("cache_creation_tokens", "cache_write_tokens"), "cache-write tokens")
    if read + write > prompt:
        _above(read + write, prompt)
        read = min(read, prompt)
        write = min(write, prompt - read)
    return Counts(prompt, completion, read, write)


def _above(cached: Any, prompt: Any) -> None:
    _say_once("above", f"{cached} cached tokens > the prompt's {prompt}: cut to it")


_WIRE_COUNTS = {
    # Anthropic's Messages usage: cache counts are apart from input_tokens (nothing to clamp).
    "anthropic": (("input_tokens", "output_tokens"), ("cache_read_input_tokens", "cache_creation_input_tokens")),
    "openai": (("prompt_tokens", "completion_tokens", "total_tokens"), ()),
}


def checked_wire_usage(usage: Any, api: str) -> dict[str, Any] | None:
    """A provider's raw ``usage`` with its bad counts made known, or None when it needs no change.

    ``api``: ``openai`` (chat) or ``anthropic`` (Messages).

    A cached count that is null, negative or not a whole number becomes 0 (priced as uncached);
    an OpenAI cached count above ``prompt_tokens`` is cut to it; a bad token count becomes absent.
    Each is said once per run. The answer is kept: a parser that refused the whole answer for its
    usage (lm15 raises on a negative count) would lose what the provider billed.
    """
    if not isinstance(usage, Mapping):
        return None
    out = dict(usage)
    counts, cache = _WIRE_COUNTS[api]
    for key in counts:
        if key in out and out[key] is not None and not _valid(out[key]):
            _unknown(key.replace("_", " "), out[key], "counted as 0")
            del out[key]
    for key in cache:
        if key in out and not _valid(out[key]):
            _unknown("cached tokens" if "read" in key else "cache-write tokens", out[key], "priced as uncached")
            out[key] = 0
    details = out.get("prompt_tokens_details")
    if api == "openai" and isinstance(details, Mapping) and "cached_tokens" in details:
        details = dict(details)
        cached, prompt = details["cached_tokens"], out.get("prompt_tokens")
        if not _valid(cached):
            _unknown("cached tokens", cached, "priced as uncached")
            details["cached_tokens"] = 0
        elif _valid(prompt) and cached > prompt:
            _above(cached, prompt)
            details["cached_tokens"] = prompt
        out["prompt_tokens_details"] = details
    return None if out == dict(usage) else out


def _cache_count(details: Mapping[str, Any], keys: tuple[str, ...], what: str) -> int:
    for key in keys:
        if key in details:
            value = details[key]
            if not _valid(value):
                _unknown(what, value, "priced as uncached")
                return 0
            return int(value)
    return 0


def dollars(
    model: str,
    usage: Mapping[str, Any],
    prices: Prices | None = None,
    *,
    batch: bool = False,
) -> float | None:
    """What ``model``'s provider bills for ``usage``; None without a price.

    ``usage``: per-model counts (``prompt_tokens``, ``completion_tokens``, ``cache_read_tokens``,
    ``cache_write_tokens``).

    ``prices``: the user's table (dollars per token pair per 1M, :func:`courtroom.eval.metrics.user_prices`);
    ``batch``: through the provider's batch API.
    """
    from courtroom.cost.prices import batch_price_per_token, cache_price_per_token, price_per_token

    plain = batch_price_per_token(model, prices) if batch else price_per_token(model, prices)
    if plain is None:
        return None
    # Floats: the dry run prices expected tokens (:func:`courtroom.cost.prompt_cache.cache_dollars`).
    prompt = float(usage.get("prompt_tokens") or 0)
    completion = float(usage.get("completion_tokens") or 0)
    read, write = (float(usage.get(k) or 0) for k in CACHE_KEYS)
    total = (prompt - read - write) * plain[0] + completion * plain[1]
    if read or write:
        cached = cache_price_per_token(model, prices, batch=batch) or (plain[0], plain[0])
        total += read * cached[0] + write * cached[1]
    return total


def total(
    by_model: Mapping[str, Mapping[str, Any]],
    prices: Prices | None = None,
    *,
    batch: bool = False,
) -> float | None:
    """:func:`dollars` summed over models (``Usage.by_model``); None when no model has a price."""
    out, known = 0.0, False
    for model, usage in by_model.items():
        cost = dollars(model, usage, prices, batch=batch)
        if cost is not None:
            out, known = out + cost, True
    return out if known else None


def response_counts(usage: Any) -> dict[str, int]:
    """A response's usage (OpenAI's names, or lm15's ``input_tokens``, ``cache_read_tokens``...) as per-model counts.

    What a cached answer cost when it was sent: the cache keeps it, so a run served from the cache
    can say what its calls would cost sent again (:func:`total` of these).
    """
    if not usage:
        return {}
    if _get(usage, "prompt_tokens") is None and _get(usage, "input_tokens") is not None:  # lm15's names
        usage = {
            "prompt_tokens": _get(usage, "input_tokens"),
            "completion_tokens": _get(usage, "output_tokens"),
            "prompt_tokens_details": {
                "cached_tokens": _get(usage, "cache_read_tokens") or 0,
                "cache_creation_tokens": _get(usage, "cache_write_tokens") or 0,
            },
        }
    c = counts(usage)
    out = {"prompt_tokens": c.prompt, "completion_tokens": c.completion}
    out.update({k: v for k, v in zip(CACHE_KEYS, (c.read, c.write), strict=True) if v})
    return out
