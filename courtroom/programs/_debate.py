"""Debate-Feedback's debate step (paper Algorithm 1): who argues what, opinions, replies.

Kept apart from :mod:`courtroom.programs.debate_feedback` (the judge, the gate and the smoothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

NONE = "(none)"
FREE = "(no assigned side: argue for the label you find most likely)"


def perspectives(labels: Sequence[str], n: int, o0: Mapping[str, float]) -> list[str | None]:
    """The label each of ``n`` debaters argues for (None: no assigned side).

    Binary: the debaters split evenly between the two labels (debater d argues labels[d % 2]); with
    an odd number, the last one argues without an assigned side and states its own stance.
    Multi-class: the labels the initial estimate O_0 ranks highest (top-n; ties by label order),
    debater d arguing the (d+1)-th ranked; with more debaters than labels the ranking repeats.
    """
    if len(labels) == 2:
        out: list[str | None] = [labels[d % 2] for d in range(n)]
        if n % 2:
            out[-1] = None
        return out
    ranked = sorted(labels, key=lambda lab: (-o0[lab], list(labels).index(lab)))
    return [ranked[d % len(ranked)] for d in range(n)]


def perspective_text(side: str | None) -> str:
    """What the debater is told about its side."""
    return FREE if side is None else side


def expert(d: int, side: str | None) -> str:
    """How debater ``d`` (0-based) is named to the others and to the judge."""
    return f"Expert {d + 1}" + (f" (perspective: {side})" if side else " (no assigned side)")


@dataclass
class Comment:
    """One debater's part in a round: its opinion, its reply, and the stance the reply states."""

    debater: int
    side: str | None
    opinion: str
    reply: str
    stance: str
    opinion_cut: bool = False
    reply_cut: bool = False


def others_text(comments: Sequence[tuple[int, str | None, str]], d: int) -> str:
    """The other debaters' opinions, as debater ``d`` reads them in the reply step."""
    return "\n".join(f"{expert(j, side)}: {text}" for j, side, text in comments if j != d) or NONE


def debate_text(comments: Sequence[Comment], reliabilities: Mapping[int, float] | None) -> str:
    """The round as the judge's summary step reads it: a, e and v of Algorithm 1."""
    lines = []
    for c in comments:
        score = f" (reliability {reliabilities[c.debater]:.2f})" if reliabilities else ""
        lines.append(
            f"{expert(c.debater, c.side)}{score}, stance {c.stance}:\n  opinion: {c.opinion}\n  reply: {c.reply}"
        )
    return "\n".join(lines)
