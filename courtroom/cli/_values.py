"""Parsing and checking option values: ``KEY=VALUE`` flags typed by their defaults, writable paths, providers."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from courtroom.errors import ConfigError


def parse_value(text: str) -> Any:
    """JSON scalars where they parse (3, 0.5, true), strings otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def typed_value(key: str, text: str, default: Any, flag: str = "--set") -> Any:
    """``text`` parsed strictly as the type of ``default``; one line naming the valid values if not.

    A bool takes true or false; an int a whole number (2.5 is refused); a float any number; a
    string any text. A setting whose default is None takes none, true/false, a number or text.
    """
    low = text.strip().lower()
    if isinstance(default, bool):
        if low in ("true", "false"):
            return low == "true"
        raise ConfigError(f"{flag} {key}={text!r}: {key} is true or false")
    if isinstance(default, int):
        try:
            return int(low)
        except ValueError:
            raise ConfigError(f"{flag} {key}={text!r}: {key} is a whole number, e.g. {key}={default}") from None
    if isinstance(default, float):
        try:
            return float(low)
        except ValueError:
            raise ConfigError(f"{flag} {key}={text!r}: {key} is a number, e.g. {key}={default}") from None
    if isinstance(default, str):
        # Optimizer settings such as mipro's auto take none (no budget); framework knobs do not.
        return None if flag == "--opt" and low in ("none", "null") else text.strip()
    if default is None and low in ("none", "null"):
        return None
    return parse_value(text.strip())


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


def writable_folder(path: str | Path, flag: str) -> Path:
    """A folder a command may create and write into: checked before any model is called."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"{flag} {folder} is a file: pass a folder (it is created if missing)")
    _check_writable(folder, flag)
    return folder


def writable_file(path: str | Path, flag: str, example: str) -> Path:
    """A file a command will write at the end: checked before anything is spent."""
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{flag} {target} is a folder: pass a file name, e.g. {flag} {target / example}")
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
    names = [m for m in [*given, *(r.partition("=")[2] for r in roles or [])] if m and m != "local" and "/" in m]
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


def typed_knobs(values: Mapping[str, Any], defaults: Mapping[str, Any], flag: str = "--set") -> dict[str, Any]:
    """Knob (or optimizer setting) values typed by their defaults: texts from flags are parsed strictly.

    A value that already has a type (from Python or a config file) is kept; a text given for a
    setting whose default is not text is parsed as the default's type (one line if it cannot be).
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        default = defaults.get(key.rpartition(".")[2] if key not in defaults else key)
        if isinstance(value, str) and (key in defaults or key.rpartition(".")[2] in defaults):
            out[key] = typed_value(key, value, default, flag)
        elif isinstance(value, str):
            out[key] = parse_value(value)
        else:
            out[key] = value
    return out
