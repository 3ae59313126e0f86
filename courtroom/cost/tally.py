"""How many LM calls did a block make, whether a server or the cache answered them?

A design study compares designs by what they would cost a user who runs them, not by what the
shared cache happened to save this study: a trial's compile counts its calls here (a DSPy callback
sees every call, cache hits included), with an estimate of their tokens at ``CHARS_PER_TOKEN``
characters per token. A trial's tokens and dollars are measured instead, from the provider's usage
and what each cached answer was billed for when sent (:func:`courtroom.optimize.study._trials.trial_cost`,
priced by :mod:`courtroom.cost.bill`).
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import dspy
from dspy.utils.callback import BaseCallback

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


@contextlib.contextmanager
def tallied(tally: TokenTally) -> Iterator[TokenTally]:
    """Tally every LM call made inside the block (threads that copy the context included)."""
    with dspy.context(callbacks=[*dspy.settings.get("callbacks", []), tally]):
        yield tally
