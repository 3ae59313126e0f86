"""Single-model baselines (SPEC §4.4): zero-shot, few-shot, CoT, self-consistency, parallel vote.

The multi-agent baselines live in :mod:`courtroom.programs.baseline_debates`.

Every label output is a ``Literal`` over the task's labels, so constrained decoding always yields a
valid label. Majority votes break ties in favour of the first sample's answer (the one a single
model would have given), then label order.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom._concurrency import run_parallel
from courtroom.errors import ConfigError
from courtroom.lms import RoleLMs
from courtroom.programs._base import CourtroomProgram, label_type
from courtroom.programs._common import labels_text, majority, seeded_rng
from courtroom.signatures import baselines as sig
from courtroom.transcript import Turn


def _at_least(name: str, knob: str, value: int, low: int) -> int:
    if int(value) < low:
        raise ConfigError(f"{name}: {knob} must be >= {low}, got {value}; set {knob}={low} or more")
    return int(value)


class ZeroShot(CourtroomProgram):
    """One model answers once, with no examples."""

    name = "zero-shot"
    roles = ("classifier",)
    summary = "Single model, zero-shot: one answer."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        self.classifier = dspy.Predict(sig.Classify.with_updated_fields("answer", type_=label_type(self.labels)))

    def forward(self, case: str) -> dspy.Prediction:
        """Classify ``case``."""
        out = self.ask("classifier", self.classifier, case=case, labels=labels_text(self.labels))
        return self.verdict(out.answer, [Turn("classifier", 1, f"answer: {out.answer}", decision=out.answer)])


class FewShot(ZeroShot):
    """One model answers once, shown ``k_shots`` labelled training cases drawn with ``seed``."""

    name = "few-shot"
    summary = "Single model, few-shot: k labelled training cases as demos."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        k_shots: int = 3,
        seed: int = 0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        self.k_shots = _at_least(self.name, "k_shots", k_shots, 0)
        self.seed = int(seed)

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Draw the demos (seeded) from the training cases."""
        if self.k_shots > len(trainset):
            raise ConfigError(
                f"few-shot: k_shots={self.k_shots} but the training set has {len(trainset)} cases; "
                "lower k_shots or pass more training cases"
            )
        picked = seeded_rng(self.seed, "few-shot").sample(range(len(trainset)), self.k_shots)
        self.classifier.demos = [
            dspy.Example(case=trainset[i].case, labels=labels_text(self.labels), answer=trainset[i].label)
            for i in picked
        ]

    def forward(self, case: str) -> dspy.Prediction:
        """Classify ``case`` with the demos in the prompt."""
        if self.k_shots and not self.classifier.demos:
            raise ConfigError("few-shot: no demos; call program.prepare(trainset) first or set k_shots=0")
        return super().forward(case)


class ChainOfThought(CourtroomProgram):
    """One model reasons step by step, then answers."""

    name = "cot"
    roles = ("classifier",)
    summary = "Single model, chain-of-thought: reasoning then answer."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        self.classifier = dspy.Predict(sig.Reason.with_updated_fields("answer", type_=label_type(self.labels)))

    def _sample(self, case: str, i: int) -> tuple[str, Turn]:
        out = self.ask("classifier", self.classifier, rollout=i, case=case, labels=labels_text(self.labels))
        return out.answer, Turn("classifier", i + 1, out.reasoning, decision=out.answer, extra={"sample": i + 1})

    def forward(self, case: str) -> dspy.Prediction:
        """Reason about ``case`` and answer."""
        answer, turn = self._sample(case, 0)
        return self.verdict(answer, [turn])


class SelfConsistency(ChainOfThought):
    """``k_samples`` chain-of-thought samples (rollout ids), majority vote."""

    name = "self-consistency"
    summary = "Self-consistency: k chain-of-thought samples, majority vote."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        k_samples: int = 3,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        self.k_samples = _at_least(self.name, "k_samples", k_samples, 1)

    def forward(self, case: str) -> dspy.Prediction:
        """Sample ``k_samples`` reasoned answers concurrently and take the majority."""
        samples = run_parallel([functools.partial(self._sample, case, i) for i in range(self.k_samples)])
        votes = [a for a, _ in samples]
        return self.verdict(majority(votes, self.labels, prefer=votes[0]), [t for _, t in samples], votes=votes)


class ParallelVote(ZeroShot):
    """The papers' Parallel N-LLMs: ``n_models`` independent zero-shot answers, majority vote."""

    name = "parallel-vote"
    summary = "Parallel N-LLMs: N independent answers, majority vote."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        n_models: int = 3,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        self.n_models = _at_least(self.name, "n_models", n_models, 1)

    def forward(self, case: str) -> dspy.Prediction:
        """Ask ``n_models`` times concurrently and take the majority."""
        outs = run_parallel(
            [
                functools.partial(
                    self.ask, "classifier", self.classifier, rollout=i, case=case, labels=labels_text(self.labels)
                )
                for i in range(self.n_models)
            ]
        )
        votes = [o.answer for o in outs]
        turns = [Turn("classifier", 1, f"answer: {v}", decision=v, extra={"model": i + 1}) for i, v in enumerate(votes)]
        return self.verdict(majority(votes, self.labels, prefer=votes[0]), turns, votes=votes)
