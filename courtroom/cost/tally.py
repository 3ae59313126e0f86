"""What a trial costs per example, independent of the cache: LM calls, tokens or dollars.

A design study compares designs by what they would cost a user who runs them, not by what the
shared cache happened to save this study. Tokens are therefore counted for every LM call the
program makes, whether a server or the cache answered it: a DSPy callback reads the messages
sent and the answers, and estimates ``CHARS_PER_TOKEN`` characters per token (DSPy reports no
usage for cache hits, so measured counts would make a trial that reuses the cache look free).
Dollars are those tokens times a user price table (per 1M input, output tokens) or LiteLLM's.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback

from courtroom.models.usage import price_per_token

CHARS_PER_TOKEN = 4
UNITS = ("calls", "tokens", "dollars")


def _text(value: Any) -> int:
    """Characters of message contents or outputs (strings, dicts with text/content, lists of them)."""
    if isinstance(value, str):
        return len(value)
    if isinstance(value, Mapping):
        return sum(_text(value.get(k)) for k in ("content", "text") if value.get(k) is not None)
    if isinstance(value, list | tuple):
        return sum(_text(v) for v in value)
    return 0


def _tokens(chars: int) -> int:
    return math.ceil(chars / CHARS_PER_TOKEN)


class TokenTally(BaseCallback):
    """A DSPy callback: estimated input and output tokens per model, cache hits included."""

    def __init__(self) -> None:  # noqa: D107
        self.by_model: dict[str, list[int]] = {}
        """model -> [calls, input tokens, output tokens]."""
        self._open: dict[str, tuple[str, int]] = {}
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:  # noqa: D102
        chars = _text(inputs.get("messages")) + _text(inputs.get("prompt"))
        with self._lock:
            self._open[call_id] = (str(getattr(instance, "model", "?")), _tokens(chars))

    def on_lm_end(self, call_id: str, outputs: Any, exception: BaseException | None = None) -> None:  # noqa: D102
        with self._lock:
            model, inp = self._open.pop(call_id, ("?", 0))
            row = self.by_model.setdefault(model, [0, 0, 0])
            row[0] += 1
            row[1] += inp
            row[2] += _tokens(_text(outputs)) if exception is None else 0

    @property
    def tokens(self) -> int:
        """Input plus output tokens over every call."""
        return sum(r[1] + r[2] for r in self.by_model.values())

    def dollars(self, prices: Mapping[str, tuple[float, float]] | None = None) -> float | None:
        """Dollar cost of the tallied tokens; None when no model has a known price."""
        total, known = 0.0, False
        for model, (_, inp, out) in self.by_model.items():
            price = price_per_token(model, prices)
            if price is not None:
                known = True
                total += inp * price[0] + out * price[1]
        return total if known else None


@contextlib.contextmanager
def tallied(tally: TokenTally) -> Iterator[TokenTally]:
    """Tally every LM call made inside the block (threads that copy the context included)."""
    with dspy.context(callbacks=[*dspy.settings.get("callbacks", []), tally]):
        yield tally
