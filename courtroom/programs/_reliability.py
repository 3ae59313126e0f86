"""The Debate-Feedback assistant: a learned reliability score for a debater's final comment.

A scikit-learn ``LogisticRegression`` on TF-IDF features of ``case + opinion``, trained to predict
whether the debater's position equals the gold label (the paper's Table 1). It is small, fits in
milliseconds, is deterministic, and needs no network or weights. It saves as plain JSON
(vocabulary, idf, coefficients), never as a pickle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from courtroom.errors import ConfigError


def reliability_text(case: str, opinion: str) -> str:
    """The learner's input: the case background followed by the debater's opinion."""
    return f"{case}\n{opinion}"


class ReliabilityModel:
    """P(debater's position is right | case + opinion)."""

    def __init__(self) -> None:
        self._vec: Any = None
        self._clf: Any = None
        self._constant: float | None = None

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` (or :meth:`from_dict`) has run."""
        return self._constant is not None or self._clf is not None

    def __deepcopy__(self, memo: dict[int, Any]) -> ReliabilityModel:
        return self

    def fit(self, texts: Sequence[str], agrees: Sequence[bool]) -> ReliabilityModel:
        """Fit on texts and whether each debater's position matched the gold label."""
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        if not texts:
            raise ConfigError("debate-feedback: the assistant needs training debates; pass a non-empty trainset")
        y = np.asarray([int(bool(a)) for a in agrees])
        if len(set(y.tolist())) < 2:
            # Every debater right (or every one wrong): the only honest score is that rate.
            self._constant, self._vec, self._clf = float(y.mean()), None, None
            return self
        self._vec = TfidfVectorizer(sublinear_tf=True)
        self._clf = LogisticRegression(max_iter=1000).fit(self._vec.fit_transform(list(texts)), y)
        self._constant = None
        return self

    def score(self, texts: Sequence[str]) -> list[float]:
        """Reliability in [0, 1] for each text."""
        if self._constant is not None:
            return [self._constant] * len(texts)
        if self._clf is None:
            raise ConfigError("debate-feedback: the assistant is not trained; call program.prepare(trainset) first")
        return [float(p) for p in self._clf.predict_proba(self._vec.transform(list(texts)))[:, 1]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: vocabulary, idf, coefficients and intercept as lists."""
        if self._constant is not None:
            return {"kind": "constant", "value": self._constant}
        if self._clf is None:
            return {"kind": "unfitted"}
        vocab = sorted(self._vec.vocabulary_, key=self._vec.vocabulary_.get)
        return {
            "kind": "tfidf-logreg",
            "vocabulary": vocab,
            "idf": self._vec.idf_.tolist(),
            "coef": self._clf.coef_.tolist(),
            "intercept": self._clf.intercept_.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReliabilityModel:
        """Inverse of :meth:`to_dict`."""
        import numpy as np
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression

        model = cls()
        kind = data.get("kind")
        if kind == "constant":
            model._constant = float(data["value"])
        elif kind == "tfidf-logreg":
            model._vec = TfidfVectorizer(sublinear_tf=True, vocabulary=list(data["vocabulary"]))
            model._vec.idf_ = np.asarray(data["idf"], dtype=float)
            clf = LogisticRegression()
            clf.coef_ = np.asarray(data["coef"], dtype=float)
            clf.intercept_ = np.asarray(data["intercept"], dtype=float)
            clf.classes_ = np.asarray([0, 1])
            model._clf = clf
        elif kind != "unfitted":
            raise ConfigError(f"unknown reliability model kind {kind!r} in the saved program; re-run prepare()")
        return model
