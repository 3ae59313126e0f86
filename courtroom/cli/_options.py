"""Options shared by several commands, and parsing of ``KEY=VALUE`` flags."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer

from courtroom.errors import ConfigError

LM = Annotated[str | None, typer.Option("--lm", help="Default model for every role (a dspy.LM string, or 'local').")]
ROLE = Annotated[list[str] | None, typer.Option("--role", help="ROLE=MODEL override; repeatable.")]
TEMPERATURE = Annotated[float | None, typer.Option("--temperature", help="Sampling temperature for all models.")]
MAX_TOKENS = Annotated[int | None, typer.Option("--max-tokens", help="Max tokens per model answer.")]
API_BASE = Annotated[str | None, typer.Option("--api-base", help="Base URL of an OpenAI-compatible server.")]
SET = Annotated[list[str] | None, typer.Option("--set", help="Framework knob KEY=VALUE; repeatable.")]
PRESET = Annotated[
    str | None,
    typer.Option("--preset", help="A paper's configuration in one word (see `courtroom frameworks`); --set wins."),
]


def parse_value(text: str) -> Any:
    """JSON scalars where they parse (3, 0.5, true), strings otherwise."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_sets(items: list[str] | None) -> dict[str, Any]:
    """``KEY=VALUE`` strings to a dict."""
    out: dict[str, Any] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"malformed --set {item!r}: write KEY=VALUE, e.g. --set n_judges=5")
        out[key.strip()] = parse_value(value.strip())
    return out
