"""Refuse, before any request, a case longer than a model's context window.

LiteLLM's model map knows most hosted models' input limits (``max_input_tokens``); a case that
alone exceeds the smallest limit among the models that read it can never be answered, so it is
named in one line instead of being sent (and billed, or failed) once per call.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from courtroom.errors import DataError


def context_limit(model: str) -> int | None:
    """The most input tokens ``model`` takes, from LiteLLM's model map (None: unknown)."""
    from courtroom.models._litellm_facts import model_facts

    facts = model_facts()  # the bundled file unless LiteLLM is loaded: a run on a local server imports no LiteLLM
    for key in (model, model.split("/", 1)[-1]):
        info = facts.get(key)
        if info and info.get("max_input_tokens"):
            return int(info["max_input_tokens"])
    return None


def check_context(models: Iterable[Any], cases: Iterable[tuple[str, str]]) -> None:
    """Raise :class:`DataError` naming the first case (``(id, text)``) longer than a model's context."""
    limits = {}
    for lm in models:
        name = str(getattr(lm, "model", "") or "")
        limit = context_limit(name) if name else None
        if limit:
            limits[name] = limit
    if not limits:
        return
    model, limit = min(limits.items(), key=lambda kv: kv[1])
    for case_id, text in cases:
        if len(text) <= limit:  # a token is at least one character: this one fits
            continue
        import litellm

        tokens = int(litellm.token_counter(model=model, text=text))
        if tokens > limit:
            raise DataError(
                f"example {case_id} is {tokens:,} tokens long, more than {model} takes ({limit:,} tokens of "
                "input): shorten it or leave it out of the data; nothing was sent"
            )
