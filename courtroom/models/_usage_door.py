"""Where does a provider's usage enter, and what if it is wrong?

Every answer DSPy's native engine reads (live, or a batch line's, :mod:`courtroom.models._server_engine`
and :mod:`courtroom.models._anthropic_engine`) goes through lm15's ``parse_response`` of OpenAI's
chat or Anthropic's Messages reader. lm15 refuses a whole answer whose usage holds a negative or
non-integral count (``cache_read_tokens must be >= 0``): the example failed with no retry and the
request, which the provider answered and billed, went uncounted. Both readers are wrapped once
(:func:`install`, idempotent, as :mod:`courtroom.models._requests` wraps DSPy's ``execute``) so the
body's ``usage`` is checked first (:func:`courtroom.cost.bill.checked_wire_usage`): a bad count is
said once and read as unknown, and the answer is kept.
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
import json
from typing import Any

_READERS = (
    ("dspy._vendor.lm15.providers.openai_chat", "OpenAIChatLM", "openai"),
    ("dspy._vendor.lm15.providers.anthropic", "AnthropicLM", "anthropic"),
)


def _checked(response: Any, api: str) -> Any:
    """``response`` (lm15's ``HttpResponse``) with its body's usage checked; itself when nothing changes."""
    from courtroom.cost.bill import checked_wire_usage

    if getattr(response, "status", 200) != 200:
        return response
    try:
        body = json.loads(response.body)
    except (TypeError, ValueError):
        return response  # not JSON: the reader says so as it always has
    usage = checked_wire_usage(body.get("usage") if isinstance(body, dict) else None, api)
    if usage is None:
        return response
    return dataclasses.replace(response, body=json.dumps({**body, "usage": usage}).encode("utf-8"))


def install() -> None:
    """Wrap each reader's ``parse_response`` once (a reader lm15 lacks is left alone)."""
    for module_name, class_name, api in _READERS:
        try:
            cls = getattr(importlib.import_module(module_name), class_name)
        except (ImportError, AttributeError):
            continue
        original = cls.parse_response
        if getattr(original, "courtroom_door", False):
            continue

        def parse_response(
            self: Any, request: Any, response: Any, *, _original: Any = original, _api: str = api
        ) -> Any:
            return _original(self, request, _checked(response, _api))

        functools.update_wrapper(parse_response, original)
        parse_response.courtroom_door = True  # type: ignore[attr-defined]
        cls.parse_response = parse_response
