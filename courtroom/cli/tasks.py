"""``courtroom tasks``: list the registered tasks."""

from __future__ import annotations

from rich.table import Table

from courtroom.cli._app import app


@app.command("tasks")
def tasks_command() -> None:
    """List the tasks: labels, data source (Hub id or local file) and whether a generator exists."""
    from courtroom.data.tasks import TASKS, load_plugins

    load_plugins()  # a package installed since the registry was imported (one process, many commands)

    table = Table(title="tasks")
    table.add_column("task", no_wrap=True)
    for column in ("labels", "source", "generator", "description"):
        table.add_column(column, overflow="fold")
    for name in sorted(TASKS):
        t = TASKS[name]
        labels = ", ".join(t.labels) if t.labels else "(from the data)"
        table.add_row(name, labels, t.source, "yes" if t.has_generator else "", t.description)
    from courtroom.reporting.tables import say, stdout_console

    console = stdout_console()
    console.print(table)
    say(
        console,
        "Any task also loads from --data PATH (json/jsonl/csv/parquet); any other dataset with "
        "--dataset ID_OR_PATH --text-field F --label-field F --labels a,b",
    )
