"""MkDocs hook: the CLI reference page is generated from the Typer app at build time."""

from __future__ import annotations

from typing import Any

MARKER = "<!-- cli-reference -->"


def on_page_markdown(markdown: str, page: Any, **_: Any) -> str:
    """Replace the marker with every command's usage, help and options."""
    if MARKER not in markdown:
        return markdown
    from courtroom.cli._reference import cli_reference

    return markdown.replace(MARKER, cli_reference())
