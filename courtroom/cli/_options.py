"""Options shared by several commands, and parsing of ``KEY=VALUE`` flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from courtroom.errors import ConfigError

LM = Annotated[str | None, typer.Option("--lm", help="Default model for every role (a dspy.LM string, or 'local').")]
ROLE = Annotated[list[str] | None, typer.Option("--role", help="ROLE=MODEL override; repeatable.")]
TEMPERATURE = Annotated[float | None, typer.Option("--temperature", help="Sampling temperature for all models.")]
MAX_TOKENS = Annotated[int | None, typer.Option("--max-tokens", help="Max tokens per model answer.")]
API_BASE = Annotated[str | None, typer.Option("--api-base", help="Base URL of an OpenAI-compatible server.")]
SET = Annotated[list[str] | None, typer.Option("--set", help="Framework knob KEY=VALUE; repeatable.")]


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
