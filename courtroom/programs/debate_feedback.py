"""Debate-Feedback (SPEC §4.3, paper Algorithm 1): debate, verify reliability, smooth the judge.

Debaters argue, an assistant scores their reliability, and the judge's probability is updated
with smoothing when the reliability passes the threshold.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom._concurrency import run_parallel
from courtroom.errors import ConfigError
from courtroom.lms import RoleLMs
from courtroom.programs import _probability as prob
from courtroom.programs._base import CourtroomProgram, label_type
from courtroom.programs._common import labels_text, limit_words
from courtroom.programs._reliability import ReliabilityModel, reliability_text
from courtroom.signatures import debate as sig
from courtroom.transcript import Turn

NONE = "(none)"
RELIABILITY = ("none", "assistant", "llm")
VARIANTS = ("single", "assistant")
_STATE_KEY = "courtroom_reliability_model"


def correction_counts(
    golds: Sequence[str], initial_labels: Sequence[str], final_labels: Sequence[str]
) -> dict[str, int]:
    """The paper's smoothing table from gold, initial and final labels.

    Returns ``correction`` (initial wrong, final right), ``degradation`` (initial right, final
    wrong), ``kept_right``, ``kept_wrong`` and ``n``.
    """
    out = {"correction": 0, "degradation": 0, "kept_right": 0, "kept_wrong": 0, "n": 0}
    for gold, first, last in zip(golds, initial_labels, final_labels, strict=True):
        out["n"] += 1
        key = {
            (False, True): "correction",
            (True, False): "degradation",
            (True, True): "kept_right",
            (False, False): "kept_wrong",
        }[(first == gold, last == gold)]
        out[key] += 1
    return out


class DebateFeedback(CourtroomProgram):
    """Debate-Feedback: a judge's probability refined by ``n_rounds`` of debate.

    * **Initial estimate** O_0: a distribution over the labels from the ``judge``. ``prob_method``
      says how it is read: ``"field"`` (default; the judge states the probability of labels[0]
      for a binary task, or one probability per label, normalised, for multi-class),
      ``"votes"`` (the label vote share of ``k_samples`` judge samples, with rollout ids) or
      ``"logprobs"`` (the token log-probabilities of the chosen label; only for providers that
      return them, else a ConfigError).
    * **Debate step**: ``n_debaters`` debaters, debater i arguing labels[i mod K]. Each gives an
      opinion (within ``word_limit`` words, cut if longer), then reads the others' and replies.
      Debaters in a step run concurrently; later rounds see the earlier rounds' replies.
    * **Verification**: with ``variant="assistant"``, each debater's reply gets a reliability in
      [0, 1] from the assistant: ``reliability="assistant"`` is a scikit-learn model trained in
      :meth:`prepare` on single-variant debates over the training cases; ``"llm"`` asks the
      ``assistant`` role. ``variant="single"`` (or ``reliability="none"``) uses no assistant.
    * **Gate and smoothing**: the gate passes when the mean reliability is >= ``threshold``
      (always, without an assistant). Then the judge summarises the round and re-estimates in the
      same call (the summary field comes first, so the estimate reads it), and
      O_i = (1 - T) * O_{i-1} + T * estimate with T = ``smoothing``. Otherwise O_i is a fresh
      estimate on the case alone. The label is O_n's: labels[0] iff p >= 0.5 (binary), or argmax.

    Output fields: ``label``, ``transcript``, ``probabilities`` (O_0..O_n, each label -> p),
    ``initial_label``, ``reliabilities`` (per round) and ``gates`` (per round).
    """

    name = "debate-feedback"
    roles = ("judge", "debater", "assistant")
    summary = "Debate-Feedback: debaters argue, an assistant scores reliability, the judge smooths its probability."

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        n_rounds: int = 2,
        n_debaters: int = 2,
        word_limit: int = 200,
        smoothing: float = 0.5,
        threshold: float = 0.5,
        variant: str = "single",
        reliability: str = "assistant",
        prob_method: str = "field",
        k_samples: int = 3,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        checks = [
            (int(n_rounds) >= 1, f"n_rounds must be >= 1, got {n_rounds}"),
            (int(n_debaters) >= 2, f"n_debaters must be >= 2 (opposing perspectives), got {n_debaters}"),
            (int(word_limit) >= 0, f"word_limit must be >= 0 (0: no limit), got {word_limit}"),
            (0.0 <= float(smoothing) <= 1.0, f"smoothing T must be in [0, 1], got {smoothing}"),
            (0.0 <= float(threshold) <= 1.0, f"threshold must be in [0, 1], got {threshold}"),
            (variant in VARIANTS, f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}"),
            (
                reliability in RELIABILITY,
                f"unknown reliability {reliability!r}; use one of {', '.join(RELIABILITY)}",
            ),
            (
                prob_method in prob.PROB_METHODS,
                f"unknown prob_method {prob_method!r}; use one of {', '.join(prob.PROB_METHODS)}",
            ),
            (int(k_samples) >= 1, f"k_samples must be >= 1, got {k_samples}"),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"debate-feedback: {message}")
        self.n_rounds, self.n_debaters, self.word_limit = int(n_rounds), int(n_debaters), int(word_limit)
        self.smoothing, self.threshold = float(smoothing), float(threshold)
        self.variant, self.reliability, self.prob_method, self.k_samples = (
            variant,
            reliability,
            prob_method,
            int(k_samples),
        )
        self.reliability_model = ReliabilityModel()
        judge = prob.add_probability_fields(
            sig.Judge.with_updated_fields("label", type_=label_type(self.labels)), self.labels
        )
        self.judge = dspy.Predict(judge)
        self.debater = dspy.Predict(sig.Debater)
        self.assistant = dspy.Predict(sig.Assistant)

    @property
    def scorer(self) -> str:
        """The reliability actually used: ``none`` for the single variant."""
        return "none" if self.variant == "single" else self.reliability

    def position_of(self, d: int) -> str:
        """The label debater ``d`` (0-based) argues for: round-robin over the labels."""
        return self.labels[d % len(self.labels)]

    # -- training the assistant -----------------------------------------------------------------

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Train the assistant (``reliability="assistant"``) on single-variant debates over ``trainset``."""
        if self.scorer != "assistant":
            return
        texts: list[str] = []
        agrees: list[bool] = []
        batch = 4  # cases debated at once; each debate runs its debaters concurrently too
        for start in range(0, len(trainset), batch):
            chunk = trainset[start : start + batch]
            finals = [d[-1] for d in run_parallel([functools.partial(self._debate, ex.case) for ex in chunk])]
            for ex, replies in zip(chunk, finals, strict=True):
                for d, reply in enumerate(replies):
                    texts.append(reliability_text(ex.case, reply))
                    agrees.append(self.position_of(d) == ex.label)
        self.reliability_model.fit(texts, agrees)

    def _debate(self, case: str) -> list[list[str]]:
        """Single-variant debate rounds (no judge): each round's replies."""
        replies: list[list[str]] = []
        for r in range(1, self.n_rounds + 1):
            _, rep, _ = self._round(case, r, replies[-1] if replies else None)
            replies.append(rep)
        return replies

    # -- one round ---------------------------------------------------------------------------------

    def _speak(self, case: str, d: int, stage: str, previous: str, others: str) -> tuple[str, bool]:
        limit = f"at most {self.word_limit} words" if self.word_limit else "no limit"
        out = self.ask(
            "debater",
            self.debater,
            rollout=d,
            case=case,
            labels=labels_text(self.labels),
            position=self.position_of(d),
            stage=stage,
            previous_rounds=previous,
            other_opinions=others,
            word_limit=limit,
        )
        return limit_words(out.opinion, self.word_limit)

    def _round(self, case: str, r: int, last: list[str] | None) -> tuple[list[str], list[str], list[Turn]]:
        previous = (
            NONE
            if last is None
            else "\n".join(f"Expert {d + 1} (for {self.position_of(d)}): {t}" for d, t in enumerate(last))
        )
        n = range(self.n_debaters)
        opinions = run_parallel([functools.partial(self._speak, case, d, "opinion", previous, NONE) for d in n])
        ops = [o for o, _ in opinions]

        def others(d: int) -> str:
            return "\n".join(f"Expert {j + 1} (for {self.position_of(j)}): {ops[j]}" for j in n if j != d)

        replies = run_parallel([functools.partial(self._speak, case, d, "reply", previous, others(d)) for d in n])
        turns = [
            Turn(
                f"debater-{d + 1}",
                r,
                text,
                extra={"position": self.position_of(d), "stage": stage} | ({"truncated": True} if cut else {}),
            )
            for stage, said in (("opinion", opinions), ("reply", replies))
            for d, (text, cut) in enumerate(said)
        ]
        return ops, [t for t, _ in replies], turns

    def _reliabilities(self, case: str, replies: list[str]) -> list[float]:
        if self.scorer == "assistant":
            return self.reliability_model.score([reliability_text(case, t) for t in replies])
        if self.scorer == "llm":
            outs = run_parallel(
                [
                    functools.partial(
                        self.ask,
                        "assistant",
                        self.assistant,
                        rollout=d,
                        case=case,
                        position=self.position_of(d),
                        comment=replies[d],
                    )
                    for d in range(len(replies))
                ]
            )
            return [prob.clamp(o.reliability) for o in outs]
        return []

    # -- the judge -------------------------------------------------------------------------------

    def _estimate(self, case: str, debate: str, rollout: int) -> tuple[dict[str, float], str]:
        """A distribution over the labels (read per ``prob_method``) and the judge's summary."""
        inputs: dict[str, Any] = {"case": case, "labels": labels_text(self.labels), "debate": debate}
        if self.prob_method == "votes":
            outs = run_parallel(
                [
                    functools.partial(self.ask, "judge", self.judge, rollout=rollout * self.k_samples + s, **inputs)
                    for s in range(self.k_samples)
                ]
            )
            return prob.from_votes([o.label for o in outs], self.labels), outs[0].summary
        if self.prob_method == "logprobs":
            out = self.ask("judge", self.judge, rollout=rollout, lm_config={"logprobs": True}, **inputs)
            return prob.from_logprobs(out, self.labels), out.summary
        out = self.ask("judge", self.judge, rollout=rollout, **inputs)
        return prob.from_fields(out, self.labels), out.summary

    def forward(self, case: str) -> dspy.Prediction:
        """Debate ``case``; ``label`` follows the final smoothed probability O_n."""
        if self.scorer == "assistant" and not self.reliability_model.fitted:
            raise ConfigError(
                "debate-feedback: the assistant is not trained; call program.prepare(trainset) "
                "first, or use reliability='llm' or variant='single'"
            )
        o, _ = self._estimate(case, NONE, 0)
        initial = prob.decide(o, self.labels)
        history = [o]
        transcript = [Turn("judge", 0, "initial estimate O_0 on the case alone", decision=initial, extra={"O": o})]
        reliabilities: list[list[float]] = []
        gates: list[bool] = []
        last: list[str] | None = None
        for r in range(1, self.n_rounds + 1):
            ops, replies, turns = self._round(case, r, last)
            last = replies
            transcript += turns
            rel = self._reliabilities(case, replies)
            reliabilities.append(rel)
            mean = sum(rel) / len(rel) if rel else None
            passed = mean is None or mean >= self.threshold
            gates.append(passed)
            if rel:
                transcript.append(
                    Turn(
                        "assistant",
                        r,
                        f"mean reliability {mean:.3f} (threshold {self.threshold})",
                        extra={"reliabilities": rel, "method": self.scorer, "gate": passed},
                    )
                )
            if passed:
                debate = self._debate_text(ops, replies, rel)
                new, summary = self._estimate(case, debate, r)
                o = prob.smooth(o, new, self.smoothing)
                text = summary
            else:
                new, _ = self._estimate(case, NONE, r)
                o = new
                text = "gate failed: fresh estimate on the case alone, debate ignored"
            history.append(o)
            transcript.append(
                Turn(
                    "judge",
                    r,
                    text,
                    decision=prob.decide(o, self.labels),
                    extra={"estimate": new, "O": o, "gate": passed},
                )
            )
        return self.verdict(
            prob.decide(o, self.labels),
            transcript,
            probabilities=history,
            initial_label=initial,
            reliabilities=reliabilities,
            gates=gates,
        )

    def _debate_text(self, ops: list[str], replies: list[str], rel: list[float]) -> str:
        lines = []
        for d, (op, rep) in enumerate(zip(ops, replies, strict=True)):
            score = f" (reliability {rel[d]:.2f})" if rel else ""
            lines.append(f"Expert {d + 1} for {self.position_of(d)}{score}:\n  opinion: {op}\n  reply: {rep}")
        return "\n".join(lines)

    # -- saving the assistant without pickle -----------------------------------------------------------

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        """DSPy state plus the assistant model as JSON lists."""
        return super().dump_state(json_mode=json_mode) | {_STATE_KEY: self.reliability_model.to_dict()}

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> DebateFeedback:
        """Inverse of :meth:`dump_state`."""
        state = dict(state)
        saved = state.pop(_STATE_KEY, None)
        super().load_state(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        if saved is not None:
            self.reliability_model = ReliabilityModel.from_dict(saved)
        return self
