"""DSPy's disk cache, kept in ``$COURTROOM_CACHE_DIR`` (default: the user cache dir).

The cache never holds credentials: LiteLLM responses carry ``_hidden_params["api_base"]``, which
keeps any ``user:password@`` or query token of the URL, so it is redacted before storing.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import dspy
from dspy.clients import DISK_CACHE_LIMIT
from dspy.clients.cache import Cache
from platformdirs import user_cache_dir

from courtroom.errors import ConfigError

_configured: Path | None = None


def redact_url(url: str | None) -> str | None:
    """A URL without user, password, query or fragment (where tokens hide)."""
    if not url or not isinstance(url, str):
        return url
    parts = urlparse(url)
    netloc = (parts.hostname or "") + (f":{parts.port}" if parts.port else "")
    return parts._replace(netloc=netloc, query="", fragment="").geturl()


def without_base_url(config: Mapping[str, Any]) -> dict[str, Any]:
    """A config as written to disk: never the base URL (it can hold credentials or tokens).

    ``api_base_given`` records that one was used, so a resume asks for ``--api-base`` again
    instead of sending the requests elsewhere.
    """
    out = dict(config)
    out["api_base_given"] = bool(out.get("api_base"))
    out["api_base"] = None
    return out


def require_base_url(recorded: Mapping[str, Any], api_base: str | None, where: str) -> None:
    """Refuse to resume without ``--api-base`` a run that had one (it is not on disk to reuse)."""
    if recorded.get("api_base_given") and not api_base:
        raise ConfigError(
            f"{where} ran with --api-base, which is never written to disk (it can hold credentials): "
            "pass --api-base URL again"
        )


_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/\s@'\"]+@")


def redact_text(text: str) -> str:
    """``text`` with the user and password removed from every URL in it (for ``--debug`` output)."""
    return _USERINFO.sub(r"\g<scheme>", text)


def _scrub(value: Any) -> Any:
    hidden = getattr(value, "_hidden_params", None)
    if isinstance(hidden, dict) and hidden.get("api_base"):
        value = copy.copy(value)
        value._hidden_params = {**hidden, "api_base": redact_url(hidden["api_base"])}
    return value


def usage_tokens(usage: Any) -> int:
    """Prompt plus completion tokens of a response's usage (OpenAI or lm15 field names)."""
    if not usage:
        return 0

    def get(key: str) -> Any:
        return usage.get(key) if isinstance(usage, Mapping) else getattr(usage, key, None)

    return int(get("prompt_tokens") or get("input_tokens") or 0) + int(
        get("completion_tokens") or get("output_tokens") or 0
    )


CACHED_TOKENS = "courtroom_cached_tokens"
"""Attribute of a response served from the cache: the tokens it cost when it was sent."""


class RedactingCache(Cache):
    """DSPy's cache, storing responses with credentials removed from their base URL.

    A hit keeps, as :data:`CACHED_TOKENS`, the tokens the answer cost when first sent (DSPy
    clears its usage: nothing is billed), so a fully cached re-run can still say what its calls
    would cost sent again.
    """

    def put(self, request: dict[str, Any], value: Any, *args: Any, **kwargs: Any) -> None:  # noqa: D102
        super().put(request, _scrub(value), *args, **kwargs)

    def _prepare_cached_response(self, response: Any) -> Any:
        tokens = usage_tokens(getattr(response, "usage", None))
        out = super()._prepare_cached_response(response)
        if tokens and out is not response:
            object.__setattr__(out, CACHED_TOKENS, tokens)
        return out


def cache_dir() -> Path:
    """Where the LM response cache lives."""
    return Path(os.environ.get("COURTROOM_CACHE_DIR") or user_cache_dir("courtroom")).expanduser()


def configure_cache(path: str | Path | None = None, *, enabled: bool = True) -> Path:
    """Point DSPy's memory and disk cache at ``path`` (idempotent)."""
    global _configured
    target = Path(path) if path else cache_dir()
    if _configured == target and enabled:
        return target
    target.mkdir(parents=True, exist_ok=True)
    cache = RedactingCache(enabled, enabled, str(target), int(os.environ.get("DSPY_CACHE_LIMIT", DISK_CACHE_LIMIT)))
    with dspy._cache_lock:
        dspy.cache = cache
    _configured = target if enabled else None
    return target
