"""Judgment-of-Thought (SPEC §4.1): lawyer vs prosecutor over ``n_loops`` rounds, judged each round."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom._concurrency import run_parallel
from courtroom.errors import ConfigError
from courtroom.lms import RoleLMs
from courtroom.programs._base import CourtroomProgram, label_type
from courtroom.signatures import jot
from courtroom.transcript import Turn

NONE = "(none)"


class JudgmentOfThought(CourtroomProgram):
    """JoT: the lawyer argues positions[0], the prosecutor positions[1]; the last judgment is the verdict.

    Advocate turns record the label they argue (``extra["label"]``). :meth:`swapped` gives the
    lawyer positions[1] and the prosecutor positions[0], and lists the judge's choices in that order.
    """

    name = "jot"
    roles = ("lawyer", "prosecutor", "judge")
    binary_only = True
    swappable = True
    summary = "Judgment-of-Thought: lawyer and prosecutor argue over n_loops rounds; a judge decides each round."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        n_loops: int = 3,
        use_lawyer: bool = True,
        use_prosecutor: bool = True,
        use_feedback: bool = True,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if int(n_loops) < 1:
            raise ConfigError(f"jot: n_loops must be >= 1, got {n_loops}")
        if not (use_lawyer or use_prosecutor):
            raise ConfigError("jot: at least one of the lawyer and the prosecutor must take part")
        self.n_loops = int(n_loops)
        self.use_lawyer, self.use_prosecutor, self.use_feedback = (
            bool(use_lawyer),
            bool(use_prosecutor),
            bool(use_feedback),
        )
        # One predictor per role, whatever the ablation, so saved state has one shape.
        self.lawyer = dspy.Predict(jot.Lawyer)
        self.prosecutor = dspy.Predict(jot.Prosecutor)
        self.judge = dspy.Predict(jot.Judge.with_updated_fields("decision", type_=label_type(self.positions)))

    def _reorder(self, original: CourtroomProgram) -> None:
        self.judge.signature = self.judge.signature.with_updated_fields("decision", type_=label_type(self.positions))

    def _stage(self, r: int) -> str:
        # No total count in the prompt: a 5-loop trial then shares its first rounds (and their
        # cache entries) with a 3-loop trial on the same case.
        kind = "opening" if r == 1 else "closing" if r == self.n_loops else "rebuttal"
        return f"{kind} (utterance {r}): {jot.STAGES[kind]}"

    @staticmethod
    def _earlier(arguments: list[str]) -> str:
        return "\n".join(f"Utterance {i}: {a}" for i, a in enumerate(arguments, 1)) or NONE

    def forward(self, case: str) -> dspy.Prediction:
        """Run the trial on ``case``; ``label`` is the final judgment."""
        pos, neg = self.positions
        transcript: list[Turn] = []
        lawyer_arg = prosecutor_arg = ""
        feedback = {"lawyer": "", "prosecutor": ""}
        earlier: dict[str, list[str]] = {"lawyer": [], "prosecutor": []}
        decisions: list[str] = []
        for r in range(1, self.n_loops + 1):
            stage = self._stage(r)
            calls: dict[str, Any] = {}
            if self.use_lawyer:
                calls["lawyer"] = functools.partial(
                    self.ask,
                    "lawyer",
                    self.lawyer,
                    case=case,
                    position=pos,
                    opposing_position=neg,
                    stage=stage,
                    own_earlier_arguments=self._earlier(earlier["lawyer"]),
                    opponent_argument=prosecutor_arg or NONE,
                    judge_feedback=feedback["lawyer"] or NONE,
                )
            if self.use_prosecutor:
                calls["prosecutor"] = functools.partial(
                    self.ask,
                    "prosecutor",
                    self.prosecutor,
                    case=case,
                    position=neg,
                    opposing_position=pos,
                    stage=stage,
                    own_earlier_arguments=self._earlier(earlier["prosecutor"]),
                    opponent_argument=lawyer_arg or NONE,
                    judge_feedback=feedback["prosecutor"] or NONE,
                )
            outs = dict(zip(calls, run_parallel(list(calls.values())), strict=True))
            for role, out in outs.items():
                earlier[role].append(out.argument)
            argues = {"lawyer": self.label_of(pos), "prosecutor": self.label_of(neg)}
            for role in ("lawyer", "prosecutor"):
                if role in outs:
                    transcript.append(
                        Turn(
                            role,
                            r,
                            outs[role].argument,
                            extra={"stage": stage.split(" ")[0], "label": argues[role]}
                            | ({"saw_feedback": feedback[role]} if feedback[role] else {}),
                        )
                    )
            lawyer_arg = outs["lawyer"].argument if "lawyer" in outs else ""
            prosecutor_arg = outs["prosecutor"].argument if "prosecutor" in outs else ""
            arguments = {f"{role}_argument": out.argument for role, out in outs.items()}
            solo = {} if len(outs) == 2 else {"signature": jot.solo_judge(self.judge.signature, next(iter(outs)))}
            j = self.ask(
                "judge",
                self.judge,
                **solo,
                case=case,
                positive_position=pos,
                negative_position=neg,
                **arguments,
                judgment_round=f"judgment {r}" + (" (final)" if r == self.n_loops else ""),
            )
            decisions.append(j.decision)
            transcript.append(
                Turn(
                    "judge",
                    r,
                    j.analysis,
                    decision=j.decision,
                    extra={f"feedback_to_{role}": j.get(f"feedback_to_{role}") for role in outs},
                )
            )
            if self.use_feedback:
                feedback = {role: j.get(f"feedback_to_{role}") or "" for role in ("lawyer", "prosecutor")}
        return self.verdict(self.label_of(decisions[-1]), transcript, judge_decisions=decisions)
