"""The base of every framework and baseline: labels, positions, role models, metered role calls."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, cast

import dspy
from dspy.utils.exceptions import AdapterParseError

from courtroom.errors import ConfigError
from courtroom.models import _layout as layout
from courtroom.models import _prefix
from courtroom.models._concurrency import run_parallel, serial
from courtroom.models.lms import RoleLMs, resolve_roles, use_role
from courtroom.models.usage import current_meter
from courtroom.transcript import Turn

_BASE_PARAMS = {"self", "labels", "positions", "lm", "roles"}

RETRY_ROLLOUT = 500_009
"""Offset of the rollout id that retries a bad answer: above any program's own rollout ids and
below the repeat salt (``courtroom.runner.salting.SALT``), so a retry never shares a cache entry."""


def label_type(values: Sequence[str]) -> Any:
    """``Literal[...]`` over ``values``: the schema's enum, so constrained models can only pick one."""
    return Literal[tuple(values)]  # type: ignore[valid-type]


def typed(signature: type[dspy.Signature], name: str, type_: Any) -> type[dspy.Signature]:
    """``signature.with_updated_fields(name, type_=type_)``, made once per (signature, field, type).

    DSPy deep-copies every field of the signature to make the new class (about 1 ms); programs are
    built, and Courtroom-LLM's judges typed per case, thousands of times a run. Signatures are
    values (a change makes a new class), so the made class is shared.
    """
    made: type[dspy.Signature] = _typed(cast(Any, signature), name, type_)
    return made


@functools.lru_cache(maxsize=1024)
def _typed(signature: Any, name: str, type_: Any) -> Any:
    return signature.with_updated_fields(name, type_=type_)


class CourtroomProgram(dspy.Module):
    """A decision program over a task's label space.

    Subclasses set ``name``, ``roles`` (one predictor attribute per role, named after it) and
    take their structural knobs as keyword arguments of ``__init__`` with defaults; those
    defaults are what ``courtroom frameworks`` lists and what studies start from.
    """

    name: ClassVar[str] = ""
    roles: ClassVar[tuple[str, ...]] = ()
    binary_only: ClassVar[bool] = False
    summary: ClassVar[str] = ""
    sampling_temperatures: ClassVar[dict[str, float]] = {}
    """Role -> the temperature used when the user gives none (see :meth:`sampled_roles`)."""
    early_stop_knobs: ClassVar[dict[str, Any]] = {}
    """Early-stopping knob -> the value that turns it off (its default). While any is on, the number
    of calls per case depends on the answers: see :attr:`adaptive`."""
    swappable: ClassVar[bool] = False
    """Whether the program seats sides in an order :meth:`swapped` can exchange (``--debias swap``)."""
    sides_swapped: bool = False
    """True on the copy :meth:`swapped` makes."""
    refresh: int = 0
    """Set by ``--retry-failed``: a bad answer that comes back from the cache is asked again under
    its rollout id plus this offset (sent afresh); answers that parsed are reused from the cache."""

    def __init__(
        self,
        labels: Sequence[str],
        positions: Sequence[str] | None = None,
        *,
        lm: Any = None,
        roles: RoleLMs | Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        labels = [str(x) for x in labels]
        if len(labels) < 2 or len(set(labels)) != len(labels):
            raise ConfigError(f"{self.name}: need at least 2 distinct labels, got {labels}")
        if self.binary_only and len(labels) != 2:
            raise ConfigError(
                f"{self.name} is binary; this task has {len(labels)} labels: use courtroom-llm, "
                "debate-feedback or a baseline for multi-class tasks"
            )
        self.labels = labels
        self.positions = [str(p) for p in positions] if positions else list(labels)
        if len(self.positions) != len(labels):
            raise ConfigError(f"{self.name}: positions {self.positions} must pair one-to-one with labels {labels}")
        if isinstance(roles, RoleLMs) and lm is None:
            self.lms = roles
        else:
            self.lms = resolve_roles(lm, roles, valid_roles=self.roles)
        self.temperatures: dict[str, float] = dict(self.sampling_temperatures)
        """Role -> temperature sent with each call when the role's model has none of its own."""

    @classmethod
    def knobs(cls) -> dict[str, Any]:
        """Structural knobs and their defaults."""
        params = inspect.signature(cls.__init__).parameters
        return {
            n: p.default
            for n, p in params.items()
            if n not in _BASE_PARAMS and p.kind is p.KEYWORD_ONLY and p.default is not p.empty
        }

    def config(self) -> dict[str, Any]:
        """This instance's knob values."""
        return {name: getattr(self, name) for name in self.knobs()}

    @property
    def adaptive(self) -> bool:
        """Whether an early-stopping knob is on, so the calls per case are a maximum, not a count.

        The maximum is the call count of the same configuration with those knobs off
        (``cls(..., **{**program.config(), **cls.early_stop_knobs})``).
        """
        return any(getattr(self, k) != off for k, off in self.early_stop_knobs.items())

    def most_calls_knobs(self) -> dict[str, Any]:
        """This configuration's knobs at its most calls per case: every early-stopping knob off.

        The dry run prices an :attr:`adaptive` program by these.
        """
        return self.config() | self.early_stop_knobs

    def fewest_calls_knobs(self) -> dict[str, Any] | None:
        """Its knobs at its fewest calls per case, for a design the dry run prices as a range.

        None (the default): the dry run gives the most it can spend only.
        """
        return None

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Fit whatever the program learns from training examples (precedent index, reliability model).

        The harness calls it with the task's train split before evaluating. Examples carry
        ``case``, ``label`` and ``id``. Programs that learn nothing ignore it.
        """

    def prepare_report(self) -> dict[str, float]:
        """What :meth:`prepare` learned, measured (metric name -> value) for the run summary; empty if nothing."""
        return {}

    def sampled_roles(self) -> dict[str, int]:
        """Roles asked the same prompt several times per case, and how many times (this config).

        Such samples differ only at temperature > 0; :func:`sampling_warning` says so otherwise.
        """
        return {}

    def temperature_of(self, role: str) -> float | None:
        """The temperature ``role``'s calls run at: its model's own, else :attr:`temperatures`."""
        own = (getattr(self.lms.for_role(role), "kwargs", None) or {}).get("temperature")
        return float(own) if own is not None else self.temperatures.get(role)

    def sampling_warning(self) -> str | None:
        """One line if a role is sampled several times at temperature 0 (every sample the same answer)."""
        cold = [f"{r} x{n}" for r, n in self.sampled_roles().items() if self.temperature_of(r) == 0]
        if not cold:
            return None
        return (
            f"{self.name}: {', '.join(cold)} sampled at temperature 0: the samples will be identical "
            "and the extra calls wasted; pass --temperature > 0 (or drop it to use the framework's default)"
        )

    def swapped(self) -> CourtroomProgram:
        """A copy with the sides in each other's seats: labels and positions in reverse order.

        Everything the program learned (demos, instructions, what ``prepare`` fitted) is kept;
        each framework's :meth:`_reorder` re-narrows its label enums to the new order (the order
        shows in the prompt's schema) and moves whatever else seats a side. ``sides_swapped``
        tells the copy from the original.
        """
        if not self.swappable:
            raise ConfigError(f"{self.name} has no sides to swap")
        twin = self.deepcopy()
        twin.labels, twin.positions = self.labels[::-1], self.positions[::-1]
        twin.sides_swapped = not self.sides_swapped
        twin._reorder(self)
        return twin

    def _reorder(self, original: CourtroomProgram) -> None:
        """Re-narrow the label enums after :meth:`swapped` reversed the labels (swappable programs)."""

    def label_of(self, position: str) -> str:
        """The label a position stands for."""
        return self.labels[self.positions.index(position)]

    def ask(
        self,
        role: str,
        predictor: dspy.Predict,
        rollout: int | None = None,
        lm_config: Mapping[str, Any] | None = None,
        *,
        sample: bool = True,
        **inputs: Any,
    ) -> dspy.Prediction:
        """Call ``predictor`` on ``role``'s model, counted by the current meter.

        ``lm_config`` adds call options (e.g. ``{"logprobs": True}``) to the rollout id. Unless
        ``sample`` is False, a role in :attr:`temperatures` whose model has no temperature of its
        own runs at that temperature. The rollout also picks the member of a mixed panel
        (:mod:`courtroom.models.panels`). A bad answer (cut off, not valid JSON, not the schema) fails the
        call; it is asked once more, of the same panel member, under a rollout id of its own (the
        bad answer stays cached under the first), and a second bad answer fails the example. Under
        :attr:`refresh` (``--retry-failed``), two bad answers from the cache are asked again afresh.
        """
        try:
            return self._ask_once(role, predictor, rollout, rollout, lm_config, inputs, sample)
        except AdapterParseError as first:
            retry = (rollout or 0) + RETRY_ROLLOUT
            try:
                return self._ask_once(role, predictor, retry, rollout, lm_config, inputs, sample)
            except AdapterParseError as second:
                cached = getattr(first, "from_cache", False) or getattr(second, "from_cache", False)
                if not (self.refresh and cached):
                    raise
        # --retry-failed: both answers were bad and came back from the cache; ask both afresh.
        try:
            return self._ask_once(role, predictor, (rollout or 0) + self.refresh, rollout, lm_config, inputs, sample)
        except AdapterParseError:
            return self._ask_once(role, predictor, retry + self.refresh, rollout, lm_config, inputs, sample)

    def samples_in_one_request(self, role: str) -> bool:
        """Whether :meth:`ask_samples` sends ``role``'s samples of one prompt as one request (n-sampling)."""
        from courtroom.models import sampling

        assumed = sampling.assumed_for(role)  # a dry run decides by the model's name and --n-sampling
        if assumed is not None:
            return assumed
        lm = self.lms.serving(role)
        return sampling.enabled(lm) and sampling.takes_n(lm)

    def ask_samples(
        self,
        role: str,
        predictor: dspy.Predict,
        rollouts: Sequence[int],
        lm_config: Mapping[str, Any] | None = None,
        **inputs: Any,
    ) -> list[dspy.Prediction]:
        """``len(rollouts)`` samples of one prompt from ``role``: :meth:`ask` under each rollout, in order.

        Where the role's one model takes ``n`` (:mod:`courtroom.models.sampling`) they go as one
        request with ``n`` (each sample still a call of its own: cache, usage, transcript);
        otherwise concurrently, one request each. A mixed panel (each rollout its own member)
        always sends one request per sample.
        """
        from courtroom.models import sampling

        def one(i: int, rollout: int) -> dspy.Prediction:
            with sampling.sample(i):
                return self.ask(role, predictor, rollout, lm_config, **inputs)

        thunks = [functools.partial(one, i, r) for i, r in enumerate(rollouts)]
        if len(thunks) > 1 and self.samples_in_one_request(role):
            # The first call sends them all: no thread per sample (run serially; a dry run's depth
            # still counts them as one round).
            token = serial.set(True)
            try:
                with sampling.group(list(rollouts)):
                    return run_parallel(thunks)
            finally:
                serial.reset(token)
        return run_parallel(thunks)

    def _ask_once(
        self,
        role: str,
        predictor: dspy.Predict,
        rollout: int | None,
        member: int | None,
        lm_config: Mapping[str, Any] | None,
        inputs: dict[str, Any],
        sample: bool = True,
    ) -> dspy.Prediction:
        meter = current_meter()
        config = ({"rollout_id": rollout} if rollout else {}) | dict(lm_config or {})
        lm = self.lms.for_role(role, member)
        own = (getattr(lm, "kwargs", None) or {}).get("temperature")
        if sample and own is None and role in self.temperatures:
            config["temperature"] = self.temperatures[role]
        cache_layout = self.layout_of(lm, inputs.get(layout.CASE)) == "cache"
        hint = layout.cache_hint(lm, cache_layout, inputs.get(layout.CASE))
        if hint is not None:
            config["prompt_cache"] = hint
        opening = layout.preamble(self.preamble(), role) if cache_layout else contextlib.nullcontext()
        # One write, many reads: a request sharing a new prefix waits for the first (courtroom.models._prefix).
        shared = (
            layout.shared_prefixes(lm, hint, self.preamble(), inputs.get(layout.CASE), role, predictor.signature)
            if cache_layout and not predictor.demos
            else ()
        )
        with use_role(self.lms, role, member), opening, _prefix.sharing(shared):
            try:
                out = predictor(**inputs, config=config) if config else predictor(**inputs)
            except Exception:
                if meter:
                    meter.count_call(failed=True)
                raise
        if meter:
            meter.count_call()
        return out

    def layout_of(self, lm: Any, case: Any) -> str:
        """``classic`` or ``cache``: the prompt layout of this program's requests to ``lm`` about ``case``.

        ``--prompt-layout auto`` asks the cost model, per model and case, at batch prices in batch
        mode (:mod:`courtroom.cost.layout_choice`); without a case, classic.
        """
        value = layout.layout_for(lm)
        if value != "auto":
            return value
        if not isinstance(case, str) or not case:
            return "classic"
        from courtroom.cost.layout_choice import choose

        return choose(self, lm, case).layout

    def preamble(self) -> str:
        """Every role's instructions, the opening of each cache-layout prompt (:mod:`courtroom.models._layout`)."""
        key = tuple(p.signature.instructions for _, p in self.named_predictors())
        cached = self.__dict__.get("_preamble_cache")
        if cached is None or cached[0] != key:
            cached = self.__dict__["_preamble_cache"] = (key, layout.program_preamble(self))
        return cached[1]

    def verdict(self, label: str, transcript: list[Turn], **fields: Any) -> dspy.Prediction:
        """The program's output: ``label`` (always one of the labels) and ``transcript``."""
        if label not in self.labels:
            raise ValueError(f"{self.name} produced {label!r}, not one of {self.labels}")
        return dspy.Prediction(label=label, transcript=transcript, **fields)
