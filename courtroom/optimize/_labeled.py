"""Labeled precedents: DSPy's ``LabeledFewShot`` sampling, with demos in each role's own terms.

A raw training example has ``case`` and ``label``, but a JoT judge answers ``decision`` over the
positions and a Courtroom-LLM clerk answers ``most_likely``: DSPy's adapter drops a demo that
shares no output field with the signature, so plain ``LabeledFewShot`` would silently do
nothing. Here each predictor whose outputs include a label choice gets demos with ``case`` and
that field set to the gold label (or the matching position); the adapter marks the other fields
as not supplied. Roles that choose no label (advocates) get no demos.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, get_args

import dspy

from courtroom.errors import ConfigError


def _choice_fields(predictor: dspy.Predict) -> dict[str, tuple[str, ...]]:
    out = {}
    for name, field in predictor.signature.output_fields.items():
        options = get_args(field.annotation)
        if options and all(isinstance(o, str) for o in options):
            out[name] = tuple(options)
    return out


def labeled_roles(program: Any) -> list[str]:
    """Predictors that read the case and choose among labels or positions."""
    return [n for n, p in program.named_predictors() if "case" in p.signature.input_fields and _choice_fields(p)]


class LabeledPrecedents:
    """Optimizer seam: ``compile(student, *, trainset)`` sets ``k`` labeled demos per deciding role."""

    def __init__(self, k: int = 3, seed: int = 0) -> None:
        self.k, self.seed = int(k), seed

    def compile(self, student: Any, *, trainset: Sequence[dspy.Example], **_: Any) -> Any:
        """Sample ``k`` training cases (seeded) and give each deciding role demos from them."""
        roles = labeled_roles(student)
        if not roles:
            raise ConfigError(
                f"labeled: no role of {type(student).name} reads the case and chooses a label; use bootstrap or knn"
            )
        sample = random.Random(self.seed).sample(list(trainset), min(self.k, len(trainset)))
        labels, positions = list(student.labels), list(student.positions)
        for name, predictor in student.named_predictors():
            if name not in roles:
                continue
            demos = []
            for ex in sample:
                demo: dict[str, Any] = {"case": ex.case}
                for field, options in _choice_fields(predictor).items():
                    if ex.label in options:
                        demo[field] = ex.label
                    elif ex.label in labels and positions[labels.index(ex.label)] in options:
                        demo[field] = positions[labels.index(ex.label)]
                if len(demo) > 1:
                    demos.append(dspy.Example(**demo))
            predictor.demos = demos
        return student
