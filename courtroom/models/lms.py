"""Models per role: parse model settings, build LMs, and pick a role's model for each call.

DSPy optimizers reset ``predictor.lm`` (see the design notes), so LMs never live on predictors.
A program holds a :class:`RoleLMs` map, which optimizer deep-copies share and ``save()`` skips,
and every role call runs inside :func:`use_role`, which selects the model with ``dspy.context``.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import dspy  # noqa: E402

from courtroom import _stop  # noqa: E402
from courtroom.errors import ConfigError  # noqa: E402
from courtroom.models._adapter import ADAPTER  # noqa: E402
from courtroom.models._concurrency import limit_requests  # noqa: E402
from courtroom.models._requests import DEFAULT_RETRIES  # noqa: E402
from courtroom.models._warmup import warm_up  # noqa: E402
from courtroom.models.panels import Panel, members, split_models  # noqa: E402

LOCAL = "local"
DEFAULT = "default"
DEFAULT_TIMEOUT = 30.0
"""Seconds one request may take before it is retried, then failed (``--timeout``; LiteLLM's own is 600)."""


def _outside_cache_key() -> None:
    # A timeout does not change answers: a resume with another --timeout must reuse cached calls.
    # Nor does a provider's prompt-cache hint (OpenAI's prompt_cache_key, Anthropic's breakpoint):
    # a run with the hint and one without share their answers.
    from dspy.clients import execution

    ignored = getattr(execution, "IGNORED_CACHE_KEYS", None)
    for key in ("timeout", "prompt_cache"):
        if isinstance(ignored, list) and key not in ignored:
            ignored.append(key)


_outside_cache_key()

_current_role: contextvars.ContextVar[str | None] = contextvars.ContextVar("courtroom_role", default=None)


@dataclass(frozen=True)
class LMSpec:
    """A model named as ``dspy.LM`` takes it, plus generation options. Keys come from the environment."""

    model: str = LOCAL
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None
    timeout: float | None = None
    """Seconds per request (default :data:`DEFAULT_TIMEOUT`; longer for ``local``)."""
    n_sampling: bool | None = None
    """``--n-sampling``: the built model's ``n_sampling`` (:func:`courtroom.models.sampling.enabled`)."""
    prompt_layout: str | None = None
    """``--prompt-layout``: the built model's ``prompt_layout`` (:func:`courtroom.models._layout.layout_for`)."""

    def describe(self) -> str:
        """The model name only: never a key or a base URL."""
        return self.model


class OpenAICompatibleLM(dspy.LM):
    """An LM behind a user-given ``api_base`` (vLLM, Ollama, LM Studio, Anthropic's API, ...): JSON-schema outputs.

    Built by :func:`compatible_lm`. ``api_base`` names the server for the checks that run before
    the first call (the native engine, not the LM's ``kwargs``, holds the URL and the key).
    """

    schema_style = "json_schema"
    api_base: str | None = None


OPENAI_WIRE = ("openai/", "hosted_vllm/")
"""Model prefixes that speak OpenAI's chat wire to an ``api_base``: served by DSPy's native engine."""

ANTHROPIC = "anthropic/"
"""The model prefix of Anthropic's Messages API: with an ``api_base``, served by DSPy's native Anthropic route."""


def compatible_lm(model: str, api_base: str, *, timeout: float = DEFAULT_TIMEOUT, **kwargs: Any) -> OpenAICompatibleLM:
    """``model`` served by the server at ``api_base``.

    An OpenAI-wire name (:data:`OPENAI_WIRE`) goes through DSPy's native engine toward the server
    (:mod:`courtroom.models._server_engine`), which sends ``max_tokens`` (which such servers
    honour) without importing LiteLLM. An ``anthropic/`` name goes through DSPy's native
    Anthropic route toward ``api_base`` with ``$ANTHROPIC_API_KEY``
    (:mod:`courtroom.models._anthropic_engine`, which also serves batch mode). Other providers'
    names (``ollama_chat/`` speaks Ollama's own API) go through LiteLLM, which also sends
    ``max_tokens``; so do live requests of an OpenAI-wire name at a URL carrying credentials
    (``user:password@`` or a query token, for a proxy: DSPy's native client takes neither),
    whose batch mode goes to that URL's batch API (:mod:`courtroom.models._proxy_engine`). The key
    is ``$OPENAI_API_KEY`` for ``openai/`` names when set (a proxy in front of OpenAI), else a
    placeholder local servers accept. ``timeout`` bounds each attempt's wait, in seconds.
    """
    from urllib.parse import urlsplit

    from courtroom.models._server_engine import server_engines

    url = urlsplit(api_base)
    key = os.environ.get("OPENAI_API_KEY") if model.startswith("openai/") else None
    plain = not (url.username or url.password or url.query)
    if model.startswith(OPENAI_WIRE) and plain:
        lm = OpenAICompatibleLM(model, **server_engines(api_base, key or "sk-no-key", timeout), **kwargs)
    elif model.startswith(OPENAI_WIRE):  # a proxy: live through LiteLLM, batches through its batch API
        from courtroom.models._proxy_engine import proxy_engines

        lm = OpenAICompatibleLM(model, **proxy_engines(api_base, key or "sk-no-key", timeout), **kwargs)
    elif model.startswith(ANTHROPIC) and plain:
        from courtroom.models._anthropic_engine import anthropic_engines

        key = os.environ.get("ANTHROPIC_API_KEY") or "sk-no-key"
        lm = OpenAICompatibleLM(model, **anthropic_engines(api_base, key, timeout), **kwargs)
    else:
        if model.startswith("openai/") and not key:
            kwargs["api_key"] = "sk-no-key"  # local servers need none; LiteLLM insists on one
        lm = OpenAICompatibleLM(model, api_base=api_base, engine="litellm", timeout=timeout, **kwargs)
    lm.api_base = api_base
    return lm


class RoleLMs(dict):
    """Role name -> ``dspy.LM``, with a ``"default"`` entry used by roles without their own.

    ``__deepcopy__`` returns ``self`` so that optimizer copies of a program share the map and
    DSPy's ``save()`` never serialises it. A role naming several models holds a
    :class:`~courtroom.models.panels.Panel`; ``for_role(role, call)`` picks member ``call mod n``.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> RoleLMs:
        return self

    def serving(self, role: str) -> Any:
        """What serves ``role``: one LM or a :class:`~courtroom.models.panels.Panel`."""
        lm = self.get(role, self.get(DEFAULT))
        if lm is None:
            raise ConfigError(f"no model for role {role!r}: pass lm=... or roles={{{role!r}: ...}}")
        return lm

    def for_role(self, role: str, call: int | None = None) -> Any:
        """The LM that serves call ``call`` of ``role`` (a panel rotates; one LM serves every call)."""
        lm = self.serving(role)
        return lm.pick(call) if isinstance(lm, Panel) else lm

    def models(self) -> list[Any]:
        """Every distinct LM in the map, panels unpacked."""
        return list({id(m): m for v in self.values() for m in members(v)}.values())

    def names(self, roles: Iterable[str]) -> dict[str, str | list[str]]:
        """Role -> model name, or names for a panel (no keys, no base URLs), for run metadata."""
        return {role: model_name(self.serving(role)) for role in roles}


def model_name(lm: Any) -> Any:
    """The model string of an LM object (a list of them for a panel)."""
    if isinstance(lm, Panel):
        return [model_name(m) for m in lm]
    return str(getattr(lm, "model", type(lm).__name__))


def saved_name(lm: Any) -> Any:
    """The name a saved program records for a model: its ``saved_name`` (``local``), else its model string."""
    if isinstance(lm, Panel):
        return [saved_name(m) for m in lm]
    return str(getattr(lm, "saved_name", None) or model_name(lm))


def build_lm(spec: LMSpec | str) -> Any:
    """Build a ``dspy.LM`` from a spec; ``"local"`` asks :mod:`courtroom.models.local` for the embedded model."""
    if isinstance(spec, str):
        spec = LMSpec(model=spec)
    if spec.timeout is not None and not spec.timeout > 0:
        raise ConfigError(f"--timeout must be a number of seconds > 0, got {spec.timeout}")
    lm = _built(spec)
    # How its requests go (one request for k samples; the prompt layout) travels with the model,
    # into every thread and optimizer copy that calls it.
    if spec.n_sampling is not None:
        lm.n_sampling = spec.n_sampling
    if spec.prompt_layout is not None:
        lm.prompt_layout = spec.prompt_layout
    return lm


def _built(spec: LMSpec) -> Any:
    if spec.model == LOCAL:
        from courtroom.models.local import local_lm

        return limit_requests(local_lm(temperature=spec.temperature, max_tokens=spec.max_tokens, timeout=spec.timeout))
    provider, _, name = spec.model.partition("/")
    if "/" in spec.model and not (provider.strip() and name.strip()):
        raise ConfigError(
            f"cannot resolve model {spec.model!r}: give the provider and the model, e.g. 'openai/gpt-4o-mini'"
        )
    if "/" not in spec.model:
        raise ConfigError(
            f"cannot resolve model {spec.model!r}: use a LiteLLM name such as 'openai/gpt-4o-mini' "
            "or 'ollama_chat/llama3.1', or 'local' for the embedded model"
        )
    # Courtroom retries (limit_requests moves num_retries to its own loop), so each attempt is counted.
    kwargs: dict[str, Any] = {"num_retries": DEFAULT_RETRIES, "timeout": spec.timeout or DEFAULT_TIMEOUT}
    if spec.temperature is not None:
        kwargs["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        kwargs["max_tokens"] = spec.max_tokens
    if spec.api_base:
        return limit_requests(compatible_lm(spec.model, spec.api_base, **kwargs))
    return limit_requests(dspy.LM(spec.model, **kwargs))


def missing_keys(models: Iterable[Any]) -> str | None:
    """One line naming the environment variables the models' providers need and lack (None: all set).

    Models served from an ``--api-base`` (a local server) and models given a key are skipped, as
    are names LiteLLM does not know (fakes, the embedded model).
    """
    needed: dict[str, list[str]] = {}
    for lm in models:
        kwargs = getattr(lm, "kwargs", None) or {}
        name = getattr(lm, "model", None)
        served = getattr(lm, "api_base", None) or kwargs.get("api_base")
        if not isinstance(name, str) or "/" not in name or served or kwargs.get("api_key"):
            continue
        import litellm

        litellm.suppress_debug_info = True  # it prints a banner for names it does not know
        try:
            found = litellm.validate_environment(model=name)
        except Exception:  # noqa: BLE001 - an unknown provider is found when the model is called
            continue
        for key in found.get("missing_keys") or []:
            if "KEY" in key or "TOKEN" in key:  # OLLAMA_API_BASE has a default: localhost
                needed.setdefault(key, []).append(name)
    if not needed:
        return None
    keys = ", ".join(sorted(needed))
    names = ", ".join(sorted({m for ms in needed.values() for m in ms}))
    return f"{names} needs {keys} in the environment: export it (keys are never read from files or flags)"


def check_keys(lms: RoleLMs) -> None:
    """Refuse, before the first example, models whose provider key is missing (:func:`missing_keys`)."""
    line = missing_keys(lms.models())
    if line:
        raise ConfigError(line)


def parse_role_overrides(items: Iterable[str], valid_roles: Iterable[str]) -> dict[str, str]:
    """Parse ``ROLE=MODEL`` strings (the CLI's repeated ``--role``)."""
    valid = sorted(set(valid_roles))
    out: dict[str, str] = {}
    for item in items:
        role, sep, model = item.partition("=")
        role, model = role.strip(), model.strip()
        if not sep or not role or not model:
            raise ConfigError(f"malformed --role {item!r}: write ROLE=MODEL, e.g. judge=openai/gpt-4o")
        if role not in valid:
            raise ConfigError(f"unknown role {role!r} in --role: valid roles are {', '.join(valid)}")
        out[role] = model
    return out


def resolve_roles(
    lm: Any = None,
    roles: Mapping[str, Any] | None = None,
    *,
    valid_roles: Iterable[str] | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    n_sampling: bool | None = None,
    prompt_layout: str | None = None,
) -> RoleLMs:
    """Build the role map from a default model and per-role overrides.

    Each value may be a model string, an :class:`LMSpec` or a ready LM object, or several of
    them (a list, or a comma-separated string) for a mixed panel. With no default, the embedded
    local model is used. Identical specs share one LM object. Building the map also warms up the
    LM call path in this thread (see :mod:`courtroom.models._warmup`), so the calls that fan out from
    here never import anything.
    """
    if valid_roles is not None and roles:
        parse_role_overrides([f"{r}=x" for r in roles], valid_roles)
    built: dict[LMSpec, Any] = {}

    def make(value: Any) -> Any:
        if value is None:
            value = os.environ.get("COURTROOM_LM", LOCAL)
        if isinstance(value, str) and "," in value:
            value = split_models(value)
        if isinstance(value, list | tuple):
            if not value:
                raise ConfigError("an empty model list: a panel names at least one model")
            return make(value[0]) if len(value) == 1 else Panel(make(v) for v in value)
        if isinstance(value, str):
            value = LMSpec(value)
        if isinstance(value, LMSpec):
            value = replace(
                value,
                temperature=value.temperature if value.temperature is not None else temperature,
                max_tokens=value.max_tokens if value.max_tokens is not None else max_tokens,
                api_base=value.api_base or (api_base if value.model != LOCAL else None),
                timeout=value.timeout if value.timeout is not None else timeout,
                n_sampling=value.n_sampling if value.n_sampling is not None else n_sampling,
                prompt_layout=value.prompt_layout or prompt_layout,
            )
            if value not in built:
                # Ctrl-C stops new calls on every model the commands build (courtroom._stop).
                built[value] = _stop.guard(build_lm(value))
            return built[value]
        return limit_requests(value)

    mapping = RoleLMs({DEFAULT: make(lm)})
    for role, value in (roles or {}).items():
        mapping[role] = make(value)
    warm_up(mapping.models())
    return mapping


@contextlib.contextmanager
def use_role(lms: RoleLMs, role: str, call: int | None = None) -> Iterator[None]:
    """Run the enclosed calls on ``role``'s model (member ``call`` of a panel), through the schema adapter.

    The adapter lays the prompt out as ``--prompt-layout`` chooses for that model
    (:mod:`courtroom.models._layout`).
    """
    from courtroom.models._layout import CACHE_ADAPTER, chosen

    lm = lms.for_role(role, call)
    warm_up([lm])  # a set check once done; serialises the first imports for maps built by hand
    token = _current_role.set(role)
    # --prompt-layout: the cache layout's adapter lays a prompt out as DSPy does unless the program
    # opened a preamble for the call (courtroom.models._layout), so auto decides per call.
    adapter = ADAPTER if chosen(getattr(lm, "prompt_layout", None)) == "classic" else CACHE_ADAPTER
    try:
        with dspy.context(lm=limit_requests(lm), adapter=adapter):
            yield
    finally:
        _current_role.reset(token)


def current_role() -> str | None:
    """The role whose call is running in this context (fakes answer by it)."""
    return _current_role.get()
