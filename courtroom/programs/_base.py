"""The base of every framework and baseline: labels, positions, role models, metered role calls."""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import dspy

from courtroom.errors import ConfigError
from courtroom.lms import RoleLMs, resolve_roles, use_role
from courtroom.transcript import Turn
from courtroom.usage import current_meter

_BASE_PARAMS = {"self", "labels", "positions", "lm", "roles"}


def label_type(values: Sequence[str]) -> Any:
    """``Literal[...]`` over ``values``: the schema's enum, so constrained models can only pick one."""
    return Literal[tuple(values)]  # type: ignore[valid-type]


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

    def prepare(self, trainset: Sequence[dspy.Example]) -> None:
        """Fit whatever the program learns from training examples (precedent index, reliability model).

        The harness calls it with the task's train split before evaluating. Examples carry
        ``case``, ``label`` and ``id``. Programs that learn nothing ignore it.
        """

    def label_of(self, position: str) -> str:
        """The label a position stands for."""
        return self.labels[self.positions.index(position)]

    def ask(
        self,
        role: str,
        predictor: dspy.Predict,
        rollout: int | None = None,
        lm_config: Mapping[str, Any] | None = None,
        **inputs: Any,
    ) -> dspy.Prediction:
        """Call ``predictor`` on ``role``'s model, counted by the current meter.

        ``lm_config`` adds call options (e.g. ``{"logprobs": True}``) to the rollout id. The
        rollout also picks the member of a mixed panel (:mod:`courtroom.panels`).
        """
        meter = current_meter()
        config = ({"rollout_id": rollout} if rollout else {}) | dict(lm_config or {})
        with use_role(self.lms, role, rollout):
            try:
                out = predictor(**inputs, config=config) if config else predictor(**inputs)
            except Exception:
                if meter:
                    meter.count_call(failed=True)
                raise
        if meter:
            meter.count_call()
        return out

    def verdict(self, label: str, transcript: list[Turn], **fields: Any) -> dspy.Prediction:
        """The program's output: ``label`` (always one of the labels) and ``transcript``."""
        if label not in self.labels:
            raise ValueError(f"{self.name} produced {label!r}, not one of {self.labels}")
        return dspy.Prediction(label=label, transcript=transcript, **fields)
