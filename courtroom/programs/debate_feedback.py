"""Debate-Feedback (SPEC §4.3, paper Algorithm 1): debate, verify reliability, gate the round, smooth the judge.

Debaters argue, an assistant scores the reliability of each debater's statement, and when the round
passes the gate the judge hears every comment with its reliability and its estimate is smoothed in.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.programs import _debate as deb
from courtroom.programs import _probability as prob
from courtroom.programs import _stopping as stopping
from courtroom.programs._base import CourtroomProgram, label_type, typed
from courtroom.programs._common import labels_text
from courtroom.programs._debate import DebateStep
from courtroom.programs._reliability import ReliabilityModel
from courtroom.programs._verification import ASSISTANT_INPUTS, Verification
from courtroom.signatures import debate as sig
from courtroom.transcript import Turn

NONE = deb.NONE
RELIABILITY = ("none", "assistant", "llm")
VARIANTS = ("single", "assistant")
GATES = ("any", "mean", "comment")
TIES = prob.TIES
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


class DebateFeedback(DebateStep, Verification, CourtroomProgram):
    """Debate-Feedback: a judge's estimate refined by ``n_rounds`` of debate.

    * **Initial estimate** O_0 = LM(x): the ``judge`` on the case alone. ``prob_method`` says how the
      distribution is read: ``"field"`` (default: the judge states one probability per label, each
      field naming its label, normalised and checked against the written label, see
      :func:`courtroom.programs._probability.from_fields`), ``"votes"`` (the vote share of
      ``k_samples`` label-only answers; with one sample a one-hot outcome, the paper's judge, which
      outputs "ONLY ... one of the labels") or ``"logprobs"`` (token log-probabilities of the chosen
      label). Only ``"field"`` asks the judge for probabilities.
    * **Who argues what** (``sides``): ``"split"`` (Algorithm 1's opposing perspectives): binary tasks
      split the ``n_debaters`` evenly between the two labels, an odd one out arguing without an
      assigned side; multi-class tasks give the debaters the labels O_0 ranks highest. ``"none"``
      (Table 4, the authors' code): every debater gets the same prompt, with no side
      (:func:`courtroom.programs._debate.perspectives`).
    * **Debate step**: each debater gives an opinion (within ``word_limit`` words, cut if longer),
      then replies seeing its own opinion and the others', and states its final stance (a label).
      ``memory=False``: every round starts again from the case (Algorithm 1), so more rounds are
      fresh samples. ``memory=True``: each debater and the judge keep their conversation across
      rounds (the judge's: Table 4's "Follow the conversation from Step 1"; the debaters': the
      authors' code, not the paper): a debater reads what it said and read in the earlier rounds,
      the judge the summaries it read and its answers.
    * **Verification** (``variant="assistant"``): each debater's statement gets a reliability, how
      likely its stated stance is right for this case. The assistant reads the per-debater summary of
      the statement (``assistant_input="summary"``, Table 4 step 3, written by the ``summarizer``)
      or the debater's reply (``"reply"``). ``reliability="assistant"``: a scikit-learn model trained
      in :meth:`prepare` on single-variant debates over the training cases, conditioned on the stance
      (:mod:`courtroom.programs._reliability`); ``"llm"`` asks the ``assistant`` role.
    * **Gate** (``gate``, Algorithm 1's Threshold(v)): ``"any"`` (default) passes the round when some
      comment's reliability reaches ``threshold``, ``"mean"`` when their mean does; a passing round
      sends every comment with its reliability to the summary and to the judge (Table 4 step 4 shows
      all three, 0.45 included). ``"comment"`` forwards only the comments at or above the threshold
      (with a majority class it can hand the judge a one-sided debate). The single variant passes
      every round. A round that does not pass: O_i = O_0, Algorithm 1's LM(x), reused with no new
      call. The paper gives no threshold value: 0.5 is ours.
    * **Summary, then estimate** (Table 4, step 4): the ``summarizer`` (the judge's model unless
      routed elsewhere) summarises the comments, sum = LM(a, e, v); the judge, shown its initial
      prediction, the summary and every comment's reliability, gives LM(x, sum). ``summarize=False``
      merges the two for cost: the judge reads the comments themselves.
      O_i = (1 - T) * O_{i-1} + T * LM(x, sum) with T = ``smoothing``.
    * **Label** (``tie``): the most probable label of O_n. The paper states no tie rule; a tie (exactly
      0.5 on a binary task, common with its one-hot judge at T = 0.5) goes to O_0's label
      (``"initial"``, default: what Table 5's figures imply, worked out in
      :func:`courtroom.programs._probability.tie_winner`), to the label standing before the round
      (``"previous"``) or to the label the judge wrote in the latest estimate smoothed into O
      (``"last"``).
    * **Early stop** (``stop_epsilon``; 0: off, the paper): the rounds stop once O moves less than
      epsilon in a round, the move being max over labels of |O_i - O_{i-1}|
      (:func:`courtroom.programs._probability.max_change`); the label is then that of O_i. The
      judge's turns carry ``change``, the prediction ``stopped_early``. Training debates in
      :meth:`prepare` (no judge) always run every round.
    * **Stop when stable** (``stop_when_stable=s``; 0: off, the paper): the rounds stop once the
      label of O has been the same after s consecutive rounds (:mod:`courtroom.programs._stopping`,
      the rule every multi-round design shares). Training debates run every round.

    Output fields: ``label``, ``transcript``, ``probabilities`` (O_0..O_n), ``initial_label``,
    ``sides`` (debater -> assigned label or None), ``stances`` and ``reliabilities`` (per round,
    per debater), ``passed`` (per round, the debaters whose comments reached the judge) and
    ``gates`` (per round, whether the round passed).
    """

    name = "debate-feedback"
    roles = ("judge", "summarizer", "debater", "assistant")
    summary = "Debate-Feedback: debaters argue, an assistant scores reliability, the judge smooths its estimate."
    # The paper gives no temperature; 1.0 is the default of the OpenAI API its GPT-4o runs used.
    sampling_temperatures: ClassVar[dict[str, float]] = {"judge": 1.0, "debater": 1.0}
    early_stop_knobs: ClassVar[dict[str, Any]] = {"stop_epsilon": 0.0, "stop_when_stable": 0}

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
        gate: str = "any",
        variant: str = "single",
        reliability: str = "assistant",
        assistant_input: str = "summary",
        sides: str = "split",
        memory: bool = False,
        prob_method: str = "field",
        k_samples: int = 3,
        summarize: bool = True,
        stop_epsilon: float = 0.0,
        tie: str = "initial",
        stop_when_stable: int = 0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        checks = [
            (int(n_rounds) >= 1, f"n_rounds must be >= 1, got {n_rounds}"),
            (int(n_debaters) >= 2, f"n_debaters must be >= 2 (a debate), got {n_debaters}"),
            (int(word_limit) >= 0, f"word_limit must be >= 0 (0: no limit), got {word_limit}"),
            (0.0 <= float(smoothing) <= 1.0, f"smoothing T must be in [0, 1], got {smoothing}"),
            (0.0 <= float(threshold) <= 1.0, f"threshold must be in [0, 1], got {threshold}"),
            (gate in GATES, f"unknown gate {gate!r}; use one of {', '.join(GATES)}"),
            (variant in VARIANTS, f"unknown variant {variant!r}; use one of {', '.join(VARIANTS)}"),
            (reliability in RELIABILITY, f"unknown reliability {reliability!r}; use one of {', '.join(RELIABILITY)}"),
            (
                assistant_input in ASSISTANT_INPUTS,
                f"unknown assistant_input {assistant_input!r}; use one of {', '.join(ASSISTANT_INPUTS)}",
            ),
            (sides in deb.SIDES, f"unknown sides {sides!r}; use one of {', '.join(deb.SIDES)}"),
            (isinstance(memory, bool), f"memory is a switch, got {memory!r}; set memory=true or false"),
            (
                prob_method in prob.PROB_METHODS,
                f"unknown prob_method {prob_method!r}; use one of {', '.join(prob.PROB_METHODS)}",
            ),
            (int(k_samples) >= 1, f"k_samples must be >= 1, got {k_samples}"),
            (tie in TIES, f"unknown tie {tie!r}; use one of {', '.join(TIES)}"),
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
        self.smoothing, self.threshold, self.gate = float(smoothing), float(threshold), gate
        self.variant, self.reliability, self.assistant_input = variant, reliability, assistant_input
        self.sides, self.memory, self.prob_method = sides, memory, prob_method
        self.k_samples, self.summarize, self.stop_epsilon = int(k_samples), bool(summarize), float(stop_epsilon)
        self.tie = tie
        self.stop_when_stable = stopping.check("debate-feedback", stop_when_stable, self.n_rounds)
        if "summarizer" not in self.lms and "judge" in self.lms:
            # The paper's judge writes the summary: same model unless the summarizer is routed elsewhere.
            self.lms = RoleLMs({**self.lms, "summarizer": self.lms["judge"]})
        self.reliability_model = ReliabilityModel()
        lt = label_type(self.labels)
        judge: type[dspy.Signature] = sig.Judge
        if prob_method == "field":
            judge = prob.add_probability_fields(sig.ProbabilityJudge, self.labels)
        debater: type[dspy.Signature] = sig.SidedDebater if sides == "split" else sig.Debater
        if memory:
            judge = sig.with_memory(judge, "each earlier round's debate summary and your answer")
            debater = sig.with_memory(debater, "your opinions, the others' opinions and your replies")
        self.judge = dspy.Predict(typed(judge, "label", lt))
        self.summarizer = dspy.Predict(sig.Summarize)
        self.debater = dspy.Predict(typed(debater, "stance", lt))
        self.assistant = dspy.Predict(sig.Assistant)

    def sampled_roles(self) -> dict[str, int]:
        """Debaters reading the same prompt (rounds without memory, debaters of one side); judge votes."""
        seats = Counter(deb.perspectives(self.labels, self.n_debaters, dict.fromkeys(self.labels, 0.0), self.sides))
        same = max(n for side, n in seats.items() if side is not None or self.sides == "none") if seats else 1
        out = {"debater": same * (1 if self.memory else self.n_rounds)}
        if self.prob_method == "votes":
            out["judge"] = self.k_samples
        return {r: n for r, n in out.items() if n > 1}

    # -- verification and the gate ---------------------------------------------------------------

    def _verify(
        self, case: str, r: int, comments: Sequence[deb.Comment]
    ) -> tuple[dict[int, float] | None, list[deb.Comment], list[Turn]]:
        """(reliabilities, the comments that reach the judge, the transcript turns) of round ``r``."""
        if self.scorer == "none":
            return None, list(comments), []
        statements, turns = self._statements(r, comments)
        scores = self._reliabilities(case, comments, statements)
        rel = {c.debater: s for c, s in zip(comments, scores, strict=True)}
        passed = self._gate(comments, rel)
        heard = [c.debater + 1 for c in passed]
        turns.append(
            Turn(
                "assistant",
                r,
                f"reliabilities {[round(v, 3) for v in scores]} (gate {self.gate}, threshold {self.threshold}); "
                + (f"reaching the judge: {heard}" if heard else "the round did not pass: O_i = O_0"),
                extra={
                    "reliabilities": scores,
                    "method": self.scorer,
                    "input": self.assistant_input,
                    "gate": self.gate,
                    "passed": heard,
                },
            )
        )
        return rel, passed, turns

    def _gate(self, comments: Sequence[deb.Comment], rel: Mapping[int, float]) -> list[deb.Comment]:
        """Threshold(v): the whole round (``any``, ``mean``) or each comment (``comment``)."""
        if self.gate == "comment":
            return [c for c in comments if rel[c.debater] >= self.threshold]
        values = [rel[c.debater] for c in comments]
        level = max(values) if self.gate == "any" else sum(values) / len(values)
        return list(comments) if level >= self.threshold else []

    def _debate_for_judge(
        self, r: int, heard: Sequence[deb.Comment], rel: Mapping[int, float] | None, transcript: list[Turn]
    ) -> str:
        """The summary sum = LM(a, e, v) with the reliabilities beside it (Table 4 step 4), or the comments."""
        debate = deb.debate_text(heard, rel)
        if not self.summarize:
            return debate
        summary = self.ask("summarizer", self.summarizer, rollout=r, debate=debate).summary
        transcript.append(Turn("summarizer", r, summary))
        return summary + ("\n" + deb.reliabilities_text(heard, rel) if rel is not None else "")

    # -- the judge -------------------------------------------------------------------------------

    def _estimate(
        self, case: str, initial: str, summary: str, earlier: str, rollout: int
    ) -> tuple[dict[str, float], str, bool]:
        """(distribution over the labels, the written label, whether they agreed)."""
        inputs: dict[str, Any] = {
            "case": case,
            "labels": labels_text(self.labels),
            "initial_prediction": initial,
            "debate_summary": summary,
        }
        if self.memory:
            inputs["earlier_rounds"] = earlier
        if self.prob_method == "votes":
            rollouts = [rollout * self.k_samples + s for s in range(self.k_samples)]
            outs = self.ask_samples("judge", self.judge, rollouts, **inputs)
            dist = prob.from_votes([o.label for o in outs], self.labels)
            return dist, prob.decide(dist, self.labels, tie=outs[0].label), True
        if self.prob_method == "logprobs":
            out = self.ask("judge", self.judge, rollout=rollout, lm_config={"logprobs": True}, **inputs)
            return prob.from_logprobs(out, self.labels), out.label, True
        out = self.ask("judge", self.judge, rollout=rollout, **inputs)
        dist, agreed = prob.from_fields(out, self.labels)
        return dist, out.label, agreed

    def _initial_text(self, label: str, dist: Mapping[str, float]) -> str:
        if self.prob_method != "field":
            return f"Your initial prediction on the case alone was {label}."
        probs = ", ".join(f"{lab}: {p:.2f}" for lab, p in dist.items())
        return f"Your initial prediction on the case alone was {label} ({probs})."

    def forward(self, case: str) -> dspy.Prediction:
        """Debate ``case``; ``label`` follows the final smoothed estimate O_n."""
        if self.scorer == "assistant" and not self.reliability_model.fitted:
            raise ConfigError(
                "debate-feedback: the assistant is not trained; call program.prepare(trainset) "
                "first, or use reliability='llm' or variant='single'"
            )
        o0, written, agreed = self._estimate(case, NONE, NONE, NONE, 0)
        initial = prob.decide(o0, self.labels, tie=written)
        o, history = o0, [o0]
        decision = latest = initial  # the label standing; the judge's latest label in O
        transcript = [
            Turn(
                "judge",
                0,
                "initial estimate O_0 on the case alone",
                decision=initial,
                extra={"O": o0, "written_label": written, "agreed": agreed},
            )
        ]
        sides = self._sides(case, o0)
        rounds: list[list[deb.Comment]] = []
        judged: list[tuple[int, str, str]] = []
        stances: list[list[str]] = []
        reliabilities: list[list[float]] = []
        passed_by_round: list[list[int]] = []
        pool: dict[int, Any] | None = None if self.adaptive else {}  # opinions asked ahead (deb._opinions)
        verdicts: list[str] = []  # the label standing after each round (stop_when_stable)
        for r in range(1, self.n_rounds + 1):
            comments = self._round(case, r, sides, rounds, pool)
            rounds.append(comments)
            stances.append([c.stance for c in comments])
            transcript += self._debate_turns(r, comments)
            rel, heard, turns = self._verify(case, r, comments)
            transcript += turns
            reliabilities.append([rel[c.debater] for c in comments] if rel else [])
            passed_by_round.append([c.debater + 1 for c in heard])
            if not heard:
                o, latest = o0, initial  # Algorithm 1's else branch: O_i = LM(x), the initial prediction, reused
                decision = prob.decide(o, self.labels, tie=prob.tie_winner(self.tie, initial, decision, latest))
                transcript.append(
                    Turn(
                        "judge",
                        r,
                        "the round did not pass the gate: O_i = O_0 (no new call)",
                        decision=decision,
                        extra={"O": o, "gate": False},
                    )
                )
            else:
                summary = self._debate_for_judge(r, heard, rel, transcript)
                earlier = deb.judge_memory(judged)
                new, written, agreed = self._estimate(case, self._initial_text(initial, o0), summary, earlier, r)
                judged.append((r, summary, written))
                o, latest = prob.smooth(o, new, self.smoothing), written if self.smoothing else latest
                decision = prob.decide(o, self.labels, tie=prob.tie_winner(self.tie, initial, decision, latest))
                transcript.append(
                    Turn(
                        "judge",
                        r,
                        f"estimate after the debate: {written}",
                        decision=decision,
                        extra={"estimate": new, "O": o, "gate": True, "written_label": written, "agreed": agreed},
                    )
                )
            history.append(o)
            verdicts.append(decision)
            if self._converged(r, history, transcript[-1]):
                break
            if r < self.n_rounds and stopping.held(verdicts, self.stop_when_stable):
                transcript[-1].extra["early_stop"] = stopping.note(verdicts, self.stop_when_stable, r, self.n_rounds)
                break
        stopped = {"stopped_early": len(history) <= self.n_rounds} if self.adaptive else {}
        return self.verdict(
            decision,
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
