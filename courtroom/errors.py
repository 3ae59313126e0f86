"""User-facing errors: each names the problem and the fix in one line."""


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
