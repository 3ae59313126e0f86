"""courtroom: courtroom-style multi-LLM reasoning as declarative, optimizable DSPy programs."""

from courtroom.errors import ConfigError, CourtroomError, DataError, ModelError
from courtroom.lms import LMSpec, RoleLMs, resolve_roles
from courtroom.programs import FRAMEWORKS, CourtroomProgram
from courtroom.transcript import Turn, render_html, render_text

__version__ = "0.1.0"

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
    "render_html",
    "render_text",
    "resolve_roles",
]
