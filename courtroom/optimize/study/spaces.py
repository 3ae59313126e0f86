"""Search spaces for studies: one per framework, over the knobs the program class really has.

Each framework's space names its knobs; :func:`build_space` checks them against the class's
``knobs()`` (a space that names a knob the class lacks is an error, not a silent skip), narrows
them by user overrides (which must stay inside the bounds), and adds per-role temperatures and
per-role model choices when asked. The paper's defaults (the class's knob defaults) are what
:func:`default_params` returns, for trial 0.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from courtroom.errors import ConfigError

MODEL = "model:"
TEMPERATURE = "temperature:"


@dataclass(frozen=True)
class Param:
    """One searched parameter: an int or float range, or a list of choices."""

    name: str
    kind: str
    """``int``, ``float`` or ``cat``."""
    low: float = 0
    high: float = 0
    choices: tuple[Any, ...] = ()
    only_if: tuple[str, tuple[Any, ...]] | None = None
    """Sampled only when another parameter takes one of these values; else fixed to ``otherwise``."""
    also_if: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    """Further conditions that must hold as well (sequential judges *and* three or more of them)."""
    otherwise: Any = None
    dearest: Any = None
    """The choice a trial spends the most at (calls, then tokens), for the dry run; None: cost does not depend on it."""

    @property
    def conditions(self) -> tuple[tuple[str, tuple[Any, ...]], ...]:
        """Every (parameter, values it must take) this one is drawn under."""
        return ((self.only_if,) if self.only_if else ()) + self.also_if

    def off(self, drawn: Mapping[str, Any], left_out: set[str] | frozenset[str] = frozenset()) -> bool:
        """Whether a condition fails on the values ``drawn`` so far, or names a parameter ``left_out``."""
        return any(n in left_out or (n in drawn and drawn[n] not in ok) for n, ok in self.conditions)

    def renamed(self, rename: Any, parent: tuple[str, tuple[Any, ...]] | None = None) -> Param:
        """This parameter and its conditions under ``rename(name)`` (None drops a condition).

        ``parent`` is the condition given to a parameter that had none (a design's, in a space of designs).
        """
        conds = [(rename(n), ok) for n, ok in self.conditions]
        kept = [c for c in conds if c[0] is not None]
        if not self.conditions and parent:
            kept = [parent]
        return replace(self, name=rename(self.name), only_if=kept[0] if kept else None, also_if=tuple(kept[1:]))

    def suggest(self, trial: Any) -> Any:
        """Draw this parameter in an Optuna trial."""
        if self.kind == "int":
            return trial.suggest_int(self.name, int(self.low), int(self.high))
        if self.kind == "float":
            return trial.suggest_float(self.name, float(self.low), float(self.high))
        return trial.suggest_categorical(self.name, list(self.choices))

    def contains(self, value: Any) -> bool:
        """Whether ``value`` lies in this space."""
        if self.kind == "cat":
            return value in self.choices
        return isinstance(value, int | float) and not isinstance(value, bool) and self.low <= value <= self.high

    def describe(self) -> str:
        """Human-readable bounds."""
        if self.kind == "cat":
            return "{" + ", ".join(map(str, self.choices)) + "}"
        return f"[{self.low:g}, {self.high:g}]"

    def narrowed(self, spec: str) -> Param:
        """This parameter narrowed by ``LOW:HIGH``, ``a,b`` or a single value; never widened."""

        def value(text: str) -> Any:
            text = text.strip()
            if self.kind == "cat":
                for c in self.choices:
                    if str(c).lower() == text.lower():
                        return c
                raise ConfigError(f"search space: {self.name}={text!r} is outside {self.describe()}")
            try:
                v = int(text) if self.kind == "int" else float(text)
            except ValueError as exc:
                raise ConfigError(f"search space: {self.name} needs a number, got {text!r}") from exc
            if not self.low <= v <= self.high:
                raise ConfigError(f"search space: {self.name}={v} is outside its bounds {self.describe()}")
            return v

        if self.kind == "cat":
            picked = tuple(dict.fromkeys(value(t) for t in spec.split(",")))
            return replace(self, choices=picked)
        lo, sep, hi = spec.partition(":")
        low, high = value(lo), value(hi) if sep else value(lo)
        if low > high:
            raise ConfigError(f"search space: {self.name} range {spec!r} is empty (low > high)")
        return replace(self, low=low, high=high)


def Int(name: str, low: int, high: int) -> Param:  # noqa: N802 - reads like a type in the tables below
    """An integer range."""
    return Param(name, "int", low, high)


def Float(name: str, low: float, high: float) -> Param:  # noqa: N802
    """A float range."""
    return Param(name, "float", low, high)


def Choice(  # noqa: N802
    name: str,
    *choices: Any,
    only_if: tuple[str, tuple[Any, ...]] | None = None,
    also_if: tuple[tuple[str, tuple[Any, ...]], ...] = (),
    otherwise: Any = None,
    dearest: Any = None,
) -> Param:
    """A categorical choice, optionally conditional on other parameters (``dearest``: see :class:`Param`)."""
    return Param(
        name, "cat", choices=tuple(choices), only_if=only_if, also_if=also_if, otherwise=otherwise, dearest=dearest
    )


def sample(space: Sequence[Param], trial: Any) -> dict[str, Any]:
    """Draw every parameter of ``space`` in order, honouring conditions (define-by-run)."""
    out: dict[str, Any] = {}
    for p in space:
        out[p.name] = p.otherwise if p.off(out) else p.suggest(trial)
    return out


SPACES: dict[str, tuple[Param, ...]] = {
    # Without the lawyer the prosecutor must speak (an empty courtroom is not a configuration), and
    # feedback only exists between rounds: a 1-round trial does not draw it (no dead dimensions).
    "jot": (
        Int("n_loops", 1, 5),
        Choice("use_lawyer", True, False),
        Choice("use_prosecutor", True, False, only_if=("use_lawyer", (True,)), otherwise=True),
        Choice("use_feedback", True, False, only_if=("n_loops", (2, 3, 4, 5)), otherwise=True),
        # Stop when stable (courtroom.programs._stopping): 2 stable rounds can only shorten 3+ rounds.
        Choice("stop_when_stable", 0, 2, only_if=("n_loops", (3, 4, 5)), otherwise=0),
    ),
    "courtroom-llm": (
        Int("n_judges", 1, 5),
        # Sequential judges read the earlier judges' reasons: more prompt tokens, as many calls. One
        # judge has no earlier judge (and no majority to settle early): it draws neither.
        Choice(
            "judge_mode",
            "parallel",
            "sequential",
            only_if=("n_judges", (2, 3, 4, 5)),
            otherwise="parallel",
            dearest="sequential",
        ),
        # Which earlier judges a sequential judge reads (all: the early paper; last: the final paper):
        # with two judges the second reads the first either way.
        Choice(
            "previous_judges",
            "all",
            "last",
            only_if=("judge_mode", ("sequential",)),
            also_if=(("n_judges", (3, 4, 5)),),
            otherwise="all",
            dearest="all",
        ),
        Int("k_precedents", 0, 3),
        # Which training cases the judges read, and how long their reasons are: nothing without precedents.
        # Per label gives as many or more precedents (each a reason to write) than per candidate or global.
        Choice(
            "precedent_scope",
            "candidate",
            "label",
            "global",
            only_if=("k_precedents", (1, 2, 3)),
            otherwise="candidate",
            dearest="label",
        ),
        Choice("reason_sentences", 1, 2, 3, 0, only_if=("k_precedents", (1, 2, 3)), otherwise=1, dearest=0),
        Choice("assignment", "fixed", "random"),
        Int("max_argument_sentences", 0, 3),
        Choice(
            "early_stop",
            False,
            True,
            only_if=("judge_mode", ("parallel",)),
            also_if=(("n_judges", (2, 3, 4, 5)),),
            otherwise=False,
        ),
        # Sequential judges stop once 2 in a row agree: only 3+ judges can be shortened.
        Choice(
            "stop_when_stable",
            0,
            2,
            only_if=("judge_mode", ("sequential",)),
            also_if=(("n_judges", (3, 4, 5)),),
            otherwise=0,
        ),
    ),
    "debate-feedback": (
        Int("n_rounds", 1, 4),
        Int("n_debaters", 2, 4),
        Float("smoothing", 0.0, 1.0),
        # The assistant variant summarises each statement for the assistant and trains it on debates
        # over the train split: several times the calls of the single variant.
        Choice("variant", "single", "assistant", dearest="assistant"),
        # The gate's threshold: the single variant has no reliabilities to hold against it.
        Param("threshold", "float", 0.0, 1.0, only_if=("variant", ("assistant",)), otherwise=0.5),
        # The gate reads reliabilities: the single variant has none and passes every round. "any"
        # passes whenever "mean" does, and forwards every comment where "comment" forwards some.
        Choice("gate", "any", "mean", "comment", only_if=("variant", ("assistant",)), otherwise="any", dearest="any"),
        # Split sides add a perspective to each debater's prompt (and multi-class training debates ask O_0).
        Choice("sides", "split", "none", dearest="split"),
        # Memory carries earlier rounds into each prompt: a 1-round debate has none to carry.
        Choice("memory", False, True, only_if=("n_rounds", (2, 3, 4)), otherwise=False, dearest=True),
        Choice("stop_epsilon", 0.0, 0.02, 0.05, 0.1, only_if=("n_rounds", (2, 3, 4)), otherwise=0.0),
        Choice("stop_when_stable", 0, 2, only_if=("n_rounds", (3, 4)), otherwise=0),
        # Where a tie in O_n goes (the paper states no rule; "initial" is what its Table 5 implies).
        Choice("tie", "initial", "previous", "last"),
    ),
    "self-consistency": (Int("k_samples", 1, 5),),
    "parallel-vote": (Int("n_models", 1, 5),),
    "khan-debate": (
        Int("n_rounds", 1, 4),
        Choice("stop_on_concession", False, True, only_if=("n_rounds", (2, 3, 4)), otherwise=False),
    ),
    # Designs without searched knobs: a study across designs scores each as a single point (the
    # cheap end of every cost-accuracy front).
    "zero-shot": (),
    "few-shot": (),
    "cot": (),
    "reflexion": (Int("max_retries", 0, 3),),
}

TRIALS = ("courtroom-llm", "jot", "debate-feedback", "khan-debate")
"""The trials a settle design's space chooses from (:mod:`courtroom.programs.settle`)."""
CONVENES: dict[str, tuple[str, str]] = {"settle": ("trial", "trial_knobs")}
"""Design -> (its knob naming the design it convenes, its knob carrying that design's knobs as text).

Its space holds each convened design's space as ``{design}.{knob}``, drawn only when that design is
chosen; :func:`split_params` packs the chosen one's into the carrier (``n_loops=3,use_feedback=true``).
"""


def _convened(chooser: str, designs: Sequence[str]) -> tuple[Param, ...]:
    """Each design's space under ``{design}.{knob}``, conditional on ``chooser`` picking it."""
    return tuple(p.renamed(lambda n, d=d: f"{d}.{n}", parent=(chooser, (d,))) for d in designs for p in SPACES[d])


SPACES["settle"] = (
    Int("panel_size", 1, 5),
    Float("threshold", 0.5, 1.0),
    # Stated confidences and a panel shown to the trial lengthen the prompts (the calls stay the same).
    Choice("signal", "votes", "confidence", dearest="confidence"),
    Choice("trial", *TRIALS),
    Choice("show_panel", False, True, dearest=True),
    *_convened("trial", TRIALS),
)


REPEATED: dict[str, tuple[str, ...]] = {
    "courtroom-llm": ("judge",),
    "debate-feedback": ("debater", "judge"),
    "self-consistency": ("classifier",),
    "parallel-vote": ("classifier",),
    "khan-debate": ("debater",),
    "settle": ("panel", "judge", "debater"),
}
"""Roles a framework calls several times in one decision: the roles a mixed panel can serve."""


def add_plugin_spaces(frameworks: Sequence[str]) -> None:
    """Give each framework of an installed package (:mod:`courtroom._plugins`) its space in :data:`SPACES`.

    Its class's ``search_space`` (a tuple of :class:`Param` over its knobs); none: only its models
    (and temperatures) are searched, as for ``zero-shot``.
    """
    from courtroom.programs import get_framework

    for framework in frameworks:
        if framework not in SPACES:
            SPACES[framework] = tuple(getattr(get_framework(framework), "search_space", ()))


def build_space(
    framework: str,
    *,
    overrides: Mapping[str, str] | None = None,
    models: Sequence[str] = (),
    temperatures: bool = False,
    panels: bool = True,
) -> list[Param]:
    """The search space of ``framework``, narrowed by ``overrides`` (name -> ``LOW:HIGH`` or ``a,b``).

    With several ``models``, each role chooses its model; roles in :data:`REPEATED` may also
    choose the mixed panel of all of them (``"a,b"``, see :mod:`courtroom.models.panels`).
    """
    from courtroom.programs import get_framework

    cls = get_framework(framework)
    if framework not in SPACES:
        raise ConfigError(f"no search space for {framework}: studies cover {', '.join(sorted(SPACES))}")
    knobs = cls.knobs()
    missing = [p.name for p in SPACES[framework] if _default(framework, p.name) is _NONE]
    if missing:
        raise ConfigError(
            f"the search space of {framework} names knob(s) {', '.join(missing)} that {cls.__name__} "
            f"does not have (its knobs: {', '.join(knobs)}); update courtroom/optimize/study/spaces.py"
        )
    space = list(SPACES[framework])
    if len(set(models)) > 1:
        choices = tuple(dict.fromkeys(models))
        panel = (",".join(choices),) if panels else ()
        space += [
            Choice(MODEL + role, *choices, *(panel if role in REPEATED.get(framework, ()) else ()))
            for role in cls.roles
        ]
    if temperatures:
        space += [Float(TEMPERATURE + role, 0.0, 1.0) for role in cls.roles]
    by_name = {p.name: p for p in space}
    for name, spec in (overrides or {}).items():
        if name not in by_name:
            raise ConfigError(
                f"search space of {framework} has no parameter {name!r}: it has "
                + ", ".join(f"{p.name} {p.describe()}" for p in space)
            )
        by_name[name] = by_name[name].narrowed(str(spec))
    return [by_name[p.name] for p in space]


def dearest_values(space: Sequence[Param], given: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``given`` plus the values of ``space`` a trial spends the most at (for the dry run's bound).

    Integers at their highest; a choice at its :attr:`Param.dearest` while the space still holds
    it, else at its only value when narrowed to one; floats and other choices are left out (the
    framework's default). A conditional parameter whose condition the point fails takes its
    ``otherwise``, as :func:`sample` gives it.
    """
    out = dict(given or {})
    for p in space:
        if p.off(out):
            out[p.name] = p.otherwise
        elif p.kind == "int":
            out[p.name] = int(p.high)
        elif p.kind == "cat" and p.dearest is not None and p.dearest in p.choices:
            out[p.name] = p.dearest
        elif p.kind == "cat" and len(p.choices) == 1:
            out[p.name] = p.choices[0]
    return out


def default_params(framework: str, space: Sequence[Param]) -> dict[str, Any]:
    """The paper's configuration (the class's knob defaults), where the space still contains it.

    A conditional parameter that configuration does not draw (its condition unmet) is left out, as
    a trial's own parameters leave it out.
    """
    out: dict[str, Any] = {}
    left_out: set[str] = set()
    for p in space:
        if p.off(out, left_out):
            left_out.add(p.name)
            continue
        default = _default(framework, p.name)
        if default is not _NONE and p.contains(default):
            out[p.name] = default
        elif p.name.startswith(MODEL):
            out[p.name] = p.choices[0]
    return out


_NONE = object()


def _default(framework: str, name: str) -> Any:
    """The default of knob ``name`` of ``framework`` (``{design}.{knob}``: a convened design's); else _NONE."""
    from courtroom.programs import get_framework

    knobs = get_framework(framework).knobs()
    if name in knobs:
        return knobs[name]
    design, dot, knob = name.partition(".")
    if dot and framework in CONVENES:
        return get_framework(design).knobs().get(knob, _NONE) if design in SPACES else _NONE
    return _NONE


def pack_convened(knobs: Mapping[str, Any]) -> dict[str, Any]:
    """``knobs`` with a convened design's ``{design}.{knob}`` entries packed into its carrier (:data:`CONVENES`).

    Only the chosen design's knobs are kept (the others were not drawn); knobs without a chooser
    are returned unchanged.
    """
    from courtroom.programs.settle import knobs_text, parse_trial_knobs

    out = dict(knobs)
    for chooser, carrier in CONVENES.values():
        if chooser not in out or not any("." in k for k in out):
            continue
        chosen = str(out[chooser])
        own = {k.split(".", 1)[1]: v for k, v in out.items() if k.startswith(chosen + ".")}
        out = {k: v for k, v in out.items() if "." not in k}
        if own:
            given = parse_trial_knobs(out.get(carrier) or "", chosen)
            out[carrier] = knobs_text(given | own)
    return out


def split_params(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, str], dict[str, float]]:
    """(knobs, role -> model, role -> temperature) from a trial's parameters (:func:`pack_convened` applied)."""
    knobs = pack_convened({k: v for k, v in params.items() if ":" not in k})
    models = {k[len(MODEL) :]: v for k, v in params.items() if k.startswith(MODEL)}
    temps = {k[len(TEMPERATURE) :]: float(v) for k, v in params.items() if k.startswith(TEMPERATURE)}
    return knobs, models, temps
