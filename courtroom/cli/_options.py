"""Options shared by several commands, and parsing of ``KEY=VALUE`` flags."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlsplit

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from courtroom.errors import ConfigError


def _http_url(value: str | None) -> str | None:
    """``--api-base`` must be an http(s) URL with a host (checked before anything runs)."""
    if value is None:
        return None
    url = urlsplit(value)
    if url.scheme not in ("http", "https") or not url.hostname:
        got = "no host" if url.scheme in ("http", "https") else f"scheme {url.scheme!r}" if url.scheme else "no scheme"
        raise typer.BadParameter(f"use an http:// or https:// URL with a host, e.g. http://localhost:8000/v1 ({got})")
    return value


LM = Annotated[str | None, typer.Option("--lm", help="Default model for every role (a dspy.LM string, or 'local').")]
ROLE = Annotated[list[str] | None, typer.Option("--role", help="ROLE=MODEL override; repeatable.")]
TEMPERATURE = Annotated[
    float | None, typer.Option("--temperature", min=0.0, max=2.0, help="Sampling temperature for all models (0-2).")
]
MAX_TOKENS = Annotated[int | None, typer.Option("--max-tokens", min=1, help="Max tokens per model answer.")]
API_BASE = Annotated[
    str | None,
    typer.Option("--api-base", callback=_http_url, help="Base URL of an OpenAI-compatible server (http or https)."),
]
TIMEOUT = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Seconds one LM request may take before it is retried, then failed (default 30; 300 for local).",
    ),
]
SET = Annotated[list[str] | None, typer.Option("--set", help="Framework knob KEY=VALUE; repeatable.")]
FAIL_ON_ERROR = Annotated[
    float | None,
    typer.Option(
        "--fail-on-error",
        help="Exit non-zero when more than this fraction of examples failed (default 0.1; 1: never).",
    ),
]
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


DATASET = Annotated[
    str | None,
    typer.Option(
        "--dataset",
        help="Any Hub id or local file instead of --task; needs --text-field, --label-field, --labels.",
    ),
]
TEXT_FIELD = Annotated[
    str | None, typer.Option("--text-field", help="Field(s) that make the case text, comma-separated.")
]
LABEL_FIELD = Annotated[str | None, typer.Option("--label-field", help="Field holding the label.")]
LABELS = Annotated[str | None, typer.Option("--labels", help="Label space, comma-separated (integers index it).")]
DATASET_CONFIG = Annotated[str | None, typer.Option("--dataset-config", help="Hub config name of --dataset.")]
HUB_SPLIT = Annotated[str, typer.Option("--hub-split", help="Hub split of --dataset to re-split.")]
TRAIN_LIMIT = Annotated[
    int | None,
    typer.Option(
        "--train-limit",
        min=1,
        help="Fit precedents / the reliability assistant / demos on at most N training cases.",
    ),
]
PRICES = Annotated[
    Path | None,
    typer.Option("--prices", help="Price table (JSON or CSV): model -> input, output dollars per 1M tokens."),
]


def dataset_spec(
    dataset: str | None,
    text_field: str | None,
    label_field: str | None,
    labels: str | None,
    config: str | None,
    hub_split: str,
) -> dict[str, Any] | None:
    """``--dataset`` options as :func:`courtroom.eval.tasks.custom_task` arguments (None without one)."""
    if dataset is None:
        if text_field or label_field or labels:
            raise ConfigError("--text-field, --label-field and --labels go with --dataset ID_OR_PATH")
        return None
    missing = [
        flag
        for flag, v in (("--text-field", text_field), ("--label-field", label_field), ("--labels", labels))
        if not v
    ]
    if missing:
        raise ConfigError(
            f"--dataset needs {', '.join(missing)}: e.g. --text-field question,passage "
            "--label-field answer --labels yes,no"
        )
    return {
        "dataset": dataset,
        "text_fields": str(text_field).split(","),
        "label_field": str(label_field),
        "labels": str(labels).split(","),
        "config": config,
        "hub_split": hub_split,
    }


def progress_bar(console: Console) -> Progress:
    """The transient progress display the long commands draw on stderr."""
    return Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


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
DRY_RUN = Annotated[
    bool,
    typer.Option("--dry-run", help="Print the LM calls, tokens and dollars this would spend; send nothing."),
]
MAX_COST = Annotated[
    float | None,
    typer.Option("--max-cost", help="Start no new example (or trial) that could take spending past DOLLARS."),
]
MAX_CALLS = Annotated[
    int | None,
    typer.Option("--max-calls", help="Start no new example (or trial) that could take LM requests past N."),
]
DEBIAS = Annotated[
    str | None,
    typer.Option(
        "--debias",
        help="swap: run each case again with the sides exchanged and report position consistency; "
        "swap-vote: also make the verdict the two orders' agreement (jot, courtroom-llm, khan-debate).",
    ),
]
