"""Prompt layouts: which bytes does every request for a case start with?

A provider's prompt cache bills a prefix it has seen at a fraction of the input price (SPEC §18):
OpenAI caches the longest 1,024+-token prefix automatically and reads it at 0.5x (gpt-4o-mini);
Anthropic caches up to an explicit ``cache_control`` breakpoint, writes it at 1.25x and reads it at
0.1x, and caches nothing below a minimum prefix per model (1,024 tokens for Claude Sonnet 4.5). The
classic layout (DSPy's: each role's own instructions in the system message, then the case among the
role's fields) shares almost no prefix between roles.

``--prompt-layout`` (the spec's ``models.prompt_layout``, carried by each model a command builds;
default ``$COURTROOM_PROMPT_LAYOUT``, else ``auto``; a paper preset keeps ``classic``) chooses:

* ``classic``: as DSPy lays prompts out; every prompt and cache entry as before;
* ``cache``: every request for a case starts with the same bytes: a system message holding the
  program's preamble (every role's instructions, one per role) and then the case; a first user
  message holds the role's own system text (its instructions, fields and output format), a second
  its other fields. On ``anthropic/`` models ``cache_control`` breakpoints mark the end of that
  system message and of the role's message (lm15's ``CacheConfig(prefix_until_index=0)``), so
  every later request for the case (and of the role) reads them at the cache price; the first
  request of a new prefix goes alone (:mod:`courtroom.models._prefix`). About 2x the prompt
  tokens of the classic layout;
* ``auto`` (default): per program, model and case, the layout the cost model says is cheaper
  (:mod:`courtroom.cost.layout_choice`: the provider's minimum cacheable prefix, write premium,
  read price and batch discount, and how many of the case's requests share the prefix); classic
  for a model without a known price.

Every role then reads every role's instructions (one preamble for all): the information each role
sees of the *case and the debate* is unchanged. A call with demos keeps the classic layout (its
demos are its own). Usage records the reads and writes the provider reports
(:mod:`courtroom.models.usage`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import hashlib
import os
from collections.abc import Iterator
from typing import Any

import dspy

from courtroom.models._adapter import SchemaJSONAdapter
from courtroom.models._layout_names import LAYOUTS

OPENAI_WIRE = ("openai/", "hosted_vllm/")
"""Model prefixes whose requests are OpenAI chat bodies (they take ``prompt_cache_key``)."""
CASE = "case"
CASE_MARKER = "\n\n[[ ## case (the facts every role reads) ## ]]\n"
"""What opens the case at the end of a cache-layout system message (never in a classic prompt)."""

_preamble: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("courtroom_preamble", default=None)


def chosen(value: str | None = None) -> str:
    """The layout asked for: ``value`` (``--prompt-layout``), else ``$COURTROOM_PROMPT_LAYOUT``, else ``auto``."""
    if value is not None:
        if value not in LAYOUTS:
            from courtroom.errors import ConfigError

            raise ConfigError(f"--prompt-layout {value!r}: use one of {', '.join(LAYOUTS)}")
        return value
    from courtroom._env import prompt_layout

    return prompt_layout()


def layout_for(lm: Any) -> str:
    """``classic``, ``cache`` or ``auto`` for requests to ``lm``.

    The model's own ``prompt_layout`` (set by ``--prompt-layout`` when the command built it,
    :func:`courtroom.models.lms.resolve_roles`), else :func:`chosen`'s default. A program resolves
    ``auto`` per case (:func:`courtroom.cost.layout_choice.choose`) before the case's requests.
    """
    return chosen(getattr(lm, "prompt_layout", None))


@functools.lru_cache(maxsize=1024)  # every request about a case asks it again: hashed once
def case_key(case: str) -> str:
    """OpenAI's ``prompt_cache_key`` of a case: the same for every request about it, never its text."""
    return "courtroom-" + hashlib.sha256(case.encode("utf-8", "surrogatepass")).hexdigest()[:24]


def _routes_cache_hints(lm: Any) -> bool:
    """Whether ``lm``'s requests go through an engine that maps lm15's ``CacheConfig`` onto the wire.

    DSPy's native engine (``openai/`` and ``anthropic/`` names, without an ``--api-base``) and
    courtroom's ``--api-base`` engines do; LiteLLM's route (a proxy URL, ``ollama_chat/``, an
    ``openai/`` name under ``$OPENAI_BASE_URL``) refuses one: DSPy's own choice decides.
    """
    engine = getattr(lm, "_engine_spec", None)
    if isinstance(engine, str):
        return engine != "litellm" and _native(lm)
    from courtroom.models._proxy_engine import ProxyEngine
    from courtroom.models._server_engine import ServerEngine

    return isinstance(engine, ServerEngine) and not isinstance(engine, ProxyEngine)  # Anthropic's is one too


def _native(lm: Any) -> bool:
    """Whether DSPy sends ``lm``'s calls through its native engine (its choice, made once per model and URL)."""
    prefix = str(getattr(lm, "model", "")).split("/", 1)[0].upper()
    env = tuple(os.environ.get(f"{prefix}_{name}") for name in ("API_BASE", "BASE_URL"))
    memo = lm.__dict__.get("_courtroom_native")
    if memo is not None and memo[0] == env:
        return bool(memo[1])
    from dspy.clients.backend_selection import select_backend

    try:
        native = bool(select_backend(lm, {}).native)
    except Exception:  # noqa: BLE001 - a model DSPy cannot resolve natively goes through LiteLLM
        native = False
    lm.__dict__["_courtroom_native"] = (env, native)
    return native


def cache_hint(lm: Any, cache_layout: bool, case: Any) -> Any:
    """The ``prompt_cache`` (lm15 ``CacheConfig``) of one request to ``lm`` about ``case``, or None.

    * ``anthropic/`` models in the cache layout: a breakpoint at the end of the system message (the
      preamble and the case, which every request for the case starts with) and one at the end of
      the role's own message (which the role's every request for the case starts with): Anthropic
      caches up to each, where the prefix reaches the model's minimum (1,024 tokens on Sonnet 4.5:
      a 400-word case and the preamble alone do not, with the role's text they do);
    * OpenAI-wire models (``openai/`` names always, ``hosted_vllm/`` in the cache layout): OpenAI's
      ``prompt_cache_key``, one per case (:func:`case_key`), so a case's requests reach the same
      cache. OpenAI routes by the key and the prefix together; the answers do not depend on it (it is
      left out of DSPy's cache key, :mod:`courtroom.models.lms`).
    """
    model = str(getattr(lm, "model", ""))
    if not _routes_cache_hints(lm):
        return None
    from dspy.lm15 import CacheConfig

    if model.startswith("anthropic/"):
        # Marks the system message and the first message (the role's text, in the cache layout).
        return CacheConfig(prefix_until_index=0) if cache_layout else None
    if (
        isinstance(case, str)
        and case
        and (model.startswith("openai/") or (cache_layout and model.startswith(OPENAI_WIRE)))
    ):
        return CacheConfig(key=case_key(case))
    return None


def shared_prefixes(lm: Any, hint: Any, head: str, case: Any, role: str, signature: Any) -> tuple[str, ...]:
    """The prefixes a cache-layout request to ``lm`` shares with its siblings (:mod:`courtroom.models._prefix`).

    Where the request carries a cache hint (``hint``, :func:`cache_hint`): the system message
    (``head``, the preamble, and the case: every role's requests for the case) and, after it,
    the role's own message (its requests for the case, and k samples of one prompt). Keyed by
    the model and its server too: each is a cache of its own. Empty where nothing is cached.
    """
    if hint is None or not isinstance(case, str) or not case:
        return ()
    from courtroom.models._prefix import prefix_key

    where = f"{getattr(lm, 'model', '')}\0{getattr(lm, 'api_base', None) or ''}"
    system = prefix_key(where, head, case)
    fields = ",".join(getattr(signature, "fields", {}) or {})
    return system, prefix_key(system, role, str(getattr(signature, "instructions", "")), fields)


@contextlib.contextmanager
def preamble(text: str, role: str) -> Iterator[None]:
    """While inside, cache-layout requests open with ``text`` (the program's every role's instructions), as ``role``."""
    token = _preamble.set((text, role))
    try:
        yield
    finally:
        _preamble.reset(token)


def program_preamble(program: dspy.Module) -> str:
    """The preamble of ``program``: one paragraph per role predictor, its instructions."""
    parts = [
        "You take part in a structured deliberation over the case below, in one of the roles listed here; "
        "each request names your role and what to answer."
    ]
    for name, predictor in program.named_predictors():
        parts.append(f"## Role: {name}\n{predictor.signature.instructions}")
    return "\n\n".join(parts)


@functools.lru_cache(maxsize=512)
def _without_case(signature: type[dspy.Signature]) -> type[dspy.Signature]:
    return signature.delete(CASE)


class CacheLayoutAdapter(SchemaJSONAdapter):
    """:class:`SchemaJSONAdapter` in the cache layout (module docstring): the preamble and the case first."""

    def format(self, signature: Any, demos: Any, inputs: dict[str, Any]) -> list[dict[str, Any]]:
        """The system message: preamble then the case; a user message with the role's system text; one with its fields.

        The role's text is a message of its own so that Anthropic can cache up to its end too
        (:func:`cache_hint`): a role's requests for a case share it.
        """
        opening = _preamble.get()
        if opening is None or demos or CASE not in signature.input_fields or CASE not in inputs:
            return super().format(signature, demos, inputs)
        head, role = opening
        rest = _without_case(signature)
        messages = super().format(rest, [], {k: v for k, v in inputs.items() if k != CASE})
        own, user = messages[0]["content"], messages[-1]["content"]
        return [
            {"role": "system", "content": f"{head}{CASE_MARKER}{inputs[CASE]}"},
            {"role": "user", "content": f"Your role: {role}\n\n{own}"},
            {"role": "user", "content": user},
        ]


CACHE_ADAPTER = CacheLayoutAdapter()
