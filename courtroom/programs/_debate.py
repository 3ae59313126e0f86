"""Debate-Feedback's debate step (paper Algorithm 1, Table 4): who argues what, opinions, replies, memory.

Kept apart from :mod:`courtroom.programs.debate_feedback` (the judge, the gate and the smoothing).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import dspy

from courtroom.models._concurrency import run_parallel
from courtroom.programs._common import labels_text, limit_words
from courtroom.transcript import Turn

NONE = "(none)"
FREE = "(no assigned side: argue for the label you find most likely)"
SIDES = ("split", "none")


def perspectives(labels: Sequence[str], n: int, o0: Mapping[str, float], sides: str = "split") -> list[str | None]:
    """The label each of ``n`` debaters argues for (None: no assigned side).

    ``sides="none"`` (Table 4, the authors' code): nobody has a side; every debater gets the same
    prompt. ``"split"`` (Algorithm 1's opposing perspectives), binary: the debaters split evenly
    between the two labels (debater d argues labels[d % 2]); with an odd number, the last one argues
    without an assigned side and states its own stance. Multi-class: the labels the initial estimate
    O_0 ranks highest (top-n; ties by label order), debater d arguing the (d+1)-th ranked; with more
    debaters than labels the ranking repeats.
    """
    if sides == "none":
        return [None] * n
    if len(labels) == 2:
        out: list[str | None] = [labels[d % 2] for d in range(n)]
        if n % 2:
            out[-1] = None
        return out
    ranked = sorted(labels, key=lambda lab: (-o0[lab], list(labels).index(lab)))
    return [ranked[d % len(ranked)] for d in range(n)]


def perspective_text(side: str | None) -> str:
    """What a debater with sides is told about its own."""
    return FREE if side is None else side


def expert(d: int, side: str | None) -> str:
    """How debater ``d`` (0-based) is named to the others and to the judge."""
    return f"Expert {d + 1}" + (f" (perspective: {side})" if side else "")


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
    """The round (or one debater's statement) as the summary reads it: a, e and v of Algorithm 1."""
    lines = []
    for c in comments:
        score = f" (reliability {reliabilities[c.debater]:.2f})" if reliabilities else ""
        lines.append(
            f"{expert(c.debater, c.side)}{score}, stance {c.stance}:\n  opinion: {c.opinion}\n  reply: {c.reply}"
        )
    return "\n".join(lines)


def reliabilities_text(comments: Sequence[Comment], reliabilities: Mapping[int, float]) -> str:
    """Table 4 step 4's "{insert the reliability from Step 3}": every comment's score, for the judge."""
    scores = "; ".join(f"{expert(c.debater, c.side)}: {reliabilities[c.debater]:.2f}" for c in comments)
    return f"Reliability of each expert's comment (the assistant's score, 0 to 1): {scores}"


def debater_memory(rounds: Sequence[Sequence[Comment]], d: int) -> str:
    """What debater ``d`` said and read in the earlier ``rounds`` (its conversation, Table 4)."""
    parts = []
    for k, comments in enumerate(rounds, 1):
        own = comments[d]
        others = others_text([(c.debater, c.side, c.opinion) for c in comments], d)
        parts.append(
            f"Round {k}: your opinion: {own.opinion}\nThe other experts' opinions:\n{others}\n"
            f"Your reply: {own.reply} (stance: {own.stance})"
        )
    return "\n".join(parts) or NONE


def judge_memory(rounds: Sequence[tuple[int, str, str]]) -> str:
    """The judge's earlier rounds that reached it: (round, the debate summary it read, its answer)."""
    return "\n".join(f"Round {r}: debate summary: {s}\nYour answer: {a}" for r, s, a in rounds) or NONE


class DebateStep:
    """The debate step of :class:`courtroom.programs.debate_feedback.DebateFeedback`: sides, opinions, replies."""

    # Set by DebateFeedback.__init__.
    labels: list[str]
    n_debaters: int
    word_limit: int
    sides: str
    memory: bool
    debater: dspy.Predict
    n_rounds: int
    ask: Any
    ask_samples: Any
    samples_in_one_request: Any
    adaptive: Any
    _estimate: Any

    def _sides(self, case: str, o0: Mapping[str, float] | None = None) -> list[str | None]:
        """Who argues what; split multi-class sides follow O_0 (asked here when not given)."""
        if o0 is None and self.sides == "split" and len(self.labels) > 2:
            o0 = self._estimate(case, NONE, NONE, NONE, 0)[0]
        return perspectives(self.labels, self.n_debaters, o0 or {}, self.sides)

    def _inputs(self, case: str, side: str | None, own: str, others: str, earlier: str) -> dict[str, Any]:
        inputs = {
            "case": case,
            "labels": labels_text(self.labels),
            "stage": "reply" if own != NONE else "opinion",
            "own_opinion": own,
            "other_opinions": others,
            "word_limit": f"at most {self.word_limit} words" if self.word_limit else "no limit",
        }
        if self.sides == "split":
            inputs["perspective"] = perspective_text(side)
        if self.memory:
            inputs["earlier_rounds"] = earlier
        return inputs

    def _rollout(self, r: int, d: int) -> int:
        """Debater ``d``'s call in round ``r``: its rollout id (a reply shares its opinion's; the stage differs)."""
        return (r - 1) * self.n_debaters + d

    def _speak(
        self, case: str, r: int, d: int, side: str | None, own: str, others: str, earlier: str
    ) -> dspy.Prediction:
        inputs = self._inputs(case, side, own, others, earlier)
        return self.ask("debater", self.debater, rollout=self._rollout(r, d), **inputs)

    def _opinions(
        self, case: str, r: int, sides: Sequence[str | None], memory: Sequence[str], pool: dict[int, Any] | None
    ) -> list[dspy.Prediction]:
        """Round ``r``'s opinions: debaters whose prompts are the same bytes are samples of one prompt.

        Debaters with the same side (``sides="none"``: all of them) and no memory get identical
        opinion prompts, asked together (:meth:`ask_samples`: one request with ``n`` where the model
        takes it). Without memory, later rounds' opinion prompts are round 1's again (Algorithm 1's
        fresh samples), so when the rounds cannot stop early (``pool`` given) and the model takes
        ``n``, round 1 asks for them in the same request and keeps them in ``pool`` (rollout ->
        answer) for their rounds; otherwise each round asks its own, as k requests would anyway.
        """
        groups: dict[str, list[int]] = {}
        for d in range(len(sides)):
            key = json.dumps(self._inputs(case, sides[d], NONE, NONE, memory[d]), sort_keys=True)
            groups.setdefault(key, []).append(d)
        ahead = pool is not None and not self.memory and self.samples_in_one_request("debater")
        later = range(r + 1, self.n_rounds + 1) if ahead else range(0)

        def ask(ds: list[int]) -> dict[int, Any]:
            wanted = [self._rollout(r, d) for d in ds]
            if pool is not None and all(w in pool for w in wanted):
                return {w: pool.pop(w) for w in wanted}
            rollouts = wanted + [self._rollout(q, d) for q in later for d in ds]
            inputs = self._inputs(case, sides[ds[0]], NONE, NONE, memory[ds[0]])
            return dict(zip(rollouts, self.ask_samples("debater", self.debater, rollouts, **inputs), strict=True))

        answers: dict[int, Any] = {}
        for got in run_parallel([functools.partial(ask, ds) for ds in groups.values()]):
            answers.update(got)
        out = [answers.pop(self._rollout(r, d)) for d in range(len(sides))]
        if pool is not None:
            pool.update(answers)
        return out

    def _round(
        self,
        case: str,
        r: int,
        sides: Sequence[str | None],
        earlier: Sequence[Sequence[Comment]] = (),
        pool: dict[int, Any] | None = None,
    ) -> list[Comment]:
        """Opinions, then replies that see their own opinion and the others' (and, with memory, earlier rounds).

        ``pool``: this case's opinions asked ahead (see :meth:`_opinions`); None when the rounds may stop early.
        """
        n = range(len(sides))
        memory = [debater_memory(earlier, d) if self.memory else NONE for d in n]
        ops = self._opinions(case, r, sides, memory, pool)
        cut_ops = [limit_words(o.opinion, self.word_limit) for o in ops]
        said = [(d, sides[d], cut_ops[d][0]) for d in n]
        replies = run_parallel(
            [
                functools.partial(self._speak, case, r, d, sides[d], cut_ops[d][0], others_text(said, d), memory[d])
                for d in n
            ]
        )
        out = []
        for d, reply in zip(n, replies, strict=True):
            text, cut = limit_words(reply.opinion, self.word_limit)
            out.append(Comment(d, sides[d], cut_ops[d][0], text, reply.stance, cut_ops[d][1], cut))
        return out

    @staticmethod
    def _debate_turns(r: int, comments: Sequence[Comment]) -> list[Turn]:
        turns = []
        for stage in ("opinion", "reply"):
            for c in comments:
                cut = c.opinion_cut if stage == "opinion" else c.reply_cut
                extra: dict[str, Any] = {"side": c.side, "stage": stage} | ({"truncated": True} if cut else {})
                if stage == "reply":
                    extra["stance"] = c.stance
                turns.append(
                    Turn(f"debater-{c.debater + 1}", r, c.opinion if stage == "opinion" else c.reply, extra=extra)
                )
        return turns
