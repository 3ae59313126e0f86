"""``courtroom frameworks``: every framework and baseline, its roles and knobs with defaults."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from courtroom.cli import app


@app.command("frameworks")
def frameworks_command() -> None:
    """List frameworks and baselines with their roles and knobs (defaults), the paper presets and suites."""
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
    console = Console()
    console.print(table)
    from courtroom.eval.suites import SUITES
    from courtroom.programs.presets import PRESETS

    presets = Table(title="presets (--preset NAME on run, compare, compile, study)", show_lines=True)
    for column in ("preset", "framework", "knobs", "temperatures"):
        presets.add_column(column, no_wrap=True)
    presets.add_column("source", ratio=1)
    for p in PRESETS.values():
        presets.add_row(
            p.name,
            p.framework,
            "\n".join(f"{k}={v}" for k, v in p.knobs.items()),
            "\n".join(f"{r}={t}" for r, t in p.temperatures.items()) or "framework default",
            p.source,
        )
    console.print(presets)
    suites = Table(title="suites (courtroom compare --suite NAME)", show_lines=True)
    for column in ("suite", "reproduces", "rows"):
        suites.add_column(column, no_wrap=True)
    suites.add_column("tasks", ratio=1)
    for s in SUITES.values():
        suites.add_row(s.name, f"{s.paper}\n{s.table}", "\n".join(r.name for r in s.rows), ", ".join(s.tasks))
    console.print(suites)
