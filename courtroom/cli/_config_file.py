"""``--config FILE``: a command's options from a YAML, TOML or JSON file; flags on the command line win.

The file's keys are the flags' long names, without the dashes, spelled with ``-`` or ``_``
(``train-limit`` or ``train_limit``); an argument is named as in the help (``framework``). The
values become the command's defaults through click's ``ctx.default_map``, so a flag given on the
command line overrides them and the help's ``[default: ...]`` stays that of the command.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

SUFFIXES = (".yaml", ".yml", ".toml", ".json")


def read_file(path: str | Path) -> dict[str, Any]:
    """The mapping in an options file, parsed by its extension (one line if it cannot be read)."""
    path = Path(path)
    if path.suffix.lower() not in SUFFIXES:
        raise typer.BadParameter(f"{path}: use a .yaml, .yml, .toml or .json file")
    if path.exists() and not path.is_file():  # a FIFO would block the command for good
        raise typer.BadParameter(f"{path} is not a regular file (a folder, a FIFO or a device): pass a file")
    try:
        text = path.read_bytes().decode("utf-8")
    except OSError as exc:
        raise typer.BadParameter(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise typer.BadParameter(f"cannot read {path}: not a text file (UTF-8 YAML, TOML or JSON)") from None
    try:
        if path.suffix.lower() == ".toml":
            import tomllib

            data: Any = tomllib.loads(text)
        elif path.suffix.lower() == ".json":
            data = json.loads(text)
        else:
            data = _yaml(text)
    except Exception as exc:  # noqa: BLE001 - yaml, toml and json each raise their own error
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise typer.BadParameter(f"cannot parse {path}: {first}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise typer.BadParameter(f"{path}: write one KEY: VALUE per option (a mapping), e.g. limit: 20")
    return dict(data)


def _names(command: Any) -> tuple[dict[str, tuple[Any, bool]], list[str]]:
    """Key -> (parameter, negated), and the keys shown when one is unknown (hidden aliases left out)."""
    keys: dict[str, tuple[Any, bool]] = {}
    shown: list[str] = []
    for param in command.params:
        if param.name in ("config", "help"):
            continue
        if param.param_type_name == "argument":
            keys[param.name] = (param, False)
            shown.append(param.name)
            continue
        for negated, opts in ((False, param.opts), (True, param.secondary_opts)):
            for opt in opts:
                if not opt.startswith("--"):
                    continue
                key = opt[2:]
                keys[key] = keys[key.replace("-", "_")] = (param, negated)
                if not getattr(param, "hidden", False):
                    shown.append(key)
    return keys, shown


def _value(param: Any, value: Any, negated: bool) -> Any:
    """A file value as the parameter takes it (lists for repeatable options, ``KEY=VALUE`` from maps)."""
    if negated and isinstance(value, bool):
        return not value
    if getattr(param, "multiple", False):
        if isinstance(value, Mapping):
            return [f"{k}={_text(v)}" for k, v in value.items()]
        return [_text(v) for v in (value if isinstance(value, list | tuple) else [value])]
    if isinstance(value, list | tuple):
        return ",".join(_text(v) for v in value)  # --frameworks, --labels, ... are comma-separated
    if isinstance(value, bool) and getattr(param, "is_flag", False):
        return value
    return value if isinstance(value, str) or value is None else _text(value)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def default_map(command: Any, path: str | Path, data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (an options file) as a click ``default_map`` for ``command``; unknown keys fail in one line."""
    keys, shown = _names(command)
    unknown = [str(k) for k in data if str(k) not in keys]
    foreign = _foreign(path, data, command.name)
    if unknown and foreign:
        raise typer.BadParameter(foreign)
    if unknown:
        raise typer.BadParameter(
            f"{path}: unknown key{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; valid keys: {', '.join(shown)}"
        )
    out: dict[str, Any] = {}
    for key, value in data.items():
        param, negated = keys[str(key)]
        if param.name in out:
            raise typer.BadParameter(f"{path}: {key} is given twice (as {param.name} under another spelling)")
        out[param.name] = _value(param, value, negated)
    return out


def _foreign(path: str | Path, data: Mapping[str, Any], command: str | None) -> str:
    """What a file courtroom wrote for another purpose is, and what to pass instead (or nothing)."""
    if {"study", "trials", "best"} <= set(data):
        if command == "compile":
            return (f"{path} is a study's report file, not a recipe: export the study's chosen configuration with "
                    "--export-best best.json (the study's command again, with its --storage and --study-name, "
                    "continues it), then courtroom compile --config best.json")  # fmt: skip
        return f"{path} is a study's report file, not an options file: pass a YAML, TOML or JSON file of options"
    if isinstance(data.get("courtroom"), Mapping) or data.get("format") == "courtroom-program":
        return f"{path} is a compiled program, not an options file: use it with courtroom predict or courtroom score"
    return ""


CONFIG_KEY = "courtroom_config_file"
"""Where the ``--config`` file's path is kept in the click context (an input no output may overwrite)."""


def apply(ctx: typer.Context, path: str | Path, data: Mapping[str, Any] | None = None) -> None:
    """Make the options in ``path`` the defaults of the command being parsed."""
    ctx.meta[CONFIG_KEY] = str(path)
    values = default_map(ctx.command, path, read_file(path) if data is None else data)
    ctx.default_map = {**(ctx.default_map or {}), **values}


def load(ctx: typer.Context, param: Any, value: str | None) -> None:
    """The ``--config`` callback (eager, so it runs before the options it sets)."""
    if value is not None and not ctx.resilient_parsing:
        apply(ctx, value)


def recipe_or_load(ctx: typer.Context, param: Any, value: str | None) -> str | None:
    """``compile --config``: a recipe from ``study --export-best`` is kept; any other file sets options."""
    if value is None or ctx.resilient_parsing:
        return value
    if Path(value).suffix.lower() == ".json":
        data = read_file(value)
        if data.get("kind") == "courtroom-config":
            return value
        apply(ctx, value, data)
        return None
    apply(ctx, value)
    return None


def _yaml(text: str) -> Any:
    """YAML with YAML 1.2's booleans only (``true``/``false``): ``labels: [Yes, No]`` stays text.

    PyYAML follows YAML 1.1, where ``yes``, ``no``, ``on`` and ``off`` are booleans too, so a label
    list ``[Yes, No]`` became ``[True, False]`` and every row was refused.
    """
    import re

    import yaml

    class Loader(yaml.SafeLoader):
        pass

    Loader.yaml_implicit_resolvers = {
        first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:bool"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    Loader.add_implicit_resolver(
        "tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$"), list("tTfF")
    )
    return yaml.load(text, Loader=Loader)  # noqa: S506 - a SafeLoader subclass
