"""KNN precedents: per input, each role sees worked examples from the most similar training cases.

DSPy's ``KNNFewShot`` re-runs ``BootstrapFewShot`` inside every call and keeps its choice in a
closure, so a saved program forgets it. Here the work is split the way a saved program needs:

* :func:`bootstrap_traces` runs the program once per training case and keeps, for the cases it
  got right, every role's call (inputs and outputs) as a demo;
* :class:`KNNPrecedents` stores those demos by training case (plain JSON) and, at call time,
  gives each predictor the demos of the ``k`` training cases most similar (TF-IDF cosine) to the
  case that predictor is reading. It is thread-safe: nothing is stored on the predictor per call.
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import dspy
import numpy as np

from courtroom.errors import ConfigError


def bootstrap_traces(
    program: dspy.Module,
    trainset: Sequence[dspy.Example],
    metric: Callable[..., Any],
    *,
    concurrency: int = 4,
) -> list[dict[str, list[dict[str, Any]]]]:
    """For each training case: predictor name -> demos from a correct run ({} if wrong or failed)."""
    names = {id(p): n for n, p in program.named_predictors()}

    def one(ex: dspy.Example) -> dict[str, list[dict[str, Any]]]:
        with dspy.context(trace=[]):
            try:
                pred = program(case=ex.case)
            except Exception:  # noqa: BLE001 - a failed training case gives no demos
                return {}
            trace = list(dspy.settings.trace)
        if not metric(ex, pred):
            return {}
        demos: dict[str, list[dict[str, Any]]] = {}
        for predictor, inputs, outputs in trace:
            name = names.get(id(predictor))
            if name is not None:
                demos.setdefault(name, []).append({**inputs, **dict(outputs.items())})
        return demos

    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        return list(pool.map(lambda ex: contextvars.copy_context().run(one, ex), trainset))


class KNNPrecedents:
    """Demos by training case, retrieved per call by similarity to the predictor's ``case`` input."""

    def __init__(
        self,
        cases: Sequence[str],
        demos: Sequence[Mapping[str, Sequence[Mapping[str, Any]]]],
        k: int,
        per_role: int = 1,
    ) -> None:
        """Index ``cases`` (training case texts) with their per-predictor ``demos``.

        ``per_role`` caps the demos one training case gives one predictor (a JoT judge speaks
        every round; its final ruling is the most telling, so the last calls are kept).
        """
        from sklearn.feature_extraction.text import TfidfVectorizer

        if len(cases) != len(demos):
            raise ConfigError("knn: one demo set per training case is required")
        if k < 1:
            raise ConfigError(f"knn: k must be >= 1, got {k}")
        self.cases, self.k, self.per_role = list(cases), int(k), int(per_role)
        self.demos = [{n: [dict(d) for d in ds] for n, ds in entry.items()} for entry in demos]
        self._vec = TfidfVectorizer(sublinear_tf=True).fit(self.cases)
        m = self._vec.transform(self.cases).toarray()
        self._matrix = m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)

    def __deepcopy__(self, memo: dict[int, Any]) -> KNNPrecedents:
        return self

    @property
    def useful(self) -> int:
        """Training cases that contribute demos."""
        return sum(bool(d) for d in self.demos)

    def neighbours(self, case: str) -> list[int]:
        """Indices of the ``k`` most similar training cases that have demos (the case itself excluded)."""
        q = self._vec.transform([case]).toarray()[0]
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = self._matrix @ q
        order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))
        return [i for i in order if self.demos[i] and self.cases[i] != case][: self.k]

    def demos_for(self, predictor: str, case: str) -> list[dspy.Example]:
        """Demos for ``predictor`` reading ``case``."""
        out = []
        for i in self.neighbours(case):
            for d in self.demos[i].get(predictor, [])[-self.per_role :]:
                out.append(dspy.Example(augmented=True, **d))
        return out

    def attach(self, program: dspy.Module) -> None:
        """Route every predictor of ``program`` through this index (called after compile and on load)."""
        for name, predictor in program.named_predictors():
            predictor.forward = functools.partial(self._forward, name, predictor)

    def _forward(self, name: str, predictor: dspy.Predict, **kwargs: Any) -> Any:
        case = kwargs.get("case")
        if isinstance(case, str) and "demos" not in kwargs:
            kwargs["demos"] = self.demos_for(name, case)
        return type(predictor).forward(predictor, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the TF-IDF vectors are refitted on load)."""
        return {"k": self.k, "per_role": self.per_role, "cases": self.cases, "demos": self.demos}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> KNNPrecedents:
        """Inverse of :meth:`to_dict`."""
        return cls(data["cases"], data["demos"], int(data["k"]), int(data.get("per_role", 1)))


class KNNOptimizer:
    """Optimizer seam (``compile(student, *, trainset)``) for :class:`KNNPrecedents`."""

    def __init__(self, metric: Callable[..., Any], k: int = 3, per_role: int = 1, concurrency: int = 4) -> None:
        self.metric, self.k, self.per_role, self.concurrency = metric, k, per_role, concurrency

    def compile(self, student: dspy.Module, *, trainset: Sequence[dspy.Example], **_: Any) -> dspy.Module:
        """Bootstrap demos on ``trainset`` and attach the index to ``student``."""
        for name, p in student.named_predictors():
            if "case" not in p.signature.input_fields:
                raise ConfigError(f"knn needs every role to read the case; predictor {name!r} does not")
        demos = bootstrap_traces(student, trainset, self.metric, concurrency=self.concurrency)
        index = KNNPrecedents([ex.case for ex in trainset], demos, self.k, self.per_role)
        if not index.useful:
            raise ConfigError(
                "knn: the program got no training case right, so there are no precedents to "
                "retrieve; use more training cases or a stronger model"
            )
        student.knn_precedents = index
        index.attach(student)
        return student
