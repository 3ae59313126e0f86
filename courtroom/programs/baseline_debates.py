"""Multi-agent baselines (SPEC §4.4): Khan et al. debate and Reflexion."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel
from courtroom.models.lms import RoleLMs
from courtroom.programs._base import CourtroomProgram, label_type, typed
from courtroom.programs._common import labels_text
from courtroom.signatures import baselines as sig
from courtroom.transcript import Turn

NONE = "(none)"


class KhanDebate(CourtroomProgram):
    """Khan et al. (2024) debate: two debaters assigned opposite answers argue for ``n_rounds`` rounds.

    Three rounds by default, as the JoT paper ran it ("For SC, Khan et al., and JoT, 3 loops were used").

    Binary tasks: debater 1 defends labels[0] and debater 2 labels[1]. Multi-class tasks: a cheap
    zero-shot ``classifier`` call names the two most likely labels (if it repeats itself, the
    second becomes the next label in order) and the debaters defend those; the judge may still pick
    any label. In each round both debaters speak concurrently, each seeing all earlier rounds.

    ``stop_on_concession`` (off by default): the debaters also state the answer they now hold (the
    Debater signature plus a ``now_holds`` field, :func:`courtroom.signatures.baselines.with_concession`,
    used only with this knob on), and the rounds stop once both hold the same answer; the judge
    then reads the shorter debate. The prediction has ``stopped_early``.
    :meth:`swapped` lists the labels in reverse order and gives each debater the other's answer.
    """

    name = "khan-debate"
    roles = ("classifier", "debater", "judge")
    swappable = True
    summary = "Khan et al. debate: two debaters with opposite answers argue r rounds; a judge decides."
    early_stop_knobs: ClassVar[dict[str, Any]] = {"stop_on_concession": False}

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        n_rounds: int = 3,
        stop_on_concession: bool = False,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if int(n_rounds) < 1:
            raise ConfigError(f"khan-debate: n_rounds must be >= 1, got {n_rounds}")
        if not isinstance(stop_on_concession, bool):
            raise ConfigError(
                f"khan-debate: stop_on_concession is a switch, got {stop_on_concession!r}; "
                "set stop_on_concession=true or false"
            )
        self.n_rounds, self.stop_on_concession = int(n_rounds), stop_on_concession
        lt = label_type(self.labels)
        self.classifier = dspy.Predict(typed(typed(sig.TopTwo, "first", lt), "second", lt))
        self.debater = dspy.Predict(sig.Debater)
        self.judge = dspy.Predict(typed(sig.DebateJudge, "decision", lt))

    def _reorder(self, original: CourtroomProgram) -> None:
        lt = label_type(self.labels)
        self.classifier.signature = typed(typed(self.classifier.signature, "first", lt), "second", lt)
        self.judge.signature = typed(self.judge.signature, "decision", lt)

    def _sides(self, case: str) -> tuple[list[str], list[Turn]]:
        if len(self.labels) == 2:
            return list(self.labels), []  # reversed in the swapped copy
        out = self.ask("classifier", self.classifier, case=case, labels=labels_text(self.labels))
        first, second = out.first, out.second
        if second == first:
            second = self.labels[(self.labels.index(first) + 1) % len(self.labels)]
        sides = [second, first] if self.sides_swapped else [first, second]
        return sides, [Turn("classifier", 0, f"top two: {first}, {second}", decision=first)]

    def forward(self, case: str) -> dspy.Prediction:
        """Debate ``case`` and judge."""
        sides, transcript = self._sides(case)
        history: list[str] = []
        concede: dict[str, Any] = (
            {"signature": sig.with_concession(self.debater.signature, label_type(self.labels))}
            if self.stop_on_concession
            else {}
        )
        r = 0
        while r < self.n_rounds:
            r += 1
            so_far = "\n".join(history) or NONE
            outs = run_parallel(
                [
                    functools.partial(
                        self.ask,
                        "debater",
                        self.debater,
                        **concede,
                        rollout=i,
                        case=case,
                        answer=sides[i],
                        opponent_answer=sides[1 - i],
                        debate_so_far=so_far,
                    )
                    for i in range(2)
                ]
            )
            for i, out in enumerate(outs):
                extra = {"answer": sides[i]} | ({"now_holds": out.now_holds} if concede else {})
                transcript.append(Turn(f"debater-{i + 1}", r, out.argument, extra=extra))
                history.append(f"Round {r}, debater {i + 1} (for {sides[i]}): {out.argument}")
            if concede and r < self.n_rounds and outs[0].now_holds == outs[1].now_holds:
                transcript[-1].extra["early_stop"] = (
                    f"both debaters hold {outs[0].now_holds}: debate stopped after round {r} of {self.n_rounds}"
                )
                break
        j = self.ask("judge", self.judge, case=case, labels=labels_text(self.labels), debate="\n".join(history))
        transcript.append(Turn("judge", r + 1, j.reason, decision=j.decision))
        stopped = {"stopped_early": r < self.n_rounds} if concede else {}
        return self.verdict(j.decision, transcript, sides=sides, **stopped)


class Reflexion(CourtroomProgram):
    """Reflexion (Shinn et al., 2023): answer, self-critique, retry up to ``max_retries`` times.

    The ``solver`` answers with reasoning; the ``critic`` (the same model unless routed elsewhere)
    checks it. If the critic accepts, or the retries are spent, the last answer is the verdict (the
    last attempt is not critiqued: nothing could follow from it).
    """

    name = "reflexion"
    roles = ("solver", "critic")
    summary = "Reflexion: answer, self-critique, retry up to max_retries times."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        max_retries: int = 1,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if int(max_retries) < 0:
            raise ConfigError(f"reflexion: max_retries must be >= 0, got {max_retries}")
        self.max_retries = int(max_retries)
        self.solver = dspy.Predict(typed(sig.Attempt, "answer", label_type(self.labels)))
        self.critic = dspy.Predict(sig.Critique)

    def forward(self, case: str) -> dspy.Prediction:
        """Answer ``case``, critique, and retry while the critic rejects."""
        labels = labels_text(self.labels)
        transcript: list[Turn] = []
        attempts: list[str] = []
        answers: list[str] = []
        for r in range(1, self.max_retries + 2):
            out = self.ask(
                "solver", self.solver, case=case, labels=labels, earlier_attempts="\n".join(attempts) or NONE
            )
            answers.append(out.answer)
            transcript.append(Turn("solver", r, out.reasoning, decision=out.answer))
            if r == self.max_retries + 1:
                break  # no retry left: a critique could not change the answer
            c = self.ask("critic", self.critic, case=case, labels=labels, answer=out.answer, reasoning=out.reasoning)
            transcript.append(Turn("critic", r, c.critique, extra={"accepted": bool(c.is_correct)}))
            if c.is_correct:
                break
            attempts.append(f"Attempt {r}: answered {out.answer}. Critique: {c.critique}")
        return self.verdict(answers[-1], transcript, attempts=answers)
