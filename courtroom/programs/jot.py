"""Judgment-of-Thought (SPEC §4.1): lawyer vs prosecutor over ``n_loops`` rounds, judged each round."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel
from courtroom.models.lms import RoleLMs
from courtroom.programs import _stopping as stopping
from courtroom.programs._base import CourtroomProgram, label_type, typed
from courtroom.signatures import jot
from courtroom.transcript import Turn

NONE = "(none)"


class JudgmentOfThought(CourtroomProgram):
    """JoT: the lawyer argues positions[0], the prosecutor positions[1]; the last judgment is the verdict.

    ``stop_when_stable=s`` (0: off, the paper; :mod:`courtroom.programs._stopping`): once the judge
    has made the same decision in s consecutive rounds the trial ends, that decision the verdict;
    never more than ``n_loops`` rounds, so it needs ``n_loops >= s + 1`` (refused otherwise). The
    prediction then has ``stopped_early``, and the judge's turn that stopped says so.

    Advocate turns record the label they argue (``extra["label"]``). :meth:`swapped` gives the
    lawyer positions[1] and the prosecutor positions[0], and lists the judge's choices in that order.
    """

    name = "jot"
    roles = ("lawyer", "prosecutor", "judge")
    binary_only = True
    swappable = True
    summary = "Judgment-of-Thought: lawyer and prosecutor argue over n_loops rounds; a judge decides each round."
    early_stop_knobs: ClassVar[dict[str, Any]] = {"stop_when_stable": 0}

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
        stop_when_stable: int = 0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if int(n_loops) < 1:
            raise ConfigError(f"jot: n_loops must be >= 1, got {n_loops}")
        k = stopping.check("jot", stop_when_stable, int(n_loops), "rounds", "n_loops")
        self.stop_when_stable = k
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
        self.judge = dspy.Predict(typed(jot.Judge, "decision", label_type(self.positions)))

    def _reorder(self, original: CourtroomProgram) -> None:
        self.judge.signature = typed(self.judge.signature, "decision", label_type(self.positions))

    def _stage(self, r: int, closing: bool) -> str:
        # No total count in the prompt: a 5-loop trial then shares its first rounds (and their
        # cache entries) with a 3-loop trial on the same case.
        kind = "opening" if r == 1 else "closing" if closing else "rebuttal"
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
        last = self.n_loops  # the closing round; a stable verdict (stop_when_stable) ends the trial sooner
        r = 0
        while r < last:
            r += 1
            stage = self._stage(r, closing=r == last)
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
            solo: dict[str, Any] = {}
            if len(outs) == 1:
                solo["signature"] = jot.solo_judge(self.judge.signature, next(iter(outs)))
            j = self.ask(
                "judge",
                self.judge,
                **solo,
                case=case,
                positive_position=pos,
                negative_position=neg,
                **arguments,
                judgment_round=f"judgment {r}" + (" (final)" if r == last else ""),
            )
            decisions.append(j.decision)
            extra = {f"feedback_to_{role}": j.get(f"feedback_to_{role}") for role in outs}
            if r < last and stopping.held(decisions, self.stop_when_stable):
                last = r
                extra["early_stop"] = stopping.note(decisions, self.stop_when_stable, r, self.n_loops)
            transcript.append(Turn("judge", r, j.analysis, decision=j.decision, extra=extra))
            if self.use_feedback:
                feedback = {role: j.get(f"feedback_to_{role}") or "" for role in ("lawyer", "prosecutor")}
        stopped = {"stopped_early": last < self.n_loops} if self.stop_when_stable else {}
        return self.verdict(self.label_of(decisions[-1]), transcript, judge_decisions=decisions, **stopped)
