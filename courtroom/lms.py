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
from courtroom._adapter import ADAPTER  # noqa: E402
from courtroom.errors import ConfigError  # noqa: E402

LOCAL = "local"
DEFAULT = "default"

_current_role: contextvars.ContextVar[str | None] = contextvars.ContextVar("courtroom_role", default=None)


@dataclass(frozen=True)
class LMSpec:
    """A model named as ``dspy.LM`` takes it, plus generation options. Keys come from the environment."""

    model: str = LOCAL
    temperature: float | None = None
    max_tokens: int | None = None
    api_base: str | None = None

    def describe(self) -> str:
        """The model name only: never a key or a base URL."""
        return self.model


class OpenAICompatibleLM(dspy.LM):
    """An LM behind a user-given ``api_base`` (vLLM, Ollama, LM Studio, ...): OpenAI structured outputs."""

    schema_style = "json_schema"


class RoleLMs(dict):
    """Role name -> ``dspy.LM``, with a ``"default"`` entry used by roles without their own.

    ``__deepcopy__`` returns ``self`` so that optimizer copies of a program share the map and
    DSPy's ``save()`` never serialises it.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> RoleLMs:
        return self

    def for_role(self, role: str) -> Any:
        """The LM that serves ``role``."""
        lm = self.get(role, self.get(DEFAULT))
        if lm is None:
            raise ConfigError(f"no model for role {role!r}: pass lm=... or roles={{{role!r}: ...}}")
        return lm

    def names(self, roles: Iterable[str]) -> dict[str, str]:
        """Role -> model name (no keys, no base URLs), for run metadata and saved programs."""
        return {role: model_name(self.for_role(role)) for role in roles}


def model_name(lm: Any) -> str:
    """The model string of an LM object."""
    return str(getattr(lm, "model", type(lm).__name__))


def saved_name(lm: Any) -> str:
    """The name a saved program records for a model: its ``saved_name`` (``local``), else its model string."""
    return str(getattr(lm, "saved_name", None) or model_name(lm))


def build_lm(spec: LMSpec | str) -> Any:
    """Build a ``dspy.LM`` from a spec; ``"local"`` asks :mod:`courtroom.local` for the embedded model."""
    if isinstance(spec, str):
        spec = LMSpec(model=spec)
    if spec.model == LOCAL:
        from courtroom.local import local_lm

        return local_lm(temperature=spec.temperature, max_tokens=spec.max_tokens)
    if "/" not in spec.model:
        raise ConfigError(
            f"cannot resolve model {spec.model!r}: use a LiteLLM name such as 'openai/gpt-4o-mini' "
            "or 'ollama_chat/llama3.1', or 'local' for the embedded model"
        )
    kwargs: dict[str, Any] = {"num_retries": 3}
    if spec.temperature is not None:
        kwargs["temperature"] = spec.temperature
    if spec.max_tokens is not None:
        kwargs["max_tokens"] = spec.max_tokens
    if spec.api_base:
        # LiteLLM sends max_tokens, which OpenAI-compatible local servers honour.
        kwargs.update(api_base=spec.api_base, engine="litellm")
        if spec.model.startswith("openai/") and not os.environ.get("OPENAI_API_KEY"):
            kwargs["api_key"] = "sk-no-key"  # local servers need none; LiteLLM insists on one
        return OpenAICompatibleLM(spec.model, **kwargs)
    return dspy.LM(spec.model, **kwargs)


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
) -> RoleLMs:
    """Build the role map from a default model and per-role overrides.

    Each value may be a model string, an :class:`LMSpec` or a ready LM object. With no default,
    the embedded local model is used. Identical specs share one LM object.
    """
    if valid_roles is not None and roles:
        parse_role_overrides([f"{r}=x" for r in roles], valid_roles)
    built: dict[LMSpec, Any] = {}

    def make(value: Any) -> Any:
        if value is None:
            value = os.environ.get("COURTROOM_LM", LOCAL)
        if isinstance(value, str):
            value = LMSpec(value)
        if isinstance(value, LMSpec):
            value = replace(
                value,
                temperature=value.temperature if value.temperature is not None else temperature,
                max_tokens=value.max_tokens if value.max_tokens is not None else max_tokens,
                api_base=value.api_base or (api_base if value.model != LOCAL else None),
            )
            if value not in built:
                # Ctrl-C stops new calls on every model the commands build (courtroom._stop).
                built[value] = _stop.guard(build_lm(value))
            return built[value]
        return value

    mapping = RoleLMs({DEFAULT: make(lm)})
    for role, value in (roles or {}).items():
        mapping[role] = make(value)
    return mapping


@contextlib.contextmanager
def use_role(lms: RoleLMs, role: str) -> Iterator[None]:
    """Run the enclosed calls on ``role``'s model, through the schema adapter."""
    token = _current_role.set(role)
    try:
        with dspy.context(lm=lms.for_role(role), adapter=ADAPTER):
            yield
    finally:
        _current_role.reset(token)


def current_role() -> str | None:
    """The role whose call is running in this context (fakes answer by it)."""
    return _current_role.get()
