"""Frameworks and baselines as DSPy modules; ``FRAMEWORKS`` is the one registry, by name.

:func:`build_program` is the one way to make a program from a name and knobs: the harness, the
optimizers, studies and the CLI all call it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.programs._base import CourtroomProgram
from courtroom.programs.baseline_debates import KhanDebate, Reflexion
from courtroom.programs.baselines import ChainOfThought, FewShot, ParallelVote, SelfConsistency, ZeroShot
from courtroom.programs.courtroom_llm import CourtroomLLM
from courtroom.programs.debate_feedback import DebateFeedback
from courtroom.programs.jot import JudgmentOfThought
from courtroom.programs.settle import SettleThenTrial

FRAMEWORKS: dict[str, type[CourtroomProgram]] = {
    cls.name: cls
    for cls in (
        JudgmentOfThought,
        CourtroomLLM,
        DebateFeedback,
        ZeroShot,
        FewShot,
        ChainOfThought,
        SelfConsistency,
        KhanDebate,
        ParallelVote,
        Reflexion,
        SettleThenTrial,
    )
}


def register(cls: type[CourtroomProgram]) -> type[CourtroomProgram]:
    """Add a framework class to the registry under ``cls.name`` (usable as a class decorator)."""
    if not cls.name:
        raise ConfigError(f"{cls.__name__} has no name: set the class attribute `name`")
    FRAMEWORKS[cls.name] = cls
    return cls


def get_framework(name: str) -> type[CourtroomProgram]:
    """The registered program class called ``name`` (an installed package's too)."""
    if name not in FRAMEWORKS:
        load_plugins()  # a package put on the path since this module was imported
    if name not in FRAMEWORKS:
        raise ConfigError(f"unknown framework {name!r}: valid frameworks are {', '.join(sorted(FRAMEWORKS))}")
    return FRAMEWORKS[name]


def _add_plugin(name: str, cls: Any) -> None:
    if not (isinstance(cls, type) and issubclass(cls, CourtroomProgram)):
        raise TypeError(f"{cls!r} is not a CourtroomProgram subclass")
    if not cls.name:
        cls.name = name
    if cls.name != name:
        raise TypeError(f"its class is named {cls.name!r}: name the entry point {cls.name!r} too")
    register(cls)


def load_plugins() -> None:
    """Add the frameworks installed packages name in ``courtroom.frameworks`` (:mod:`courtroom._plugins`)."""
    from courtroom import _plugins

    _plugins.load("frameworks", _add_plugin)


def check_knobs(name: str, knobs: Mapping[str, Any] | None) -> None:
    """Refuse, in one line naming the valid ones, knobs framework ``name`` does not have."""
    valid = get_framework(name).knobs()
    unknown = sorted(set(knobs or {}) - set(valid))
    if unknown:
        raise ConfigError(
            f"{name} has no knob {', '.join(unknown)}: its knobs are "
            + (", ".join(f"{k}={v}" for k, v in valid.items()) or "(none)")
        )


def build_program(
    name: str,
    labels: Any,
    positions: Any = None,
    *,
    knobs: Mapping[str, Any] | None = None,
    lms: RoleLMs | None = None,
    lm: Any = None,
    roles: Mapping[str, Any] | None = None,
) -> CourtroomProgram:
    """Instantiate a framework, refusing knobs it does not have."""
    cls = get_framework(name)
    check_knobs(name, knobs)
    if lms is not None:
        return cls(labels, positions, roles=lms, **dict(knobs or {}))
    return cls(labels, positions, lm=lm, roles=roles, **dict(knobs or {}))


def all_roles() -> tuple[str, ...]:
    """Every role name any registered program uses."""
    return tuple(sorted({r for cls in FRAMEWORKS.values() for r in cls.roles}))


__all__ = [
    "FRAMEWORKS",
    "ChainOfThought",
    "CourtroomLLM",
    "CourtroomProgram",
    "DebateFeedback",
    "FewShot",
    "JudgmentOfThought",
    "KhanDebate",
    "ParallelVote",
    "Reflexion",
    "SelfConsistency",
    "SettleThenTrial",
    "ZeroShot",
    "all_roles",
    "build_program",
    "get_framework",
    "load_plugins",
    "register",
]


def check_roles(roles: Mapping[str, object], valid: Sequence[str]) -> None:
    """One line for a ``--role`` naming a role the framework does not have."""
    unknown = sorted(set(roles) - set(valid))
    if unknown:
        raise ConfigError(f"unknown role {unknown[0]!r} in --role: valid roles are {', '.join(sorted(valid))}")
