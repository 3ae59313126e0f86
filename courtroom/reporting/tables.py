"""Tables for a person and for a program: ``--format table|md|csv|json``.

``table`` draws the key columns of a table at the width of the terminal it is printed in (more
columns only while they fit), so an 80-column terminal gets readable rows, not folded Markdown.
``md``, ``csv`` and ``json`` print the whole table, as the run or comparison folder holds it.
The width is ``COLUMNS`` when set, else the terminal's (stdout's, or stderr's when stdout is a
pipe), else :data:`DEFAULT_WIDTH`.
"""

from __future__ import annotations

import io
import json
import math
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from rich import box
from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_WIDTH = 100
"""Columns when neither ``COLUMNS`` nor a terminal says (a pipe, a log file)."""


def terminal_width(default: int = DEFAULT_WIDTH) -> int:
    """``COLUMNS``, else the width of the terminal on stdout, stderr or stdin, else ``default``."""
    env = os.environ.get("COLUMNS", "")
    if env.strip().isdigit() and int(env) > 0:
        return int(env)
    for fd in (1, 2, 0):
        try:
            return os.get_terminal_size(fd).columns
        except (OSError, ValueError):
            continue
    return default


def stdout_console(width: int | None = None) -> Console:
    """A console on stdout at the terminal's width (see :func:`terminal_width`)."""
    return Console(width=width or terminal_width(), highlight=False)


def _natural_width(table: Table) -> int:
    return Console(width=100_000, file=io.StringIO()).measure(table).maximum


def fitted(
    df: pd.DataFrame,
    key: Sequence[str],
    width: int,
    *,
    title: str | None = None,
    headers: Mapping[str, str] | None = None,
    right: Sequence[str] = (),
) -> Table:
    """A rich table of ``df``'s ``key`` columns, plus each other column (in order) while it fits ``width``.

    ``df`` holds the cells as text (its index is the first column); ``headers`` shortens column
    names for the terminal; ``right`` are right-aligned. What still does not fit is wrapped by rich
    within its column, so no line is longer than ``width``.
    """
    names = dict(headers or {})
    index_name = str(df.index.name or "")

    def build(columns: Sequence[str]) -> Table:
        table = Table(title=title, box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        table.add_column(names.get(index_name, index_name), overflow="fold")
        for c in columns:
            table.add_column(names.get(c, c), justify="right" if c in right else "left", overflow="fold")
        for i, row in zip(df.index, df[list(columns)].itertuples(index=False), strict=True):
            table.add_row(str(i), *(_cell(v) for v in row))
        return table

    chosen = [c for c in key if c in df.columns]
    for column in df.columns:
        if column in chosen:
            continue
        trial = [c for c in df.columns if c in chosen or c == column]
        if _natural_width(build(trial)) <= width:
            chosen.append(column)
    return build([c for c in df.columns if c in chosen])


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)


def markdown(df: pd.DataFrame) -> str:
    """``df`` as a GitHub Markdown table (the index first)."""
    from courtroom.analysis.papers import markdown_table

    return markdown_table(df)


def csv_text(df: pd.DataFrame, index: bool = True) -> str:
    """``df`` as CSV text."""
    return str(df.to_csv(index=index))


def json_text(data: Any) -> str:
    """``data`` (a DataFrame: its records, the index a column) as indented JSON."""
    import pandas as pd

    if isinstance(data, pd.DataFrame):
        frame = data.reset_index() if data.index.name else data
        data = json.loads(str(frame.to_json(orient="records")))
    return json.dumps(data, indent=2, default=str) + "\n"


def print_data(fmt: str, df: pd.DataFrame, *, readable: pd.DataFrame | None = None) -> None:
    """Print ``df`` whole (its index first) as ``md`` (``readable``: the cells for reading), ``csv`` or ``json``."""
    import sys

    if fmt == "md":
        sys.stdout.write(markdown(readable if readable is not None else df))
    elif fmt == "csv":
        sys.stdout.write(csv_text(df))
    elif fmt == "json":
        sys.stdout.write(json_text(df))
    else:  # pragma: no cover - the caller draws the table itself
        raise ValueError(fmt)


__all__ = [
    "DEFAULT_WIDTH",
    "csv_text",
    "fitted",
    "json_text",
    "markdown",
    "print_data",
    "stdout_console",
    "terminal_width",
]
