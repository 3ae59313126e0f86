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

from courtroom.cli import _config_file
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


DATA_PANEL = "Data"
MODELS_PANEL = "Models"
FRAMEWORK_PANEL = "Framework"
OUTPUT_PANEL = "Output"
EXECUTION_PANEL = "Execution"
BUDGET_PANEL = "Budget and cost"

CONFIG = Annotated[
    str | None,
    typer.Option(
        "--config",
        metavar="FILE",
        is_eager=True,
        expose_value=False,
        callback=_config_file.load,
        help="Options from a YAML, TOML or JSON file (keys: the flags' names, e.g. limit: 20); flags win.",
    ),
]

TASK = Annotated[str, typer.Option("--task", help="Task name (see `courtroom tasks`).", rich_help_panel=DATA_PANEL)]
DATA = Annotated[
    str,
    typer.Option("--data", help="auto | generate | hub | PATH (json/jsonl/csv/parquet).", rich_help_panel=DATA_PANEL),
]
SPLIT = Annotated[str, typer.Option("--split", help="train | dev | test", rich_help_panel=DATA_PANEL)]
SEED = Annotated[int, typer.Option("--seed", help="Seed for data generation and splits.", rich_help_panel=DATA_PANEL)]
LIMIT = Annotated[
    int | None,
    typer.Option(
        "--limit",
        min=1,
        help="Evaluation examples: the first N of the split.",
        show_default="all",
        rich_help_panel=DATA_PANEL,
    ),
]
_TRAIN_HELP = "Training examples: fit precedents, the reliability assistant, demos (or compile) on at most N."
TRAIN_LIMIT = Annotated[
    int | None,
    typer.Option("--train-limit", min=1, help=_TRAIN_HELP, show_default="all", rich_help_panel=DATA_PANEL),
]
TRAIN_LIMIT_20 = Annotated[int, typer.Option("--train-limit", min=1, help=_TRAIN_HELP, rich_help_panel=DATA_PANEL)]
"""``--train-limit`` where the command has a number as default (compile, study)."""
DEV_LIMIT = Annotated[
    int,
    typer.Option(
        "--dev-limit",
        min=1,
        help="Dev examples: scored before and after compiling, or by each study trial.",
        rich_help_panel=DATA_PANEL,
    ),
]
OLD_TRAIN = Annotated[int | None, typer.Option("--train", min=1, hidden=True, help="Old name of --train-limit.")]
OLD_DEV = Annotated[int | None, typer.Option("--dev", min=1, hidden=True, help="Old name of --dev-limit.")]

LM = Annotated[
    str | None,
    typer.Option(
        "--lm", help="Default model for every role (a dspy.LM string, or 'local').", rich_help_panel=MODELS_PANEL
    ),
]
ROLE = Annotated[
    list[str] | None, typer.Option("--role", help="ROLE=MODEL override; repeatable.", rich_help_panel=MODELS_PANEL)
]
TEMPERATURE = Annotated[
    float | None,
    typer.Option(
        "--temperature",
        min=0.0,
        max=2.0,
        help="Sampling temperature for all models (0-2).",
        show_default="the framework's",
        rich_help_panel=MODELS_PANEL,
    ),
]
MAX_TOKENS = Annotated[
    int | None,
    typer.Option("--max-tokens", min=1, help="Max tokens per model answer.", rich_help_panel=MODELS_PANEL),
]
API_BASE = Annotated[
    str | None,
    typer.Option(
        "--api-base",
        callback=_http_url,
        help="Base URL of an OpenAI-compatible server (http or https).",
        rich_help_panel=MODELS_PANEL,
    ),
]
TIMEOUT = Annotated[
    float | None,
    typer.Option(
        "--timeout",
        help="Seconds one LM request may take before it is retried, then failed.",
        show_default="30; 300 for local",
        rich_help_panel=MODELS_PANEL,
    ),
]
SET = Annotated[
    list[str] | None,
    typer.Option("--set", help="Framework knob KEY=VALUE; repeatable.", rich_help_panel=FRAMEWORK_PANEL),
]
PRESET = Annotated[
    str | None,
    typer.Option(
        "--preset",
        help="A paper's configuration in one word (see `courtroom frameworks`); --set wins.",
        rich_help_panel=FRAMEWORK_PANEL,
    ),
]
LOOPS = Annotated[
    int | None, typer.Option("--loops", min=1, help="JoT rounds (n_loops).", rich_help_panel=FRAMEWORK_PANEL)
]
FAIL_ON_ERROR = Annotated[
    float | None,
    typer.Option(
        "--fail-on-error",
        help="Exit non-zero when more than this fraction of examples failed (1: never).",
        show_default="0.1",
        rich_help_panel=EXECUTION_PANEL,
    ),
]


def pick(ctx: typer.Context, name: str, old: str) -> Any:
    """The value of option ``name``, or of its old spelling ``old`` (a hidden option) when that was given.

    The command line beats a ``--config`` file, which beats the default; both names on the
    command line with different values are refused.
    """
    rank = {"COMMANDLINE": 3, "ENVIRONMENT": 3, "PROMPT": 3, "DEFAULT_MAP": 2}

    def source(param: str) -> int:
        return rank.get(getattr(ctx.get_parameter_source(param), "name", ""), 1)

    new_value, old_value = ctx.params[name], ctx.params[old]
    if old_value is None or source(old) < source(name):
        return new_value
    if source(old) == source(name) and source(name) > 1 and new_value != old_value:
        flag = "--" + name.replace("_", "-")
        raise ConfigError(f"{flag} and --{old} are one option ({flag} is its name now): pass it once")
    return old_value


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
        rich_help_panel=DATA_PANEL,
    ),
]
TEXT_FIELD = Annotated[
    str | None,
    typer.Option("--text-field", help="Field(s) that make the case text, comma-separated.", rich_help_panel=DATA_PANEL),
]
LABEL_FIELD = Annotated[
    str | None, typer.Option("--label-field", help="Field holding the label.", rich_help_panel=DATA_PANEL)
]
LABELS = Annotated[
    str | None,
    typer.Option("--labels", help="Label space, comma-separated (integers index it).", rich_help_panel=DATA_PANEL),
]
DATASET_CONFIG = Annotated[
    str | None, typer.Option("--dataset-config", help="Hub config name of --dataset.", rich_help_panel=DATA_PANEL)
]
HUB_SPLIT = Annotated[
    str, typer.Option("--hub-split", help="Hub split of --dataset to re-split.", rich_help_panel=DATA_PANEL)
]
PRICES = Annotated[
    Path | None,
    typer.Option(
        "--prices",
        help="Price table (JSON or CSV): model -> input, output dollars per 1M tokens.",
        rich_help_panel=BUDGET_PANEL,
    ),
]


def dataset_spec(
    dataset: str | None,
    text_field: str | None,
    label_field: str | None,
    labels: str | None,
    config: str | None,
    hub_split: str,
) -> dict[str, Any] | None:
    """``--dataset`` options as :func:`courtroom.data.tasks.custom_task` arguments (None without one)."""
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
    typer.Option(
        "--dry-run",
        help="Print the LM calls, tokens and dollars this would spend; send nothing.",
        rich_help_panel=BUDGET_PANEL,
    ),
]
MAX_COST = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        metavar="DOLLARS",
        help="Start no new example (or trial) that could take spending past DOLLARS.",
        rich_help_panel=BUDGET_PANEL,
    ),
]
MAX_CALLS = Annotated[
    int | None,
    typer.Option(
        "--max-calls",
        metavar="N",
        help="Start no new example (or trial) that could take LM requests past N.",
        rich_help_panel=BUDGET_PANEL,
    ),
]
DEBIAS = Annotated[
    str | None,
    typer.Option(
        "--debias",
        help="swap: run each case again with the sides exchanged and report position consistency; "
        "swap-vote: also make the verdict the two orders' agreement (jot, courtroom-llm, khan-debate).",
        rich_help_panel=FRAMEWORK_PANEL,
    ),
]
