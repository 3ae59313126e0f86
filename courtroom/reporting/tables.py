"""Tables for a person and for a program: ``--format table|md|csv|json``.

``table`` draws the key columns of a table at the width of the terminal it is printed in (more
columns only while they fit), so an 80-column terminal gets readable rows, not folded Markdown.
``md``, ``csv`` and ``json`` print the whole table, as the run or comparison folder holds it.
The width is ``COLUMNS`` when set, else the terminal's (stdout's, or stderr's when stdout is a
pipe), else :data:`DEFAULT_WIDTH`. :func:`say` prints prose wrapped to that width (continuation
lines indented), and :func:`print_text` also draws the Markdown tables in a text as tables that fit.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence
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


def measured_width(table: Table) -> int:
    """The columns ``table`` takes with nothing wrapped or folded."""
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

    # A column's natural width does not depend on its neighbours: measure each once, alone, as rich
    # measures it (its header and cells; an alone column has no padding and two edges), then add what
    # the table puts between columns: one space of padding and one of rule each (pad_edge off,
    # collapse_padding on).
    def build_alone(column: str | None) -> Table:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
        if column is None:
            table.add_column(names.get(index_name, index_name), overflow="fold")
            for i in df.index:
                table.add_row(str(i))
        else:
            table.add_column(names.get(column, column), overflow="fold")
            for v in df[column]:
                table.add_row(_cell(v))
        return table

    alone = {c: measured_width(build_alone(c)) - 2 for c in [None, *df.columns]}

    def natural(columns: Sequence[str]) -> int:
        return sum(alone[c] for c in [None, *columns]) + 2 * len(columns) + 2

    chosen = [c for c in key if c in df.columns]
    for column in df.columns:
        if column in chosen:
            continue
        if natural([c for c in df.columns if c in chosen or c == column]) <= width:
            chosen.append(column)
    return build([c for c in df.columns if c in chosen])


def _cell(v: Any) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return str(v)


def wrapped(text: str, width: int) -> list[str]:
    """``text``'s lines cut at spaces to ``width``; a cut line goes on indented two more spaces.

    A word is never cut; a short label stays with the path after it (``run folder: PATH``), and with
    any other word, and a command with its first argument (``courtroom show PATH``), where they fit.
    Paths are copied whole, so a path longer than the terminal is the one thing that may run past it.
    """
    out = []
    for line in text.splitlines() or [""]:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[: len(line) - len(line.lstrip(" "))]
        # A command with its argument stays whole where it fits a line of its own.
        glued = _COMMAND.sub(lambda m: m.group(0).replace(" ", _GLUE) if len(m.group(0)) < width - 4 else m.group(0),
                             line.strip())  # fmt: skip
        label, colon, rest = glued.partition(": ")
        first = rest.split(" ", 1)[0]
        if colon and len(label) < width // 2 and ("/" in first.split(_GLUE)[0] or len(label) + len(first) < width):
            glued = label.replace(" ", _GLUE) + ":" + _GLUE + rest  # `run folder: PATH` is never parted
        more = indent + "  " if len(indent) + 2 < width // 2 else indent
        cut = textwrap.wrap(
            glued,
            width,
            initial_indent=indent,
            subsequent_indent=more,
            break_long_words=False,
            break_on_hyphens=False,
        )
        out += [piece.replace(_GLUE, " ") for piece in cut]
    return out


_COMMAND = re.compile(r"\bcourtroom [a-z]+ \S+")
"""``courtroom show PATH``: a command and its first argument, kept on one line."""
_GLUE = "\u00a0"
"""A space :func:`wrapped` never breaks at (textwrap breaks at ASCII whitespace only)."""


def to_stderr(text: str) -> None:
    """``text`` on stderr, cut by :func:`wrapped` to the terminal's width as every stdout line is.

    Every error, interruption and usage line the CLI prints goes through here.
    """
    import sys

    sys.stderr.write("\n".join(wrapped(text, terminal_width())) + "\n")
    sys.stderr.flush()


def say(console: Console, *texts: str) -> None:
    """Print each text as plain words (no markup), wrapped to the console's width by :func:`wrapped`."""
    for text in texts:
        for line in wrapped(text, console.width):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


def print_text(console: Console, lines: Iterable[str]) -> None:
    """Print text lines whose Markdown tables (``| a | b |`` rows) become tables that fit the console.

    A table that fits is printed as it is; one that does not, one row per paragraph
    (``first cell: header value; ...``), so no figure is dropped. ``# title`` lines lose the ``#``.
    """
    block: list[str] = []

    def flush() -> None:
        if block:
            _print_markdown_table(console, block)
            block.clear()

    for line in lines:
        for part in line.split("\n"):
            if part.startswith("|"):
                block.append(part)
                continue
            flush()
            say(console, part[2:] if part.startswith("# ") else part)
    flush()


def _print_markdown_table(console: Console, rows: Sequence[str]) -> None:
    if max(len(row) for row in rows) <= console.width:
        for row in rows:
            console.print(row, markup=False, highlight=False, soft_wrap=True)
        return
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    header, body = cells[0], [r for r in cells[1:] if not all(set(c) <= set("-: ") for c in r)]
    for cell in body:
        say(console, f"{cell[0]}: " + "; ".join(f"{h} {v}" for h, v in zip(header[1:], cell[1:], strict=False)))


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
    "print_text",
    "say",
    "stdout_console",
    "terminal_width",
    "wrapped",
]
