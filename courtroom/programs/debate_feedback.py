"""Debate-Feedback (SPEC §4.3, paper Algorithm 1): debate, verify reliability, smooth the judge.

Debaters argue, an assistant scores the reliability of each final comment, and the judge's
probability is updated with smoothing from the comments that pass the threshold.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel
from courtroom.models.lms import RoleLMs
from courtroom.programs import _debate as deb
from courtroom.programs import _probability as prob
from courtroom.programs._base import CourtroomProgram, label_type
from courtroom.programs._common import labels_text, limit_words
from courtroom.programs._reliability import ReliabilityModel, reliability_text
from courtroom.signatures import debate as sig
from courtroom.transcript import Turn

NONE = deb.NONE
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

    * **Initial estimate** O_0 = LM(x): the ``judge`` on the case alone. ``prob_method`` says how the
      distribution is read: ``"field"`` (default: one probability per label, each field naming its
      label, normalised and checked against the written label, see
      :func:`courtroom.programs._probability.from_fields`), ``"votes"`` (the vote share of
      ``k_samples`` judge samples) or ``"logprobs"`` (token log-probabilities of the chosen label).
    * **Who argues what**: binary tasks split the ``n_debaters`` evenly between the two labels, an
      odd one out arguing without an assigned side; multi-class tasks give the debaters the labels
      O_0 ranks highest (:func:`courtroom.programs._debate.perspectives`).
    * **Debate step**, every round starting from the case (Algorithm 1): each debater gives an
      opinion (within ``word_limit`` words, cut if longer), then replies seeing its own opinion and
      the others', and states its final stance (a label).
    * **Verification and gate**: with ``variant="assistant"`` each final comment (reply) gets a
      reliability: ``reliability="assistant"`` is a scikit-learn model trained in :meth:`prepare` on
      single-variant debates over the training cases, on the stated stance against the gold label
      (Table 1); ``"llm"`` asks the ``assistant`` role. The comments whose reliability reaches
      ``threshold`` go to the judge with their scores; the single variant passes every comment.
      If none passes, O_i = O_0, reused with no new call.
    * **Summary, then estimate** (Table 4, step 4): the ``summarizer`` (the judge's model unless
      routed elsewhere) summarises the passing comments, sum = LM(a, e, v); then the judge, shown
      its initial prediction, gives LM(x, sum). ``summarize=False`` merges the two for cost: the
      judge reads the passing comments themselves. O_i = (1 - T) * O_{i-1} + T * LM(x, sum) with
      T = ``smoothing``.
    * **Label**: the most probable label of O_n; a tie (exactly 0.5 on a binary task) goes to the
      initial prediction.
    * **Early stop** (``stop_epsilon``; 0: off, the paper): the rounds stop once O moves less than
      epsilon in a round, the move being max over labels of |O_i - O_{i-1}|
      (:func:`courtroom.programs._probability.max_change`); the label is then that of O_i. The
      judge's turns carry ``change``, the prediction ``stopped_early``. Training debates in
      :meth:`prepare` (no judge) always run every round.

    Output fields: ``label``, ``transcript``, ``probabilities`` (O_0..O_n), ``initial_label``,
    ``sides`` (debater -> assigned label or None), ``stances`` and ``reliabilities`` (per round,
    per debater), ``passed`` (per round, the debaters whose comments reached the judge) and
    ``gates`` (per round, whether any did).
    """

    name = "debate-feedback"
    roles = ("judge", "summarizer", "debater", "assistant")
    summary = "Debate-Feedback: debaters argue, an assistant scores reliability, the judge smooths its probability."
    # The paper gives no temperature; 1.0 is the default of the OpenAI API its GPT-4o runs used.
    sampling_temperatures: ClassVar[dict[str, float]] = {"judge": 1.0, "debater": 1.0}
    early_stop_knobs: ClassVar[dict[str, Any]] = {"stop_epsilon": 0.0}

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
        summarize: bool = True,
        stop_epsilon: float = 0.0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        checks = [
            (int(n_rounds) >= 1, f"n_rounds must be >= 1, got {n_rounds}"),
            (int(n_debaters) >= 2, f"n_debaters must be >= 2 (opposing perspectives), got {n_debaters}"),
            (int(word_limit) >= 0, f"word_limit must be >= 0 (0: no limit), got {word_limit}"),
            (0.0 <= float(smoothing) <= 1.0, f"smoothing T must be in [0, 1], got {smoothing}"),
            (0.0 <= float(threshold) <= 1.0, f"threshold must be in [0, 1], got {threshold}"),
            (variant in VARIANTS, f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}"),
            (reliability in RELIABILITY, f"unknown reliability {reliability!r}; use one of {', '.join(RELIABILITY)}"),
            (
                prob_method in prob.PROB_METHODS,
                f"unknown prob_method {prob_method!r}; use one of {', '.join(prob.PROB_METHODS)}",
            ),
            (int(k_samples) >= 1, f"k_samples must be >= 1, got {k_samples}"),
            (
                isinstance(stop_epsilon, int | float)
                and not isinstance(stop_epsilon, bool)
                and 0.0 <= stop_epsilon <= 1.0,
                f"stop_epsilon must be in [0, 1] (0: off; e.g. 0.05), got {stop_epsilon!r}",
            ),
        ]
        for ok, message in checks:
            if not ok:
                raise ConfigError(f"debate-feedback: {message}")
        self.n_rounds, self.n_debaters, self.word_limit = int(n_rounds), int(n_debaters), int(word_limit)
        self.smoothing, self.threshold = float(smoothing), float(threshold)
        self.variant, self.reliability, self.prob_method = variant, reliability, prob_method
        self.k_samples, self.summarize, self.stop_epsilon = int(k_samples), bool(summarize), float(stop_epsilon)
        if "summarizer" not in self.lms and "judge" in self.lms:
            # The paper's judge writes the summary: same model unless the summarizer is routed elsewhere.
            self.lms = RoleLMs({**self.lms, "summarizer": self.lms["judge"]})
        self.reliability_model = ReliabilityModel()
        lt = label_type(self.labels)
        self.judge = dspy.Predict(
            prob.add_probability_fields(sig.Judge.with_updated_fields("label", type_=lt), self.labels)
        )
        self.summarizer = dspy.Predict(sig.Summarize)
        self.debater = dspy.Predict(sig.Debater.with_updated_fields("stance", type_=lt))
        self.assistant = dspy.Predict(sig.Assistant)

    @property
    def scorer(self) -> str:
        """The reliability actually used: ``none`` for the single variant."""
        return "none" if self.variant == "single" else self.reliability

    def sampled_roles(self) -> dict[str, int]:
        """Debaters' opinion prompts repeat every round; judge votes repeat ``k_samples`` times."""
        out = {"debater": self.n_rounds}
        if self.prob_method == "votes":
            out["judge"] = self.k_samples
        return {r: n for r, n in out.items() if n > 1}

    # -- the debate step -------------------------------------------------------------------------

    def _speak(self, case: str, r: int, d: int, side: str | None, own: str, others: str) -> dspy.Prediction:
        return self.ask(
            "debater",
            self.debater,
            rollout=(r - 1) * self.n_debaters + d,
            case=case,
            labels=labels_text(self.labels),
            perspective=deb.perspective_text(side),
            stage="reply" if own != NONE else "opinion",
            own_opinion=own,
            other_opinions=others,
            word_limit=f"at most {self.word_limit} words" if self.word_limit else "no limit",
        )

    def _round(self, case: str, r: int, sides: Sequence[str | None]) -> list[deb.Comment]:
        """Opinions from the case alone, then replies that see their own opinion and the others'."""
        n = range(len(sides))
        ops = run_parallel([functools.partial(self._speak, case, r, d, sides[d], NONE, NONE) for d in n])
        cut_ops = [limit_words(o.opinion, self.word_limit) for o in ops]
        said = [(d, sides[d], cut_ops[d][0]) for d in n]
        replies = run_parallel(
            [functools.partial(self._speak, case, r, d, sides[d], cut_ops[d][0], deb.others_text(said, d)) for d in n]
        )
        out = []
        for d, reply in zip(n, replies, strict=True):
            text, cut = limit_words(reply.opinion, self.word_limit)
            out.append(deb.Comment(d, sides[d], cut_ops[d][0], text, reply.stance, cut_ops[d][1], cut))
        return out

    def _reliabilities(self, case: str, comments: Sequence[deb.Comment]) -> dict[int, float] | None:
        if self.scorer == "assistant":
            scores = self.reliability_model.score([reliability_text(case, c.reply) for c in comments])
            return {c.debater: s for c, s in zip(comments, scores, strict=True)}
        if self.scorer == "llm":
            outs = run_parallel(
                [
                    functools.partial(
                        self.ask,
                        "assistant",
                        self.assistant,
                        rollout=c.debater,
                        case=case,
                        stance=c.stance,
                        comment=c.reply,
                    )
                    for c in comments
                ]
            )
            return {c.debater: prob.clamp(o.reliability) for c, o in zip(comments, outs, strict=True)}
        return None

    # -- training the assistant -----------------------------------------------------------------

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Train the assistant (``reliability="assistant"``) on single-variant debates over ``trainset``.

        Each final comment of every round is one sample: (case + comment) -> whether the stance the
        debater stated equals the gold label (Table 1).
        """
        if self.scorer != "assistant":
            return
        texts: list[str] = []
        agrees: list[bool] = []
        batch = 4  # cases debated at once; each debate runs its debaters concurrently too
        for start in range(0, len(trainset), batch):
            chunk = trainset[start : start + batch]
            debates = run_parallel([functools.partial(self._training_debate, ex.case) for ex in chunk])
            for ex, rounds in zip(chunk, debates, strict=True):
                for comment in (c for comments in rounds for c in comments):
                    texts.append(reliability_text(ex.case, comment.reply))
                    agrees.append(comment.stance == ex.label)
        self.reliability_model.fit(texts, agrees)

    def _training_debate(self, case: str) -> list[list[deb.Comment]]:
        """The debate rounds of a single-variant run (multi-class sides need O_0 first)."""
        o0 = self._estimate(case, NONE, NONE, 0)[0] if len(self.labels) > 2 else {}
        sides = deb.perspectives(self.labels, self.n_debaters, o0)
        return [self._round(case, r, sides) for r in range(1, self.n_rounds + 1)]

    # -- the judge -------------------------------------------------------------------------------

    def _estimate(self, case: str, initial: str, summary: str, rollout: int) -> tuple[dict[str, float], str, bool]:
        """(distribution over the labels, the written label, whether they agreed)."""
        inputs: dict[str, Any] = {
            "case": case,
            "labels": labels_text(self.labels),
            "initial_prediction": initial,
            "debate_summary": summary,
        }
        if self.prob_method == "votes":
            outs = run_parallel(
                [
                    functools.partial(self.ask, "judge", self.judge, rollout=rollout * self.k_samples + s, **inputs)
                    for s in range(self.k_samples)
                ]
            )
            dist = prob.from_votes([o.label for o in outs], self.labels)
            return dist, prob.decide(dist, self.labels, tie=outs[0].label), True
        if self.prob_method == "logprobs":
            out = self.ask("judge", self.judge, rollout=rollout, lm_config={"logprobs": True}, **inputs)
            return prob.from_logprobs(out, self.labels), out.label, True
        out = self.ask("judge", self.judge, rollout=rollout, **inputs)
        dist, agreed = prob.from_fields(out, self.labels)
        return dist, out.label, agreed

    def _initial_text(self, label: str, dist: Mapping[str, float]) -> str:
        probs = ", ".join(f"{lab}: {p:.2f}" for lab, p in dist.items())
        return f"Your initial prediction on the case alone was {label} ({probs})."

    def forward(self, case: str) -> dspy.Prediction:
        """Debate ``case``; ``label`` follows the final smoothed probability O_n."""
        if self.scorer == "assistant" and not self.reliability_model.fitted:
            raise ConfigError(
                "debate-feedback: the assistant is not trained; call program.prepare(trainset) "
                "first, or use reliability='llm' or variant='single'"
            )
        o0, written, agreed = self._estimate(case, NONE, NONE, 0)
        initial = prob.decide(o0, self.labels, tie=written)
        o, history = o0, [o0]
        transcript = [
            Turn(
                "judge",
                0,
                "initial estimate O_0 on the case alone",
                decision=initial,
                extra={"O": o0, "written_label": written, "agreed": agreed},
            )
        ]
        sides = deb.perspectives(self.labels, self.n_debaters, o0)
        stances: list[list[str]] = []
        reliabilities: list[list[float]] = []
        passed_by_round: list[list[int]] = []
        for r in range(1, self.n_rounds + 1):
            comments = self._round(case, r, sides)
            stances.append([c.stance for c in comments])
            transcript += self._debate_turns(r, comments)
            rel = self._reliabilities(case, comments)
            passed = [c for c in comments if rel is None or rel[c.debater] >= self.threshold]
            reliabilities.append([rel[c.debater] for c in comments] if rel else [])
            passed_by_round.append([c.debater + 1 for c in passed])
            if rel is not None:
                transcript.append(
                    Turn(
                        "assistant",
                        r,
                        f"reliabilities {[round(v, 3) for v in rel.values()]} "
                        f"(threshold {self.threshold}); passed: {passed_by_round[-1] or 'none'}",
                        extra={
                            "reliabilities": list(rel.values()),
                            "method": self.scorer,
                            "passed": passed_by_round[-1],
                        },
                    )
                )
            if not passed:
                o = o0  # Algorithm 1's else branch: O_i = LM(x), the initial prediction, reused
                transcript.append(
                    Turn(
                        "judge",
                        r,
                        "no comment passed the gate: O_i = O_0 (no new call)",
                        decision=prob.decide(o, self.labels, tie=initial),
                        extra={"O": o, "gate": False},
                    )
                )
                history.append(o)
                if self._converged(r, history, transcript[-1]):
                    break
                continue
            debate = deb.debate_text(passed, {c.debater: rel[c.debater] for c in passed} if rel else None)
            summary = debate
            if self.summarize:
                summary = self.ask("summarizer", self.summarizer, rollout=r, debate=debate).summary
                transcript.append(Turn("summarizer", r, summary))
            new, written, agreed = self._estimate(case, self._initial_text(initial, o0), summary, r)
            o = prob.smooth(o, new, self.smoothing)
            history.append(o)
            transcript.append(
                Turn(
                    "judge",
                    r,
                    f"estimate after the debate: {written}",
                    decision=prob.decide(o, self.labels, tie=initial),
                    extra={"estimate": new, "O": o, "gate": True, "written_label": written, "agreed": agreed},
                )
            )
            if self._converged(r, history, transcript[-1]):
                break
        stopped = {"stopped_early": len(history) <= self.n_rounds} if self.stop_epsilon else {}
        return self.verdict(
            prob.decide(o, self.labels, tie=initial),
            transcript,
            probabilities=history,
            initial_label=initial,
            sides=sides,
            stances=stances,
            reliabilities=reliabilities,
            passed=passed_by_round,
            gates=[bool(p) for p in passed_by_round],
            **stopped,
        )

    def _converged(self, r: int, history: Sequence[Mapping[str, float]], turn: Turn) -> bool:
        """With ``stop_epsilon``: whether O moved less than it in round ``r`` (noted on the judge's ``turn``)."""
        if not self.stop_epsilon:
            return False
        change = prob.max_change(history[-2], history[-1])
        turn.extra["change"] = change
        if change >= self.stop_epsilon or r == self.n_rounds:
            return False
        turn.extra["early_stop"] = (
            f"O moved {change:.3g} < stop_epsilon {self.stop_epsilon:g}: stopped after round {r} of {self.n_rounds}"
        )
        return True

    @staticmethod
    def _debate_turns(r: int, comments: Sequence[deb.Comment]) -> list[Turn]:
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
