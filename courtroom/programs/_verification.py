"""Debate-Feedback's verification step (Algorithm 1, Table 1, Table 4 step 3): statements and reliabilities.

A mixin of :class:`courtroom.programs.debate_feedback.DebateFeedback`: what the assistant reads
(each debater's reply, or the per-debater summary of its statement), how it scores it (the trained
:class:`~courtroom.programs._reliability.ReliabilityModel`, or the ``assistant`` LM), and training
the model on single-variant debates over the training split.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

import dspy

from courtroom.models._concurrency import run_parallel
from courtroom.programs import _debate as deb
from courtroom.programs import _probability as prob
from courtroom.programs._reliability import ReliabilityModel, quality_lines, reliability_text, train_assistant
from courtroom.transcript import Turn

ASSISTANT_INPUTS = ("summary", "reply")


class Verification:
    """Statements, reliabilities and the assistant's training, for :class:`DebateFeedback`."""

    # Set by DebateFeedback.__init__.
    labels: list[str]
    n_rounds: int
    variant: str
    reliability: str
    assistant_input: str
    reliability_model: ReliabilityModel
    summarizer: dspy.Predict
    assistant: dspy.Predict
    ask: Any
    _round: Any
    _sides: Any

    @property
    def scorer(self) -> str:
        """The reliability actually used: ``none`` for the single variant."""
        return "none" if self.variant == "single" else self.reliability

    def _statements(self, r: int, comments: Sequence[deb.Comment]) -> tuple[list[str], list[Turn]]:
        """What the assistant reads of each debater: its reply, or a summary of its statement (Table 4 step 3)."""
        if self.assistant_input == "reply":
            return [c.reply for c in comments], []
        outs = run_parallel(
            [
                functools.partial(self.ask, "summarizer", self.summarizer, rollout=r, debate=deb.debate_text([c], None))
                for c in comments
            ]
        )
        texts = [o.summary for o in outs]
        turns = [
            Turn("summarizer", r, t, extra={"of": f"debater-{c.debater + 1}", "for": "assistant"})
            for c, t in zip(comments, texts, strict=True)
        ]
        return texts, turns

    def _reliabilities(self, case: str, comments: Sequence[deb.Comment], statements: Sequence[str]) -> list[float]:
        """Each comment's reliability from its statement and stated stance."""
        if self.scorer == "assistant":
            return self.reliability_model.score(
                [reliability_text(case, s) for s in statements], [c.stance for c in comments]
            )
        outs = run_parallel(
            [
                functools.partial(
                    self.ask, "assistant", self.assistant, rollout=c.debater, case=case, stance=c.stance, comment=s
                )
                for c, s in zip(comments, statements, strict=True)
            ]
        )
        return [prob.clamp(o.reliability) for o in outs]

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Train the assistant (``reliability="assistant"``) on single-variant debates over ``trainset``.

        Each debater's statement in every round is one sample: (case + statement, stated stance) ->
        whether the stance equals the gold label (Table 1's "Ground_truth XOR Debater's position",
        complemented so that high means reliable). The statement is what the assistant will
        read (``assistant_input``). A fifth of the cases is held out to measure the model first
        (:func:`courtroom.programs._reliability.train_assistant`).
        """
        if self.scorer != "assistant":
            return
        texts: list[str] = []
        stances: list[str] = []
        agrees: list[bool] = []
        cases: list[int] = []
        rounds: list[int] = []
        batch = 4  # cases debated at once; each debate runs its debaters concurrently too
        for start in range(0, len(trainset), batch):
            chunk = trainset[start : start + batch]
            debates = run_parallel([functools.partial(self._training_debate, ex.case) for ex in chunk])
            for i, (ex, debate) in enumerate(zip(chunk, debates, strict=True), start):
                for r, (comments, statements) in enumerate(debate, 1):
                    for c, s in zip(comments, statements, strict=True):
                        texts.append(reliability_text(ex.case, s))
                        stances.append(c.stance)
                        agrees.append(c.stance == ex.label)
                        cases.append(i)
                        rounds.append(r)
        self.reliability_model = train_assistant(texts, stances, agrees, cases, rounds)

    def _training_debate(self, case: str) -> list[tuple[list[deb.Comment], list[str]]]:
        """The rounds of a single-variant debate, each with what the assistant reads of every debater."""
        sides = self._sides(case)
        out: list[tuple[list[deb.Comment], list[str]]] = []
        pool: dict[int, Any] = {}  # a training debate runs every round: opinions asked ahead (deb._opinions)
        for r in range(1, self.n_rounds + 1):
            comments = self._round(case, r, sides, [c for c, _ in out], pool)
            out.append((comments, self._statements(r, comments)[0]))
        return out

    def prepare_report(self) -> dict[str, float]:
        """The assistant's held-out quality, as the run summary prints it (empty without a trained assistant)."""
        if self.scorer != "assistant":
            return {}
        return quality_lines(self.reliability_model.quality)
