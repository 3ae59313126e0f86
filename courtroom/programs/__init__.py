"""Frameworks and baselines as DSPy modules; ``FRAMEWORKS`` is the one registry, by name."""

from courtroom.programs._base import CourtroomProgram
from courtroom.programs.baseline_debates import KhanDebate, Reflexion
from courtroom.programs.baselines import ChainOfThought, FewShot, ParallelVote, SelfConsistency, ZeroShot
from courtroom.programs.courtroom_llm import CourtroomLLM
from courtroom.programs.debate_feedback import DebateFeedback
from courtroom.programs.jot import JudgmentOfThought

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
    )
}


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
    "ZeroShot",
    "all_roles",
]
