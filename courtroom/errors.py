"""User-facing errors: each names the problem and the fix in one line."""

from __future__ import annotations

from collections.abc import Iterable


class CourtroomError(Exception):
    """An error caused by user input or environment; the CLI prints it in one line."""

    exit_code = 2
    """The CLI's exit status when this ends a command."""


class ConfigError(CourtroomError, ValueError):
    """Bad configuration or arguments (unknown names, values out of range)."""


class DataError(CourtroomError, ValueError):
    """A dataset or task file that cannot be used as given."""


class ModelError(CourtroomError, RuntimeError):
    """A model that cannot be reached or started."""


def did_you_mean(name: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the choice nearest a misspelt ``name``, or nothing when none is near."""
    import difflib

    near = difflib.get_close_matches(name, sorted(set(choices)), n=1, cutoff=0.7)
    return f" (did you mean {near[0]}?)" if near else ""
