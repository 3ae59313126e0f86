"""Parsing and checking option values: ``KEY=VALUE`` flags typed by their defaults, writable paths, providers."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom._files import check_output, folder_kind, resolved
from courtroom.errors import ConfigError
from courtroom.spec._values import parse_value, typed_knobs, typed_value

__all__ = ["check_output", "parse_value", "typed_knobs", "typed_value"]


def parse_sets(
    items: list[str] | None, defaults: Mapping[str, Any] | None = None, flag: str = "--set"
) -> dict[str, Any]:
    """``KEY=VALUE`` strings to a dict; a key in ``defaults`` is parsed as its default's type.

    Keys outside ``defaults`` keep the loose JSON-scalar parse; whoever uses them refuses unknown ones.
    """
    example = {"--set": "--set n_judges=5", "--opt": "--opt max_bootstrapped_demos=2"}.get(flag, f"{flag} k=v")
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(f"malformed {flag} {item!r}: write KEY=VALUE, e.g. {example}")
        if defaults is not None and key in defaults:
            out[key] = typed_value(key, value, defaults[key], flag)
        else:
            out[key] = parse_value(value.strip())
    return out


def inputs_of(spec: Any, *more: str | Path | None) -> list[str]:
    """The files a command reads: ``more``, the ``--config`` file, and ``spec``'s data, prices and storage."""
    import click

    from courtroom.cli._config_file import CONFIG_KEY
    from courtroom.optimize._storage import storage_file

    found: list[Any] = list(more)
    if spec is not None:
        d = spec.data
        found += [d.dataset, d.train_data, d.dev_data, d.test_data]
        if isinstance(spec.budget.prices, str | Path):
            found.append(spec.budget.prices)
        if spec.command == "study":
            found.append(storage_file(spec.study.storage))
    ctx = click.get_current_context(silent=True)
    while ctx is not None:
        found.append(ctx.meta.get(CONFIG_KEY))
        ctx = ctx.parent
    return [str(f) for f in found if f]


def writable_folder(path: str | Path, flag: str) -> Path:
    """A folder a command may create and write into: checked before any model is called."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{flag} {folder} is a file: pass a folder (it is created if missing)")
    kind = folder_kind(resolved(folder, flag))
    if kind in ("run", "comparison", "repeat group"):
        raise ConfigError(f"{flag} {folder} is a {kind} folder: pass a folder of your own (it is created if missing)")
    _check_writable(folder, flag)
    return folder


def writable_file(path: str | Path, flag: str, example: str, inputs: Sequence[str | Path | None] = ()) -> Path:
    """A file a command will write at the end: checked before anything is spent (:func:`check_output`)."""
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{flag} {target} is a folder: pass a file name, e.g. {flag} {target / example}")
    if target.exists() and not target.is_file():  # /dev/full, a FIFO: known before the work, not after it
        raise ConfigError(
            f"{flag} {target} is not a regular file (a device or a FIFO): pass a file name, e.g. {example}"
        )
    check_output(target, flag, inputs)
    _check_writable(target.parent, flag)
    return target


def _check_writable(folder: Path, flag: str) -> None:
    existing = folder
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir() or not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"{flag}: cannot write in {existing}; pass a path in a folder you can write")


def check_providers(lm: str | list[str] | None, roles: list[str] | None = None) -> None:
    """Refuse, before any example runs, a model whose provider LiteLLM does not know."""
    given = [lm] if isinstance(lm, str) or lm is None else list(lm)
    if not given or given == [None]:
        given = [os.environ.get("COURTROOM_LM")]
    from courtroom.models._litellm_facts import is_known_provider

    # A panel (a,b) is checked member by member; providers surely known need no LiteLLM import.
    members = [n.strip() for m in [*given, *(r.partition("=")[2] for r in roles or [])] for n in (m or "").split(",")]
    names = [n for n in members if n and n != "local" and "/" in n and not is_known_provider(n)]
    if not names:
        return
    import litellm

    quiet, litellm.suppress_debug_info = litellm.suppress_debug_info, True  # it prints a banner on failure
    try:
        for name in names:
            try:
                litellm.get_llm_provider(name)
            except Exception:  # noqa: BLE001 - LiteLLM raises BadRequestError (and others) for unknown ones
                raise ConfigError(
                    f"unknown provider {name.split('/')[0]!r} in model {name!r}: start the name with a LiteLLM "
                    "provider, e.g. openai/, anthropic/, ollama_chat/, hosted_vllm/ "
                    "(https://docs.litellm.ai/docs/providers)"
                ) from None
    finally:
        litellm.suppress_debug_info = quiet
