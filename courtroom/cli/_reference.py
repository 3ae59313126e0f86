"""The CLI reference as Markdown, generated from the Typer app (the docs' ``reference/cli.md``).

Nothing here is copied by hand: each command's usage, help and options come from the same click
objects ``courtroom COMMAND --help`` prints, grouped in the same panels. ``python -m
courtroom.cli._reference`` prints it; the docs build inserts it (``docs/hooks.py``).
"""

from __future__ import annotations

from typing import Any

import typer


def _app_command() -> Any:
    from courtroom.cli._app import app
    from courtroom.cli._main import _register

    _register()
    return typer.main.get_command(app)


# The panels in the order a reader fills them in (as `--help` groups them); others follow, then "Options".
_PANELS = ("Data", "Models", "Framework", "Output", "Execution", "Budget and cost", "Study")


def _panel_order(panel: str) -> tuple[int, str]:
    if panel in _PANELS:
        return _PANELS.index(panel), panel
    return (len(_PANELS) + 1 if panel == "Options" else len(_PANELS)), panel


def _cell(text: str) -> str:
    """One Markdown table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _code(text: str) -> str:
    """One table cell in backticks: a pipe inside a code span needs no escape (and would show one)."""
    return "`" + " ".join(text.split()) + "`"


def _command_markdown(name: str, command: Any, parent: Any) -> list[str]:
    # Typer vendors its own click (typer._click): its objects are used through their methods only.
    ctx = command.context_class(command, info_name=name, parent=parent)
    params = command.get_params(ctx)
    usage = " ".join(command.collect_usage_pieces(ctx))  # the usage line of --help
    lines = [f"## `courtroom {name}`", "", "```text", f"courtroom {name} {usage}", "```", ""]
    if command.help:
        lines += [command.help.strip(), ""]
    panels: dict[str, list[tuple[str, str]]] = {}
    arguments: list[tuple[str, str]] = []
    for param in params:
        if param.param_type_name == "argument":
            record = param.get_help_record(ctx)
            arguments.append((param.display_name_raw, record[1] if record else ""))  # the name without its type
            continue
        record = param.get_help_record(ctx)
        if record is None:
            continue
        panel = getattr(param, "rich_help_panel", None) or "Options"
        panels.setdefault(panel, []).append(record)
    if arguments:
        lines += ["| argument | meaning |", "|---|---|"]
        lines += [f"| {_code(metavar)} | {_cell(text)} |" for metavar, text in arguments]
        lines.append("")
    for panel, records in sorted(panels.items(), key=lambda item: _panel_order(item[0])):
        lines += [f"**{panel}**", "", "| option | meaning |", "|---|---|"]
        lines += [f"| {_code(opts)} | {_cell(text)} |" for opts, text in records]
        lines.append("")
    return lines


def cli_reference() -> str:
    """Every command of ``courtroom`` with its usage, help and options, as Markdown."""
    group = _app_command()
    root = group.context_class(group, info_name="courtroom")
    lines: list[str] = []
    if group.help:
        lines += [group.help.strip(), ""]
    lines += ["| command | what it does |", "|---|---|"]
    commands: dict[str, Any] = dict(sorted(group.commands.items()))
    for name, command in commands.items():
        short = command.get_short_help_str(limit=200)
        lines.append(f"| [`{name}`](#courtroom-{name}) | {_cell(short)} |")
    lines.append("")
    for name, command in commands.items():
        lines += _command_markdown(name, command, root)
    return "\n".join(lines)


if __name__ == "__main__":
    print(cli_reference())
