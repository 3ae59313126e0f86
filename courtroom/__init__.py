"""courtroom: courtroom-style multi-LLM reasoning as declarative, optimizable DSPy programs.

The public names are imported on first use, so ``courtroom --help`` does not pay for DSPy.
"""

import os

# Before anything imports LiteLLM: otherwise it fetches its price map from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from courtroom.errors import ConfigError, CourtroomError, DataError, ModelError  # noqa: E402

__version__ = "0.1.0"

_LAZY = {
    "INJECTION_GUARD": ("courtroom.models._adapter", "INJECTION_GUARD"),
    "FRAMEWORKS": ("courtroom.programs", "FRAMEWORKS"),
    "CourtroomProgram": ("courtroom.programs", "CourtroomProgram"),
    "LMSpec": ("courtroom.models.lms", "LMSpec"),
    "RoleLMs": ("courtroom.models.lms", "RoleLMs"),
    "resolve_roles": ("courtroom.models.lms", "resolve_roles"),
    "load": ("courtroom.saving", "load_program"),
    "Turn": ("courtroom.transcript", "Turn"),
    "render_html": ("courtroom.transcript", "render_html"),
    "render_text": ("courtroom.transcript", "render_text"),
    "compile_program": ("courtroom.optimize.compile", "compile_program"),
    "run_study": ("courtroom.optimize.study", "run_study"),
    # One function per command (courtroom.api): `courtroom run` calls courtroom.run, ...
    "run": ("courtroom.api", "run"),
    "compare": ("courtroom.api", "compare"),
    "compile": ("courtroom.api", "compile"),
    "study": ("courtroom.api", "study"),
    "report": ("courtroom.api", "report"),
    "runs": ("courtroom.api", "runs"),
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'courtroom' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


__all__ = [
    "FRAMEWORKS",
    "INJECTION_GUARD",
    "ConfigError",
    "CourtroomError",
    "CourtroomProgram",
    "DataError",
    "LMSpec",
    "ModelError",
    "RoleLMs",
    "Turn",
    "__version__",
    "compare",
    "compile",
    "compile_program",
    "load",
    "render_html",
    "render_text",
    "report",
    "resolve_roles",
    "run",
    "run_study",
    "runs",
    "study",
]
