"""The typer application every command module registers on."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperArgument, TyperCommand, TyperOption


class Command(TyperCommand):
    """A command whose help shows flags bare and arguments by their upper-case names.

    ``--dry-run``, not ``--dry-run <bool>``; ``courtroom predict [OPTIONS] PROGRAM_FILE [CASE]``,
    where Typer 0.29 writes a required argument ``{program_file}``, braces and all.
    """

    def get_params(self, ctx: Any) -> list[Any]:  # noqa: D102
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # a flag takes no value, so its help names none
            elif isinstance(param, TyperArgument) and param.metavar is None:
                # The name a command's help text uses (FRAMEWORK), in usage, help and errors alike.
                param.metavar = param.name.upper() + ("..." if param.nargs != 1 else "")
        return params

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS]``, then each argument: bare when required, in brackets when optional."""
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if isinstance(param, TyperArgument):
                pieces.append(param.display_name_raw if param.required else f"[{param.display_name_raw}]")
            else:
                pieces += param.get_usage_pieces(ctx)
        return pieces


class _Typer(typer.Typer):
    """Every command of the app is a :class:`Command`."""

    def command(self, *args: Any, **kwargs: Any) -> Any:  # noqa: D102
        kwargs.setdefault("cls", Command)
        return super().command(*args, **kwargs)


app = _Typer(
    name="courtroom",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Courtroom-style multi-LLM reasoning as optimizable DSPy programs. Add --debug for tracebacks.",
)
