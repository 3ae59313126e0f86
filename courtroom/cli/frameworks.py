"""``courtroom frameworks``: every framework and baseline, its roles and knobs with defaults."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from courtroom.cli._app import app


@app.command("frameworks")
def frameworks_command() -> None:
    """List frameworks and baselines with their roles and knobs (defaults)."""
    from courtroom.programs import FRAMEWORKS

    table = Table(show_lines=True)
    table.add_column("name", no_wrap=True)
    table.add_column("roles", no_wrap=True)
    table.add_column("knobs (defaults)", no_wrap=True)
    table.add_column("about", ratio=1)
    for name, cls in FRAMEWORKS.items():
        # One knob and one role per line keeps the table readable in an 80-column terminal.
        knobs = "\n".join(f"{k}={v}" for k, v in cls.knobs().items()) or "-"
        table.add_row(name, "\n".join(cls.roles), knobs, cls.summary + (" [binary only]" if cls.binary_only else ""))
    Console().print(table)
