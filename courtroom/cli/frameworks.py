"""``courtroom frameworks``: every framework and baseline, its roles and knobs with defaults."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from courtroom.cli import app


@app.command("frameworks")
def frameworks_command() -> None:
    """List frameworks and baselines with their roles and knobs (defaults)."""
    from courtroom.programs import FRAMEWORKS

    table = Table("name", "roles", "knobs (defaults)", "about")
    for name, cls in FRAMEWORKS.items():
        knobs = ", ".join(f"{k}={v}" for k, v in cls.knobs().items())
        table.add_row(name, ", ".join(cls.roles), knobs, cls.summary + (" [binary only]" if cls.binary_only else ""))
    Console().print(table)
