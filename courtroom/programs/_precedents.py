"""Similar-cases retriever for Courtroom-LLM: training cases, their gold labels and cached reasons.

The embedder is pluggable. ``"tfidf"`` (the default) is scikit-learn's ``TfidfVectorizer``:
it needs no network, no weights and no key, it is deterministic (same cases, same vectors, same
neighbours on every machine), and lexical overlap is a good enough notion of "similar case" for
picking a few precedents. Any other string is an embedding model name that ``dspy.Embedder``
(LiteLLM) accepts, e.g. ``"openai/text-embedding-3-small"``.

The index saves without pickle: :meth:`PrecedentIndex.to_dict` holds the training cases, labels
and reasons as JSON; :meth:`PrecedentIndex.from_dict` refits the vectors on load.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel

if TYPE_CHECKING:
    import numpy as np  # imported where used: a run of another framework never needs it

TFIDF = "tfidf"


def case_key(case: str, case_id: Any = None) -> str:
    """A stable key for a training case: its id if it has one, else a hash of its text."""
    if case_id is not None and str(case_id) != "":
        return f"id:{case_id}"
    return "sha256:" + hashlib.sha256(case.encode()).hexdigest()[:16]


@dataclass
class Precedent:
    """A retrieved training case."""

    key: str
    case: str
    label: str
    similarity: float
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def _embed_tfidf(corpus: Sequence[str]) -> tuple[Any, Callable[[Sequence[str]], np.ndarray]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    vec = TfidfVectorizer(sublinear_tf=True)
    matrix = vec.fit_transform(list(corpus)).toarray()
    return matrix, lambda texts: vec.transform(list(texts)).toarray()


def _embed_model(model: str, corpus: Sequence[str]) -> tuple[Any, Callable[[Sequence[str]], np.ndarray]]:
    import dspy
    import numpy as np

    embedder = dspy.Embedder(model)
    return np.asarray(embedder(list(corpus))), lambda texts: np.asarray(embedder(list(texts)))


def _normalise(m: np.ndarray) -> np.ndarray:
    import numpy as np

    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms == 0, 1.0, norms)


class PrecedentIndex:
    """Training cases embedded for cosine-similarity search, with a cache of precedent reasons."""

    def __init__(
        self,
        cases: Sequence[Mapping[str, Any]],
        *,
        embedder: str = TFIDF,
        reasons: Mapping[str, str] | None = None,
    ) -> None:
        """Fit the index.

        Args:
            cases: dicts with ``case``, ``label`` and optionally ``id``.
            embedder: ``"tfidf"`` or an embedding model name for ``dspy.Embedder``.
            reasons: precedent reasons already generated, by case key.
        """
        if not cases:
            raise ConfigError("precedents need training cases: pass a non-empty trainset to prepare()")
        self.embedder = embedder
        self.keys = [c.get("key") or case_key(str(c["case"]), c.get("id")) for c in cases]
        self.cases = [str(c["case"]) for c in cases]
        self.labels = [str(c["label"]) for c in cases]
        self.reasons: dict[str, str] = dict(reasons or {})
        self._lock = threading.Lock()
        import numpy as np

        matrix, self._embed = _embed_tfidf(self.cases) if embedder == TFIDF else _embed_model(embedder, self.cases)
        self._matrix = _normalise(np.asarray(matrix, dtype=float))

    def __len__(self) -> int:
        return len(self.cases)

    def __deepcopy__(self, memo: dict[int, Any]) -> PrecedentIndex:
        # Optimizer copies of a program share the fitted index (it is data, not a parameter).
        return self

    def search(self, case: str, k: int, label: str | None = None) -> list[Precedent]:
        """The ``k`` most similar training cases (cosine similarity; ties by training order).

        With ``label``, only training cases whose gold label is ``label`` (fewer if the index holds
        fewer). The case itself is skipped if it is in the index, so a training case never cites itself.
        """
        if k <= 0:
            return []
        import numpy as np

        query = _normalise(np.asarray(self._embed([case]), dtype=float))[0]
        sims = self._matrix @ query
        order = sorted(range(len(sims)), key=lambda i: (-sims[i], i))
        picked = [i for i in order if self.cases[i] != case and label in (None, self.labels[i])][:k]
        return [
            Precedent(
                self.keys[i],
                self.cases[i],
                self.labels[i],
                float(sims[i]),
                self.reasons.get(self.keys[i], ""),
            )
            for i in picked
        ]

    def with_reasons(self, precedents: Sequence[Precedent], explain: Callable[[Precedent], str]) -> list[Precedent]:
        """Fill each precedent's reason, calling ``explain`` only for cases never explained before.

        Concurrent examples that cite the same new precedent share one ``explain`` call: the
        first asks, the others wait for its answer (a paid call is never made twice).
        """
        while True:
            mine: list[Precedent] = []
            theirs: list[threading.Event] = []
            with self._lock:
                pending = self.__dict__.setdefault("_pending", {})
                for p in precedents:
                    if p.key in self.reasons or any(q.key == p.key for q in mine):
                        continue
                    if p.key in pending:
                        theirs.append(pending[p.key])
                    else:
                        pending[p.key] = threading.Event()
                        mine.append(p)
            try:
                fresh = run_parallel([functools.partial(explain, p) for p in mine])
                with self._lock:
                    for p, reason in zip(mine, fresh, strict=True):
                        self.reasons.setdefault(p.key, reason)
            finally:
                with self._lock:
                    for p in mine:
                        pending.pop(p.key).set()
            with _idle():  # in batch mode, waiting on another example's request counts as waiting
                for event in theirs:
                    event.wait()
            with self._lock:
                if all(p.key in self.reasons for p in precedents):  # else another example's call failed: ask
                    return [Precedent(p.key, p.case, p.label, p.similarity, self.reasons[p.key]) for p in precedents]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (no vectors: they are refitted on load)."""
        return {
            "embedder": self.embedder,
            "cases": [
                {"key": k, "case": c, "label": lab}
                for k, c, lab in zip(self.keys, self.cases, self.labels, strict=True)
            ],
            "reasons": dict(self.reasons),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PrecedentIndex:
        """Inverse of :meth:`to_dict`."""
        return cls(data["cases"], embedder=data.get("embedder", TFIDF), reasons=data.get("reasons"))


def _idle() -> Any:
    """Batch mode's ``idle`` (this thread waits for another's answer), or nothing outside batch mode."""
    import contextlib

    from courtroom.models.batch import current

    collector = current()
    return collector.idle() if collector is not None else contextlib.nullcontext()
