"""Settle, then trial (SPEC §13): a cheap panel answers first; only the cases it disputes go to trial.

"Debate or Vote" (NeurIPS 2025) finds majority voting explains most of the gains credited to
debate, and DOWN (arXiv 2504.05047), iMAD (arXiv 2511.11306) and EMS (arXiv 2604.02863) debate
only when a cheap first answer is uncertain. This design does that with any courtroom framework
as the trial, so the design study can search where settling pays.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import dspy

from courtroom.analysis.calibration import confidence
from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.programs import _probability as prob
from courtroom.programs._base import CourtroomProgram, label_type, typed
from courtroom.programs._common import labels_text, majority
from courtroom.programs._precedents import PrecedentIndex
from courtroom.programs.baseline_debates import KhanDebate
from courtroom.programs.courtroom_llm import CourtroomLLM
from courtroom.programs.debate_feedback import DebateFeedback
from courtroom.programs.jot import JudgmentOfThought
from courtroom.programs.presets import apply_preset, sampling_temperatures
from courtroom.signatures import baselines as sig
from courtroom.transcript import Turn

TRIALS: dict[str, type[CourtroomProgram]] = {
    cls.name: cls for cls in (CourtroomLLM, JudgmentOfThought, DebateFeedback, KhanDebate)
}
"""The frameworks a settle design can convene as its trial."""
SIGNALS = ("votes", "confidence")
_TRIAL_STATE = "courtroom_trial_state"
_ARTEFACTS: dict[str, Any] = {"precedent_index": PrecedentIndex}
"""What a trial learns outside its predictors and its own ``dump_state`` (Debate-Feedback saves its
reliability model there)."""


def parse_trial_knobs(text: str | Mapping[str, Any], trial: str) -> dict[str, Any]:
    """``"n_loops=2,use_feedback=false"`` (or a mapping) -> the trial's knobs, typed by its defaults.

    Refuses a knob the trial does not have, in one line naming its knobs.
    """
    from courtroom.spec._values import typed_value

    defaults = TRIALS[trial].knobs()
    if isinstance(text, Mapping):
        items = [(str(k), v) for k, v in text.items()]
    else:
        items = []
        for part in (p.strip() for p in str(text or "").split(",")):
            if not part:
                continue
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ConfigError(f"settle: trial_knobs {text!r}: write KEY=VALUE,KEY=VALUE, e.g. n_loops=2")
            items.append((key.strip(), value.strip()))
    out: dict[str, Any] = {}
    for key, value in items:
        if key not in defaults:
            raise ConfigError(
                f"settle: the trial {trial} has no knob {key!r}: its knobs are "
                + ", ".join(f"{k}={v}" for k, v in defaults.items())
            )
        out[key] = typed_value(key, value, defaults[key], "trial_knobs") if isinstance(value, str) else value
    return out


def panel_agreement(
    votes: Sequence[str], dists: Sequence[Mapping[str, float]], labels: Sequence[str]
) -> tuple[str, float]:
    """The panel's label and agreement (6 places), as the design settles on them.

    With stated probabilities (``dists``, the ``confidence`` signal): the top label of their mean
    and its probability; without: the majority vote and its share. A tie goes to the first vote.
    """
    if dists:
        mean = {lab: sum(d[lab] for d in dists) / len(dists) for lab in labels}
        label = prob.decide(mean, labels, tie=votes[0])
        return label, round(mean[label], 6)
    label = majority(votes, labels, prefer=votes[0])
    return label, round(Counter(votes)[label] / len(votes), 6)


def knobs_text(knobs: Mapping[str, Any]) -> str:
    """The canonical ``trial_knobs`` text of ``knobs`` (sorted; booleans as true/false)."""

    def shown(v: Any) -> str:
        return str(v).lower() if isinstance(v, bool) else str(v)

    return ",".join(f"{k}={shown(v)}" for k, v in sorted(knobs.items()))


class SettleThenTrial(CourtroomProgram):
    """A court that settles most cases and tries the contested ones.

    * **Panel**: ``panel_size`` answers of the ``panel`` role to the same prompt (rollout ids make
      them distinct samples; a mixed panel, ``--role panel=a,b,c``, rotates through its models).
    * **Agreement**: ``signal="votes"``: the share of the panel's answers for its majority label;
      ``"confidence"``: each member also states one probability per label, and the agreement is
      the top probability of their mean. A case whose agreement is at or above ``threshold`` is
      **settled**: the verdict is the panel's label and no trial is held.
    * **Trial**: any other case is tried by ``trial`` (courtroom-llm, jot, debate-feedback or
      khan-debate) with ``trial_preset`` (one of that framework's presets, or none) and
      ``trial_knobs`` (``"n_loops=2,use_feedback=false"``, over the preset). With ``show_panel``
      the panel's answers are appended to the case text every trial role reads; otherwise the
      trial sees the case alone, exactly as the framework would on its own. ``always_try`` holds
      a trial for every case (the panel is still asked: the dearest end of the design's cost).
    * The trial's roles keep their names and can be routed (``--role judge=...``); it is prepared
      on the training cases whatever the panel later settles. ``seed`` goes to a trial that has one.
    * Where to settle: one run with ``always_try`` on dev cases prices every panel size and
      threshold (:mod:`courtroom.analysis.settling`), as the design study would search them.

    Output fields: ``label``, ``transcript`` (the panel's answers, the decision to settle or try,
    then the trial's own transcript), ``decided_by`` (``"panel"`` or ``"trial"``), ``panel_votes``,
    ``panel_p`` (``confidence``: each member's probability per label), ``panel_label``,
    ``agreement``, ``confidence`` (the agreement when settled, the trial's own
    confidence if it has one when tried), and for tried cases ``trial`` (its name) and
    ``trial_fields`` (the trial's own output fields).
    """

    name = "settle"
    roles = ("panel", *sorted({r for cls in TRIALS.values() for r in cls.roles}))
    summary = "Settle, then trial: a cheap panel answers; cases it disputes go to a courtroom trial."
    # Ours: the panel samples one prompt several times, so it needs temperature > 0; 0.7 lies between
    # the Courtroom papers' 0.5 and the JoT paper's 1.0.
    sampling_temperatures: ClassVar[dict[str, float]] = {"panel": 0.7}

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
        panel_size: int = 3,
        threshold: float = 1.0,
        signal: str = "votes",
        trial: str = "courtroom-llm",
        trial_preset: str = "",
        trial_knobs: str = "",
        show_panel: bool = False,
        always_try: bool = False,
        seed: int = 0,
    ) -> None:
        super().__init__(labels, positions, lm=lm, roles=roles)
        if isinstance(panel_size, bool) or int(panel_size) < 1:
            raise ConfigError(f"settle: panel_size must be >= 1, got {panel_size}")
        if not 0.0 <= float(threshold) <= 1.0:
            raise ConfigError(f"settle: threshold must be in [0, 1] (1: settle only when all agree), got {threshold}")
        if signal not in SIGNALS:
            raise ConfigError(f"settle: unknown signal {signal!r}; use one of {', '.join(SIGNALS)}")
        if trial not in TRIALS:
            raise ConfigError(f"settle: unknown trial {trial!r}; use one of {', '.join(TRIALS)}")
        for knob, value in (("show_panel", show_panel), ("always_try", always_try)):
            if not isinstance(value, bool):
                raise ConfigError(f"settle: {knob} is a switch, got {value!r}; set {knob}=true or false")
        self.panel_size, self.threshold, self.signal = int(panel_size), float(threshold), signal
        self.show_panel, self.always_try, self.seed = show_panel, always_try, int(seed)
        own = parse_trial_knobs(trial_knobs, trial)
        self.trial_name, self.trial_preset, self.trial_knobs = trial, str(trial_preset or ""), knobs_text(own)
        cls = TRIALS[trial]
        _, knobs = apply_preset(self.trial_preset or None, trial, own)
        if "seed" in cls.knobs():
            knobs.setdefault("seed", self.seed)
        if cls.binary_only and len(self.labels) != 2:
            raise ConfigError(
                f"settle: the trial {trial} is binary; this task has {len(self.labels)} labels: "
                f"set trial to one of {', '.join(t for t, c in TRIALS.items() if not c.binary_only)}"
            )
        self.trial = cls(self.labels, self.positions, roles=self.lms, **knobs)
        self.trial.temperatures = sampling_temperatures(cls, self.trial_preset or None)
        answer = typed(sig.Classify, "answer", label_type(self.labels))
        if signal == "confidence":
            answer = prob.add_probability_fields(answer, self.labels)
        self.panel = dspy.Predict(answer)

    def config(self) -> dict[str, Any]:
        """This instance's knob values (``trial`` by name, ``trial_knobs`` as canonical text)."""
        return {name: self.trial_name if name == "trial" else getattr(self, name) for name in self.knobs()}

    # -- what the dry run and the runner ask of a program --------------------------------------------

    @property
    def adaptive(self) -> bool:
        """Whether the panel decides which cases are tried (or the trial stops early): calls vary by case."""
        return (not self.always_try and self.threshold > 0) or self.trial.adaptive

    def most_calls_knobs(self) -> dict[str, Any]:
        """Every case tried, the trial at its most calls."""
        trial_knobs = parse_trial_knobs(self.trial_knobs, self.trial_name) | type(self.trial).early_stop_knobs
        return self.config() | {"always_try": True, "trial_knobs": knobs_text(trial_knobs)}

    def fewest_calls_knobs(self) -> dict[str, Any] | None:
        """Every case settled (threshold 0): the panel's calls only (None: every case is tried, or settled)."""
        if self.always_try or self.threshold == 0:
            return None
        return self.config() | {"threshold": 0.0}

    def sampled_roles(self) -> dict[str, int]:
        """The panel answers one prompt ``panel_size`` times; the trial samples what it samples."""
        own = {"panel": self.panel_size} if self.panel_size > 1 else {}
        return self.trial.sampled_roles() | own

    def temperature_of(self, role: str) -> float | None:
        """The trial's roles run at the trial's temperatures."""
        if role != "panel" and role in type(self.trial).roles:
            return self.trial.temperature_of(role)
        return super().temperature_of(role)

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Prepare the trial (precedents, the reliability assistant) on the training cases."""
        self.trial.prepare(trainset)

    # -- the decision --------------------------------------------------------------------------------

    def _member(self, out: dspy.Prediction) -> tuple[str, dict[str, float] | None]:
        if self.signal == "confidence":
            return out.answer, prob.from_fields(out, self.labels)[0]
        return out.answer, None

    def _hear(self, case: str) -> tuple[list[str], str, float, list[Turn], list[dict[str, float]]]:
        """The panel's votes, its label, its agreement, its turns and (``confidence``) each member's probabilities."""
        labels = labels_text(self.labels)
        asked = self.ask_samples("panel", self.panel, range(self.panel_size), case=case, labels=labels)
        outs = [self._member(o) for o in asked]
        votes = [v for v, _ in outs]
        turns = [
            Turn("panel", 0, f"answer: {v}", decision=v, extra={"member": i + 1} | ({"p": dist} if dist else {}))
            for i, (v, dist) in enumerate(outs)
        ]
        dists = [d for _, d in outs if d is not None] if self.signal == "confidence" else []
        label, agreement = panel_agreement(votes, dists, self.labels)
        return votes, label, agreement, turns, dists

    def _shown(self, case: str, votes: Sequence[str]) -> str:
        """The case as the trial reads it: with ``show_panel``, the panel's answers appended."""
        if not self.show_panel:
            return case
        counts = ", ".join(f"{lab} ({n})" for lab, n in Counter(votes).most_common())
        return (
            f"{case}\n\n[Before this trial, a panel of {len(votes)} independent answers gave: {counts}. "
            "It did not agree enough to settle the case.]"
        )

    def forward(self, case: str) -> dspy.Prediction:
        """Hear the panel; settle the case, or try it."""
        votes, label, agreement, transcript, dists = self._hear(case)
        fields: dict[str, Any] = {"panel_votes": votes, "panel_label": label, "agreement": agreement}
        if dists:
            fields["panel_p"] = dists
        if not self.always_try and agreement >= self.threshold:
            transcript.append(
                Turn(
                    "panel",
                    0,
                    f"agreement {agreement:.3g} ({self.signal}) >= threshold {self.threshold:g}: settled",
                    decision=label,
                    extra={"decided_by": "panel"},
                )
            )
            return self.verdict(label, transcript, decided_by="panel", confidence=agreement, **fields)
        why = (
            "always_try"
            if self.always_try
            else f"agreement {agreement:.3g} ({self.signal}) < threshold {self.threshold:g}"
        )
        transcript.append(
            Turn(
                "panel",
                0,
                f"{why}: tried by {self.trial_name}"
                + (" (the trial is shown the panel's answers)" if self.show_panel else ""),
                extra={"decided_by": "trial", "panel_label": label},
            )
        )
        out = self.trial(case=self._shown(case, votes))
        own = {k: v for k, v in out.items() if k not in ("label", "transcript")}
        sure = confidence(out.label, own)
        return self.verdict(
            out.label,
            transcript + list(out.transcript),
            decided_by="trial",
            trial=self.trial_name,
            trial_fields=own,
            **fields,
            **({"confidence": sure} if sure is not None else {}),
        )

    # -- saving the trial's learned state without pickle ---------------------------------------------

    def dump_state(self, json_mode: bool = True) -> dict[str, Any]:
        """DSPy state (the panel's and the trial's predictors), plus what the trial learned beyond them."""
        state = super().dump_state(json_mode=json_mode)
        extra = {k: v for k, v in self.trial.dump_state(json_mode=json_mode).items() if f"trial.{k}" not in state}
        learned = {
            name: value.to_dict()
            for name, value in vars(self.trial).items()
            if name in self._artefact_slots() and value is not None
        }
        return state | {_TRIAL_STATE: {"state": extra, "artefacts": learned}}

    def load_state(self, state: dict[str, Any], *, allow_unsafe_lm_state: bool = False) -> SettleThenTrial:
        """Inverse of :meth:`dump_state`: only the trial's own artefact slots can be set."""
        state = dict(state)
        saved = state.pop(_TRIAL_STATE, None) or {}
        super().load_state(state, allow_unsafe_lm_state=allow_unsafe_lm_state)
        if saved.get("state"):
            own = {k[len("trial.") :]: v for k, v in state.items() if k.startswith("trial.")}
            self.trial.load_state(own | dict(saved["state"]), allow_unsafe_lm_state=allow_unsafe_lm_state)
        slots = self._artefact_slots()
        for name, data in (saved.get("artefacts") or {}).items():
            if name not in slots:
                raise ValueError(f"the trial {self.trial_name} has no learned {name!r}")
            setattr(self.trial, name, slots[name].from_dict(data))
        return self

    def _artefact_slots(self) -> dict[str, Any]:
        """The trial's attributes that save themselves as JSON (precedent index, reliability model)."""
        return {name: t for name, t in _ARTEFACTS.items() if hasattr(self.trial, name)}
