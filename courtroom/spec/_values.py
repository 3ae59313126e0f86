"""Setting values given as text (``--set KEY=VALUE``, ``--opt KEY=VALUE``), parsed and typed.

:func:`parse_value` reads JSON scalars; :func:`typed_value` and :func:`typed_knobs` type a text
strictly by the setting's default. Also importable from :mod:`courtroom.spec`.
This module imports nothing heavy: it is read by ``courtroom --help`` and by every bad-input error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
