"""courtroom: courtroom-style multi-LLM reasoning as declarative, optimizable DSPy programs.

The public names are imported on first use, so ``courtroom --help`` does not pay for DSPy. Type
checkers see the real functions and classes through the ``TYPE_CHECKING`` imports below (the
package ships ``py.typed``); at run time the module ``__getattr__`` resolves the same names from
``_LAZY``, which must name the same module and attribute for each.
"""

import logging
import os
from typing import TYPE_CHECKING

# Before anything imports LiteLLM: otherwise it fetches its price map from the network.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# A library prints nothing unless asked: courtroom's log records reach the handlers a script sets up
# (logging.basicConfig(), as the command line does), never Python's last-resort stderr handler.
logging.getLogger(__name__).addHandler(logging.NullHandler())

from courtroom.errors import ConfigError, CourtroomError, DataError, ModelError  # noqa: E402

if TYPE_CHECKING:
    from courtroom.api import (
        CompareOptions,
        CompileOptions,
        EstimateOptions,
        ExperimentOptions,
        RunOptions,
        ScoreOutcome,
        StudyOptions,
        Verdict,
        compare,
        compile,
        estimate,
        experiment,
        predict,
        report,
        run,
        runs,
        score,
        study,
    )
    from courtroom.comparison.table import Comparison
    from courtroom.cost.estimate import Estimate
    from courtroom.eval.harness import ExampleResult
    from courtroom.models._adapter import INJECTION_GUARD
    from courtroom.models.lms import LMSpec, RoleLMs, resolve_roles
    from courtroom.optimize.compile import compile_program
    from courtroom.optimize.proof import CompileResult, Gain, Score
    from courtroom.optimize.study import StudyOutcome, run_study
    from courtroom.programs import FRAMEWORKS, CourtroomProgram
    from courtroom.runner.repeats import RepeatOutcome
    from courtroom.runner.runs import RunOutcome
    from courtroom.saving import load_program as load
    from courtroom.spec import Experiment
    from courtroom.transcript import Turn, render_html, render_text

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
    # What courtroom.compile returns: the program and its proof on held-out cases.
    "CompileResult": ("courtroom.optimize.proof", "CompileResult"),
    "Gain": ("courtroom.optimize.proof", "Gain"),
    "Score": ("courtroom.optimize.proof", "Score"),
    "run_study": ("courtroom.optimize.study", "run_study"),
    "Experiment": ("courtroom.spec", "Experiment"),
    # One function per command (courtroom.api): `courtroom run` calls courtroom.run, ...
    "run": ("courtroom.api", "run"),
    "compare": ("courtroom.api", "compare"),
    "compile": ("courtroom.api", "compile"),
    "study": ("courtroom.api", "study"),
    "report": ("courtroom.api", "report"),
    "runs": ("courtroom.api", "runs"),
    # Every command's dry run, and verdicts from a saved program.
    "estimate": ("courtroom.api", "estimate"),
    "predict": ("courtroom.api", "predict"),
    "Verdict": ("courtroom.api", "Verdict"),
    # A saved program scored on labelled data, beside the majority vote at its calls.
    "score": ("courtroom.api", "score"),
    "ScoreOutcome": ("courtroom.api", "ScoreOutcome"),
    "experiment": ("courtroom.api", "experiment"),
    # What the functions return: typed records, every field documented.
    "RunOutcome": ("courtroom.runner.runs", "RunOutcome"),
    "RepeatOutcome": ("courtroom.runner.repeats", "RepeatOutcome"),
    "ExampleResult": ("courtroom.eval.harness", "ExampleResult"),
    "Comparison": ("courtroom.comparison.table", "Comparison"),
    "StudyOutcome": ("courtroom.optimize.study", "StudyOutcome"),
    "Estimate": ("courtroom.cost.estimate", "Estimate"),
    # The keywords each function takes, as TypedDicts (for wrappers: **options: Unpack[RunOptions]).
    "RunOptions": ("courtroom.api", "RunOptions"),
    "CompareOptions": ("courtroom.api", "CompareOptions"),
    "CompileOptions": ("courtroom.api", "CompileOptions"),
    "StudyOptions": ("courtroom.api", "StudyOptions"),
    "EstimateOptions": ("courtroom.api", "EstimateOptions"),
    "ExperimentOptions": ("courtroom.api", "ExperimentOptions"),
}

if not TYPE_CHECKING:
    # Hidden from type checkers, which would otherwise accept any attribute (typos included).

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
    "CompareOptions",
    "Comparison",
    "CompileOptions",
    "CompileResult",
    "ConfigError",
    "CourtroomError",
    "CourtroomProgram",
    "DataError",
    "Estimate",
    "EstimateOptions",
    "ExampleResult",
    "Experiment",
    "ExperimentOptions",
    "Gain",
    "LMSpec",
    "ModelError",
    "RepeatOutcome",
    "RoleLMs",
    "RunOptions",
    "RunOutcome",
    "Score",
    "ScoreOutcome",
    "StudyOptions",
    "StudyOutcome",
    "Turn",
    "Verdict",
    "__version__",
    "compare",
    "compile",
    "compile_program",
    "estimate",
    "experiment",
    "load",
    "predict",
    "render_html",
    "render_text",
    "report",
    "resolve_roles",
    "run",
    "run_study",
    "runs",
    "score",
    "study",
]
