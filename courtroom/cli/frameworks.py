"""``courtroom frameworks``: every framework and baseline, its roles and knobs with defaults."""

from __future__ import annotations

from rich.table import Table

from courtroom.cli._app import app


@app.command("frameworks")
def frameworks_command() -> None:
    """List frameworks and baselines with their roles and knobs (defaults), the paper presets and suites."""
    from courtroom.programs import FRAMEWORKS, load_plugins

    load_plugins()  # a package installed since the registry was imported (one process, many commands)

    table = Table(show_lines=True)
    table.add_column("name (roles)", no_wrap=True)
    table.add_column("knobs (defaults)", no_wrap=True)
    table.add_column("about", ratio=1)
    for name, cls in FRAMEWORKS.items():
        # One knob and one role per line, the roles under the name: at 80 columns the description
        # keeps room to wrap at its spaces (no word cut short).
        roles = "\n".join(f"  {r}" for r in cls.roles)
        knobs = "\n".join(f"{k}={v}" for k, v in cls.knobs().items()) or "-"
        table.add_row(f"{name}\n{roles}", knobs, cls.summary + (" [binary only]" if cls.binary_only else ""))
    from courtroom.reporting.tables import say, stdout_console

    console = stdout_console()
    console.print(table)
    from courtroom.comparison.suites import SUITES
    from courtroom.programs.presets import PRESETS

    # Plain lines, not tables: long names stay whole and greppable; a long line goes on indented.
    lines = ["", "presets (--preset NAME on run, compare, compile, study; --set still wins):"]
    for p in PRESETS.values():
        temps = ", ".join(f"{r}={t}" for r, t in p.temperatures.items()) or "the framework's defaults"
        lines += [f"  {p.name} -> {p.framework}", f"    source: {p.source}", "    knobs:"]
        lines += [f"      {k}={v}  [{p.sources.get(k, 'see source')}]" for k, v in p.knobs.items()]
        lines += [f"    temperatures: {temps}"]
    lines += ["", "suites (courtroom compare --suite NAME [--suite-tasks a,b]):"]
    for s in SUITES.values():
        lines += [
            f"  {s.name} -> {s.paper}, {s.table}",
            "    rows: " + ", ".join(r.name for r in s.rows),
            "    tasks: " + ", ".join(s.tasks),
        ]
    from courtroom.eval.metrics import METRICS
    from courtroom.eval.metrics import load_plugins as load_metrics
    from courtroom.optimize.optimizers import OPTIMIZERS
    from courtroom.optimize.optimizers import load_plugins as load_optimizers

    load_metrics()
    load_optimizers()
    supported = [o.name for o in OPTIMIZERS.values() if o.refuse is None]
    lines += ["", "optimizers (compile --optimizer NAME; study --compile NAME):", "  " + ", ".join(supported)]
    lines += ["", "metrics (--metric NAME, or --metric MODULE:FUNCTION):", "  " + ", ".join(METRICS)]
    say(console, *lines)
