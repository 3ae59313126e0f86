"""What does a token cost? LiteLLM's prices per model, live, batch and cached (``--prices`` overrides).

The prices :mod:`courtroom.cost.bill` bills a provider's usage with; kept apart from the usage
counters (:mod:`courtroom.models.usage`) so the bill and the counters import one way only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
