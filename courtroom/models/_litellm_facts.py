"""What courtroom asks LiteLLM (is this a provider? is this model priced?), answered without it when the answer is sure.

Importing LiteLLM costs about 3 s, more than the rest of a command's start-up, and a run on a
local server (``--api-base``) never sends a request through it. So the two questions asked before
and after every run are first answered from facts that need no import; only when those cannot
decide is LiteLLM imported and asked, as before.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import os
import sys
from collections.abc import Iterable
from pathlib import Path

KNOWN_PROVIDERS = frozenset(
    {
        # LiteLLM's own spellings that DSPy's native engine also routes (dspy.lm15's
        # LITELLM_PROVIDER_PREFIXES in dspy 3.4): LiteLLM knows every one of them.
        "openai",
        "anthropic",
        "gemini",
        "groq",
        "openrouter",
        "deepseek",
        "xai",
        "ollama",
        "ollama_chat",
        "hosted_vllm",
        "moonshot",
        "azure",
    }
)
"""Provider prefixes accepted without asking LiteLLM; any other prefix is checked by LiteLLM itself."""


def is_known_provider(model: str) -> bool:
    """Whether ``model``'s provider prefix is one LiteLLM surely knows (no import)."""
    return model.split("/", 1)[0] in KNOWN_PROVIDERS


@functools.cache
def bundled_model_map() -> dict[str, dict] | None:
    """LiteLLM's bundled model map (prices, context windows), read as a file (None: not found)."""
    spec = importlib.util.find_spec("litellm")
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / "model_prices_and_context_window_backup.json"
        if path.is_file():
            with path.open("rb") as handle:
                loaded = json.load(handle)
            return loaded if isinstance(loaded, dict) else None
    return None


@functools.cache
def _bundled_price_names() -> frozenset[str] | None:
    """The model names of LiteLLM's bundled price map (None: not found)."""
    bundled = bundled_model_map()
    return None if bundled is None else frozenset(bundled)


def model_facts() -> dict[str, dict]:
    """LiteLLM's model map: its live one when LiteLLM is loaded (or may fetch a newer map), else the bundled file."""
    if "litellm" in sys.modules or os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() != "true":
        import litellm

        return litellm.model_cost
    return bundled_model_map() or {}


def may_be_priced(names: Iterable[str]) -> bool:
    """False only when LiteLLM surely has no price for any of ``names``; True means: ask it.

    Sure when LiteLLM is not imported yet (so nothing registered a model at run time) and reads
    its bundled map (``LITELLM_LOCAL_MODEL_COST_MAP``, which courtroom sets): loading adds no
    model name to that file's, it only fills aliases of names already there.
    """
    if "litellm" in sys.modules or os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP", "").lower() != "true":
        return True
    bundled = _bundled_price_names()
    return bundled is None or any(name in bundled for name in names)
