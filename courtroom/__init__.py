"""courtroom: courtroom-style multi-LLM reasoning as declarative, optimizable DSPy programs."""

from courtroom.errors import ConfigError, CourtroomError, DataError, ModelError
from courtroom.lms import LMSpec, RoleLMs, resolve_roles
from courtroom.programs import FRAMEWORKS, CourtroomProgram
from courtroom.saving import load_program as load
from courtroom.transcript import Turn, render_html, render_text

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    # Optimizer entry points import DSPy's teleprompters and Optuna: only when asked for.
    if name == "compile_program":
        from courtroom.optimize.compile import compile_program

        return compile_program
    if name == "run_study":
        from courtroom.optimize.study import run_study

        return run_study
    raise AttributeError(f"module 'courtroom' has no attribute {name!r}")


__all__ = [
    "FRAMEWORKS",
    "ConfigError",
    "CourtroomError",
    "CourtroomProgram",
    "DataError",
    "LMSpec",
    "ModelError",
    "RoleLMs",
    "Turn",
    "__version__",
    "compile_program",
    "load",
    "render_html",
    "render_text",
    "resolve_roles",
    "run_study",
]
