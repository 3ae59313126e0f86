"""Courtroom-LLM (SPEC §4.2): preliminary hearing, two advocates, precedents, and a panel of judges."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel
from courtroom.models.lms import RoleLMs
from courtroom.programs import _stopping as stopping
from courtroom.programs._base import CourtroomProgram, label_type, typed
from courtroom.programs._common import (
    labels_text,
    limit_sentences,
    majority,
    seeded_rng,
    sentence_splitter,
    settled_majority,
    smallest_wave,
)
from courtroom.programs._precedents import TFIDF, Precedent, PrecedentIndex
from courtroom.signatures import courtroom_llm as sig
from courtroom.transcript import Turn

NONE = "(none)"
JUDGE_MODES = ("parallel", "sequential")
ASSIGNMENTS = ("fixed", "random")
PREVIOUS_JUDGES = ("all", "last")
PRECEDENT_SCOPES = ("candidate", "label", "global")


class CourtroomLLM(CourtroomProgram):
    """Courtroom-LLM: a clerk proposes A1/A2, advocates argue them, judges choose between the two.

    * **Preliminary hearing** (``clerk``): the most likely label A1 and a ranking of the labels. A2
      is the highest-ranked label other than A1 (binary: the other label). Only if the ranking names
      no other label does A2 fall back to the label after A1 in label order; the transcript says so.
    * **Arguments**: the ``prosecutor`` argues A1 and the ``attorney`` A2 (``assignment="fixed"``,
      early paper), or a coin seeded by ``seed`` (a run sets it to the run's seed) and the case text
      swaps them (``assignment="random"``, final paper). Arguments are cut to
      ``max_argument_sentences`` sentences (0: no limit) by a real sentence splitter (pysbd); a cut
      is marked in the transcript.
    * **Precedents** (``precedent_scope``): the ``k_precedents`` most similar training cases whose
      gold label is each candidate, A1's first (``"candidate"``, default: the final paper's Table 11,
      Emotion, shows A1's and A2's), or each label of the task in label order (``"label"``: its
      Table 9, ANLI, shows all three), or the ``k_precedents`` most similar of any label
      (``"global"``: the early paper's Algorithm 1, one argmax over all data), see
      :mod:`courtroom.programs._precedents`. Each has a reason written once per training case by the
      ``reasoner`` and cached on the program, asked for and cut to ``reason_sentences`` sentences
      (1, ours; 0: no limit, as the papers' Tables 7, 9 and 11 show reasons of three or four).
    * **Judges** choose between A1 and A2 only (the hearing makes the main trial binary, §3.1): the
      decision's schema enum is those two, framed as two opposite arguments of which one is correct.
      ``n_judges`` calls of one ``judge`` predictor (rollout ids make them distinct samples).
      ``judge_mode="parallel"``: independent judges, majority vote; a tie goes to A1.
      ``"sequential"``: each judge sees earlier judges' decisions and reasons, the last judge's
      decision being the verdict: every earlier judge (``previous_judges="all"``, the early paper's
      "evaluations of their predecessors") or only the one before it (``"last"``, the final paper's
      "the conclusions of the previous Judge-LLM"). The judges' context lists every label of the
      task, as both papers' judge prompts do ("Label: entailment, neutral, contradiction"), while
      the choice stays A1 or A2.
    * **Early stop** (``early_stop=True``, parallel judges only; off by default, the papers): the
      judges are called in waves, first as many as could settle the majority (2 of 3, 3 of 5),
      then the smallest wave that could settle it, until the judges not yet called could no longer
      change the majority (tie rule included). Judge i keeps rollout i, so its cache entry is the
      full run's, and the verdict is the full run's whenever the called judges vote as they would
      there. The prediction then has ``stopped_early``; ``votes`` holds the votes actually cast.
    * **Stop when stable** (``stop_when_stable=s``, sequential judges only; 0: off, the papers): each
      judge is a round and the latest judge's decision the standing verdict; the judges stop once
      s consecutive judges decided the same (:mod:`courtroom.programs._stopping`, the rule every
      multi-round design shares).
    * **Sampling**: the clerk, advocates and judges run at temperature 0.5 (§4.1.3) unless their
      model has a temperature of its own.

    * **Swapped** (:meth:`swapped`, ``--debias swap``): the labels are listed in reverse order (to the
      clerk, and in the judges' choice) and each advocate argues the label the other would have
      (fixed: the prosecutor argues A2; random: the coin's outcome is inverted). The copy shares the
      precedent index and its reasons with the original.

    Output fields: ``label``, ``transcript``, ``votes``, ``ph_label`` (A1), ``ph_runner_up`` (A2),
    ``precedents`` (dicts) and ``assignment`` (role -> label).
    """

    name = "courtroom-llm"
    roles = ("clerk", "prosecutor", "attorney", "judge", "reasoner")
    swappable = True
    summary = "Courtroom-LLM: preliminary hearing, prosecutor vs attorney, precedents, a panel of judges."
    # §4.1.3: "the temperature for the model was fixed at 0.5" for PH, prosecutor, attorney and judge.
    sampling_temperatures: ClassVar[dict[str, float]] = {
        "clerk": 0.5,
        "prosecutor": 0.5,
        "attorney": 0.5,
        "judge": 0.5,
    }
    early_stop_knobs: ClassVar[dict[str, Any]] = {"early_stop": False, "stop_when_stable": 0}

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        n_judges: int = 3,
        judge_mode: str = "parallel",
        k_precedents: int = 1,
        assignment: str = "random",
        seed: int = 0,
        max_argument_sentences: int = 1,
        embedder: str = TFIDF,
        early_stop: bool = False,
        previous_judges: str = "all",
        precedent_scope: str = "candidate",
        reason_sentences: int = 1,
        stop_when_stable: int = 0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if int(n_judges) < 1:
            raise ConfigError(f"courtroom-llm: n_judges must be >= 1, got {n_judges}; set n_judges=1, 3 or 5")
        if judge_mode not in JUDGE_MODES:
            raise ConfigError(f"courtroom-llm: unknown judge_mode {judge_mode!r}; use one of {', '.join(JUDGE_MODES)}")
        if assignment not in ASSIGNMENTS:
            raise ConfigError(f"courtroom-llm: unknown assignment {assignment!r}; use one of {', '.join(ASSIGNMENTS)}")
        if int(k_precedents) < 0:
            raise ConfigError(f"courtroom-llm: k_precedents must be >= 0, got {k_precedents}")
        if int(max_argument_sentences) < 0:
            raise ConfigError("courtroom-llm: max_argument_sentences must be >= 0 (0 means no limit)")
        if not isinstance(early_stop, bool):
            raise ConfigError(
                f"courtroom-llm: early_stop is a switch, got {early_stop!r}; set early_stop=true or false"
            )
        if previous_judges not in PREVIOUS_JUDGES:
            raise ConfigError(
                f"courtroom-llm: unknown previous_judges {previous_judges!r}; use one of {', '.join(PREVIOUS_JUDGES)}"
            )
        if precedent_scope not in PRECEDENT_SCOPES:
            raise ConfigError(
                f"courtroom-llm: unknown precedent_scope {precedent_scope!r}; use one of {', '.join(PRECEDENT_SCOPES)}"
            )
        if isinstance(reason_sentences, bool) or int(reason_sentences) < 0:
            raise ConfigError(
                f"courtroom-llm: reason_sentences must be >= 0 (0 means no limit), got {reason_sentences}"
            )
        if early_stop and judge_mode != "parallel":
            raise ConfigError(
                "courtroom-llm: early_stop needs judge_mode='parallel' (in sequential mode the last judge "
                "decides); set early_stop=false or judge_mode=parallel"
            )
        if stop_when_stable and judge_mode != "sequential":
            raise ConfigError(
                "courtroom-llm: stop_when_stable needs judge_mode='sequential' (each judge a round); parallel "
                "judges stop with early_stop=true (waves until the majority is fixed)"
            )
        self.stop_when_stable = stopping.check("courtroom-llm", stop_when_stable, int(n_judges), "judges", "n_judges")
        self.n_judges, self.judge_mode, self.k_precedents = int(n_judges), judge_mode, int(k_precedents)
        self.early_stop, self.previous_judges = early_stop, previous_judges
        self.assignment, self.seed = assignment, int(seed)
        self.max_argument_sentences, self.embedder = int(max_argument_sentences), str(embedder)
        self.precedent_scope, self.reason_sentences = precedent_scope, int(reason_sentences)
        if self.max_argument_sentences or self.reason_sentences:
            sentence_splitter()  # pysbd imported here, not by the first concurrent hearing in a worker thread
        self.precedent_index: PrecedentIndex | None = None
        self.clerk = dspy.Predict(self._typed_hearing(sig.PreliminaryHearing))
        self.prosecutor = dspy.Predict(sig.Prosecutor)
        self.attorney = dspy.Predict(sig.Attorney)
        self.judge = dspy.Predict(typed(sig.Judge, "decision", label_type(self.labels)))
        self.reasoner = dspy.Predict(sig.precedent_reason(self.reason_sentences))

    def _typed_hearing(self, signature: type[dspy.Signature]) -> type[dspy.Signature]:
        lt = label_type(self.labels)
        return typed(typed(signature, "most_likely", lt), "ranking", list[lt])  # type: ignore[valid-type]

    def _reorder(self, original: CourtroomProgram) -> None:
        self.clerk.signature = self._typed_hearing(self.clerk.signature)
        self.judge.signature = typed(self.judge.signature, "decision", label_type(self.labels))
        if isinstance(original, CourtroomLLM):
            self.precedent_index = original.precedent_index  # reasons are written once, for both

    def sampled_roles(self) -> dict[str, int]:
        """Parallel judges read the same prompt ``n_judges`` times."""
        return {"judge": self.n_judges} if self.judge_mode == "parallel" and self.n_judges > 1 else {}

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Index the training cases for precedent retrieval (nothing to do when ``k_precedents`` is 0)."""
        if self.k_precedents == 0:
            return
        if self.k_precedents > len(trainset):
            raise ConfigError(
                f"courtroom-llm: k_precedents={self.k_precedents} but the training set has {len(trainset)} "
                "cases; lower k_precedents or pass more training cases"
            )
        self.precedent_index = PrecedentIndex(
            [{"case": ex.case, "label": ex.label, "id": ex.get("id")} for ex in trainset],
            embedder=self.embedder,
            reasons=self.precedent_index.reasons if self.precedent_index else None,
        )

    # -- stages -------------------------------------------------------------------------------

    def _hearing(self, case: str) -> tuple[str, str, Turn]:
        ph = self.ask("clerk", self.clerk, case=case, labels=labels_text(self.labels))
        a1 = ph.most_likely
        ranking = [str(x) for x in (ph.ranking or [])]
        note = ""
        a2 = next((x for x in ranking if x != a1 and x in self.labels), None)
        if a2 is None:
            a2 = self.labels[(self.labels.index(a1) + 1) % len(self.labels)]
            if len(self.labels) > 2:
                note = f"the ranking names no label other than A1; runner-up set to the next label {a2!r}"
        extra = {"runner_up": a2, "ranking": ranking} | ({"note": note} if note else {})
        return (
            a1,
            a2,
            Turn("clerk", 0, f"A1 (most likely): {a1}; A2 (runner-up): {a2}", decision=a1, extra=extra),
        )

    def _assign(self, case: str, a1: str, a2: str) -> dict[str, str]:
        flip = self.assignment == "random" and seeded_rng(self.seed, "assignment", case).random() < 0.5
        if flip != self.sides_swapped:
            return {"prosecutor": a2, "attorney": a1}
        return {"prosecutor": a1, "attorney": a2}

    def _argue(self, role: str, case: str, label: str, other: str) -> tuple[str, Turn]:
        predictor = self.prosecutor if role == "prosecutor" else self.attorney
        limit = f"at most {self.max_argument_sentences} sentence(s)" if self.max_argument_sentences else "no limit"
        out = self.ask(role, predictor, case=case, label=label, opposing_label=other, length_limit=limit)
        text, cut = limit_sentences(out.argument, self.max_argument_sentences)
        extra: dict[str, Any] = {"label": label}
        if cut:
            extra |= {"truncated": True, "original": out.argument}
        return text, Turn(role, 1, text, extra=extra)

    def _precedents(self, case: str, candidates: Sequence[str]) -> list[Precedent]:
        """``k_precedents`` nearest training cases for each candidate (A1's first), each label, or of any label."""
        if self.k_precedents == 0:
            return []
        if self.precedent_index is None:
            raise ConfigError(
                f"courtroom-llm: k_precedents={self.k_precedents} needs training cases; call "
                "program.prepare(trainset) first or set k_precedents=0"
            )
        index = self.precedent_index
        groups: Sequence[str | None] = {"candidate": candidates, "label": self.labels, "global": [None]}[
            self.precedent_scope
        ]
        found = [p for label in groups for p in index.search(case, self.k_precedents, label=label)]
        return index.with_reasons(found, self._reason)

    def _reason(self, precedent: Precedent) -> str:
        """Why a precedent's gold label fits it, within ``reason_sentences`` sentences."""
        out = self.ask("reasoner", self.reasoner, case=precedent.case, label=precedent.label)
        return limit_sentences(out.reason, self.reason_sentences)[0]

    @staticmethod
    def _precedents_text(precedents: Sequence[Precedent]) -> str:
        if not precedents:
            return NONE
        return "\n".join(
            f"Precedent {i}: {p.case}\nCorrect label: {p.label}\nReason: {p.reason}"
            for i, p in enumerate(precedents, 1)
        )

    def forward(self, case: str) -> dspy.Prediction:
        """Try ``case``; ``label`` is the panel's verdict."""
        a1, a2, ph_turn = self._hearing(case)
        assigned = self._assign(case, a1, a2)
        # The precedents (retrieval and any new reasons) are found while the advocates argue.
        stages: list[Any] = run_parallel(
            [
                lambda: self._argue("prosecutor", case, assigned["prosecutor"], assigned["attorney"]),
                lambda: self._argue("attorney", case, assigned["attorney"], assigned["prosecutor"]),
                lambda: self._precedents(case, (a1, a2)),
            ]
        )
        (p_text, p_turn), (d_text, d_turn) = stages[0], stages[1]
        precedents: list[Precedent] = stages[2]
        transcript = [ph_turn, p_turn, d_turn]
        transcript += [
            Turn(
                "reasoner",
                1,
                p.reason,
                decision=p.label,
                extra={"precedent": p.case, "similarity": round(p.similarity, 4)},
            )
            for p in precedents
        ]
        # The judges may only answer A1 or A2: the decision's enum is narrowed for this case.
        pair = sorted((a1, a2), key=self.labels.index)  # label order: the schema does not favour A1
        judge_sig = typed(self.judge.signature, "decision", label_type(pair))
        inputs: dict[str, Any] = {
            "signature": judge_sig,
            "case": case,
            "labels": labels_text(self.labels),
            "candidates": labels_text(pair),
            "prosecutor_argument": f"[{assigned['prosecutor']}] {p_text}",
            "attorney_argument": f"[{assigned['attorney']}] {d_text}",
            "precedents": self._precedents_text(precedents),
        }
        outs: list[dspy.Prediction] = []
        previous: list[str] = []
        if self.judge_mode == "parallel":
            outs = self._parallel_judges(inputs, a1, a2)
        else:
            for i in range(self.n_judges):
                seen = previous[-1:] if self.previous_judges == "last" else previous
                out = self.ask("judge", self.judge, rollout=i, previous_judges="\n".join(seen) or NONE, **inputs)
                outs.append(out)
                previous.append(f"Judge {i + 1} decided {out.decision}: {out.reason}")
                if i + 1 < self.n_judges and stopping.held([o.decision for o in outs], self.stop_when_stable):
                    break
        votes = [o.decision for o in outs]
        transcript += [
            Turn("judge", 2, o.reason, decision=o.decision, extra={"judge": i + 1, "mode": self.judge_mode})
            for i, o in enumerate(outs)
        ]
        label = majority(votes, self.labels, prefer=a1) if self.judge_mode == "parallel" else votes[-1]
        stopped: dict[str, Any] = {}
        if self.adaptive:
            stopped["stopped_early"] = len(outs) < self.n_judges
            if stopped["stopped_early"]:
                transcript[-1].extra["early_stop"] = (
                    f"majority fixed after {len(outs)} of {self.n_judges} judges: the rest could not change it"
                    if self.early_stop
                    else stopping.note(votes, self.stop_when_stable, len(outs), self.n_judges, "judge")
                )
        return self.verdict(
            label,
            transcript,
            votes=votes,
            ph_label=a1,
            ph_runner_up=a2,
            precedents=[p.to_dict() for p in precedents],
            assignment=assigned,
            **stopped,
        )

    def _parallel_judges(self, inputs: Mapping[str, Any], a1: str, a2: str) -> list[dspy.Prediction]:
        """``n_judges`` independent judges (judge i at rollout i); with ``early_stop``, in waves."""

        def wave(ids: range) -> list[dspy.Prediction]:
            # Judges of one model get the same bytes: one request with n where it takes it.
            return self.ask_samples("judge", self.judge, ids, previous_judges=NONE, **inputs)

        if not self.early_stop:
            return wave(range(self.n_judges))
        outs: list[dspy.Prediction] = []
        while len(outs) < self.n_judges:
            votes, left = [o.decision for o in outs], self.n_judges - len(outs)
            if settled_majority(votes, left, (a1, a2), self.labels, prefer=a1) is not None:
                break
            size = smallest_wave(votes, left, (a1, a2), self.labels, prefer=a1)
            outs += wave(range(len(outs), len(outs) + size))
        return outs
