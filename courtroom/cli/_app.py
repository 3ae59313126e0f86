"""The typer application every command module registers on."""

import typer

app = typer.Typer(
    name="courtroom",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Courtroom-style multi-LLM reasoning as optimizable DSPy programs. Add --debug for tracebacks.",
)
