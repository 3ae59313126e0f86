"""Frameworks and baselines as DSPy modules; ``FRAMEWORKS`` is the one registry, by name."""

from courtroom.programs._base import CourtroomProgram
from courtroom.programs.jot import JudgmentOfThought

FRAMEWORKS: dict[str, type[CourtroomProgram]] = {
    cls.name: cls
    for cls in (JudgmentOfThought,)
}


def all_roles() -> tuple[str, ...]:
    """Every role name any registered program uses."""
    return tuple(sorted({r for cls in FRAMEWORKS.values() for r in cls.roles}))


__all__ = ["FRAMEWORKS", "CourtroomProgram", "JudgmentOfThought", "all_roles"]
