"""The typer application every command module registers on."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperCommand, TyperOption


class Command(TyperCommand):
    """A command whose help shows flags bare: ``--dry-run``, not ``--dry-run <bool>``."""

    def get_params(self, ctx: Any) -> list[Any]:  # noqa: D102
        params = super().get_params(ctx)
        for param in params:
            if isinstance(param, TyperOption) and param.is_flag and param.metavar is None:
                param.metavar = ""  # a flag takes no value, so its help names none
        return params


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
