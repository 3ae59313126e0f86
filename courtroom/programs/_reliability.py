"""The Debate-Feedback assistant: how likely a debater's stated stance is right *for this case*.

The paper's Table 1 trains it on (case + debater's statement) -> "Ground_truth XOR Debater's
position", 1 when the stance is wrong. The target here is its complement, whether the stated stance
equals the gold label, so that a high score means reliable, as §3's "if the reliability exceeds a
threshold" reads it. The paper does not name the assistant's learner. A single linear model over
those words cannot tell "this case AND this stance": the case's words add the same amount to every
debater of a case, so its scores rank debaters by their wording, not by whether their stance fits
the case (measured: chance). This model conditions on the stance with interaction features: a
TF-IDF vector x of the text (words and word pairs) is fed as
``[x, x * [stance == s1], ..., x * [stance == sK]]`` to one scikit-learn ``LogisticRegression``. The
shared block learns what reads reliable whatever the stance; each stance's block learns which facts
of a case make that stance right. A stance never seen in training is scored by the shared block
alone.

Why this learner: scikit-learn is already a dependency, the fit takes milliseconds, it is
deterministic, needs no network or weights, and saves as plain JSON (vocabulary, idf, stances,
coefficients), never as a pickle. ``C = 10``: on generated cases decided by one fact, C = 1 left the
scores of a 20-case training set bunched near the base rate (held-out accuracy 0.72 against 0.88).

:func:`train_assistant` holds out a fifth of the training cases, reports the model's quality on them
(:data:`QUALITY_KEYS`), then refits on every case.
"""

from __future__ import annotations

import contextvars
import random
from collections.abc import Mapping, Sequence
from typing import Any

from courtroom.errors import ConfigError

C = 10.0
NGRAMS = (1, 2)
HELD_OUT = 0.2
QUALITY_KEYS = ("held_out_accuracy", "held_out_auc", "held_out_separation", "held_out_comments", "base_rate")

counting_calls: contextvars.ContextVar[bool] = contextvars.ContextVar("courtroom_counting_calls", default=False)
"""Set by the dry run while it counts a program's calls: :func:`train_assistant` fits nothing then.

The assistant's scores weigh the verdict; they never decide how many calls a debate makes (the dry
run counts an adaptive design with its stopping off), so the count needs the training debates'
calls, not the fit.
"""


def reliability_text(case: str, statement: str) -> str:
    """The learner's input: the case background followed by the debater's statement (Table 1)."""
    return f"{case}\n{statement}"


def _vectorizer(vocabulary: Sequence[str] | None = None) -> Any:
    from sklearn.feature_extraction.text import TfidfVectorizer

    return TfidfVectorizer(sublinear_tf=True, ngram_range=NGRAMS, vocabulary=list(vocabulary) if vocabulary else None)


class ReliabilityModel:
    """P(the stated stance is right | case + statement, stance)."""

    def __init__(self) -> None:
        self._vec: Any = None
        self._clf: Any = None
        self._constant: float | None = None
        self.stances: list[str] = []
        self.quality: dict[str, float] = {}
        """Held-out quality from :func:`train_assistant` (empty when not measured)."""

    @property
    def fitted(self) -> bool:
        """Whether :meth:`fit` (or :meth:`from_dict`) has run."""
        return self._constant is not None or self._clf is not None

    def __deepcopy__(self, memo: dict[int, Any]) -> ReliabilityModel:
        return self

    def _features(self, texts: Sequence[str], stances: Sequence[str]) -> Any:
        import scipy.sparse as sp

        x = self._vec.transform(list(texts))
        blocks = [x]
        for s in self.stances:
            blocks.append(sp.diags([1.0 if t == s else 0.0 for t in stances]) @ x)
        return sp.hstack(blocks).tocsr()

    def fit(self, texts: Sequence[str], stances: Sequence[str], agrees: Sequence[bool]) -> ReliabilityModel:
        """Fit on statements, the stance each states, and whether that stance matched the gold label."""
        from sklearn.linear_model import LogisticRegression

        if not texts:
            raise ConfigError("debate-feedback: the assistant needs training debates; pass a non-empty trainset")
        import numpy as np  # imported where used: most runs never train an assistant

        y = np.asarray([int(bool(a)) for a in agrees])
        if len(set(y.tolist())) < 2:
            # Every stance right (or every one wrong): the only honest score is that rate.
            self._constant, self._vec, self._clf = float(y.mean()), None, None
            return self
        self._vec = _vectorizer().fit(list(texts))
        self.stances = sorted(set(stances))
        self._clf = LogisticRegression(C=C, max_iter=2000).fit(self._features(texts, stances), y)
        self._constant = None
        return self

    def score(self, texts: Sequence[str], stances: Sequence[str]) -> list[float]:
        """Reliability in [0, 1] of each statement with the stance it states."""
        if self._constant is not None:
            return [self._constant] * len(texts)
        if self._clf is None:
            raise ConfigError("debate-feedback: the assistant is not trained; call program.prepare(trainset) first")
        return [float(p) for p in self._clf.predict_proba(self._features(texts, stances))[:, 1]]

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: vocabulary, idf, stances, coefficients and intercept as lists, and the quality."""
        quality = {"quality": dict(self.quality)} if self.quality else {}
        if self._constant is not None:
            return {"kind": "constant", "value": self._constant} | quality
        if self._clf is None:
            return {"kind": "unfitted"}
        vocab = sorted(self._vec.vocabulary_, key=self._vec.vocabulary_.get)
        return {
            "kind": "tfidf-logreg",
            "vocabulary": vocab,
            "idf": self._vec.idf_.tolist(),
            "stances": list(self.stances),
            "coef": self._clf.coef_.tolist(),
            "intercept": self._clf.intercept_.tolist(),
        } | quality

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ReliabilityModel:
        """Inverse of :meth:`to_dict`. A file saved before stances were kept loads as the shared block alone."""
        from sklearn.linear_model import LogisticRegression

        model = cls()
        model.quality = {str(k): float(v) for k, v in (data.get("quality") or {}).items()}
        kind = data.get("kind")
        if kind == "constant":
            model._constant = float(data["value"])
        elif kind == "tfidf-logreg":
            model._vec = _vectorizer(list(data["vocabulary"]))
            import numpy as np  # imported where used: most runs never train an assistant

            model._vec.idf_ = np.asarray(data["idf"], dtype=float)
            model.stances = [str(s) for s in data.get("stances") or []]
            clf = LogisticRegression()
            clf.coef_ = np.asarray(data["coef"], dtype=float)
            clf.intercept_ = np.asarray(data["intercept"], dtype=float)
            clf.classes_ = np.asarray([0, 1])
            model._clf = clf
        elif kind != "unfitted":
            raise ConfigError(f"unknown reliability model kind {kind!r} in the saved program; re-run prepare()")
        return model


def separation(scores: Sequence[float], agrees: Sequence[bool], groups: Sequence[Any]) -> float | None:
    """Within each group (a case's round), how often a right stance scores above a wrong one.

    Over every (right, wrong) pair of statements in the same group; a tie counts half. None when no
    group holds both a right and a wrong stance. 0.5 is chance: a model blind to the case-by-stance
    interaction scores there.
    """
    by_group: dict[Any, list[tuple[float, bool]]] = {}
    for s, a, g in zip(scores, agrees, groups, strict=True):
        by_group.setdefault(g, []).append((s, bool(a)))
    wins = pairs = 0.0
    for members in by_group.values():
        for right in (s for s, a in members if a):
            for wrong in (s for s, a in members if not a):
                pairs += 1
                wins += 1.0 if right > wrong else 0.5 if right == wrong else 0.0
    return wins / pairs if pairs else None


def train_assistant(
    texts: Sequence[str],
    stances: Sequence[str],
    agrees: Sequence[bool],
    cases: Sequence[int],
    rounds: Sequence[int],
    *,
    seed: int = 0,
) -> ReliabilityModel:
    """Measure the assistant on held-out cases, then fit it on every training debate.

    A fifth of the training cases (at least one, when there are 5 or more) is held out, whole: a
    case's statements are all in or all out. ``quality``: accuracy at 0.5, ROC AUC, right-vs-wrong
    :func:`separation` within a case's round, the held-out statements counted, and the share of
    right stances in training (``base_rate``).
    """
    if counting_calls.get():
        model = ReliabilityModel()
        model._constant = 0.5
        return model
    from sklearn.metrics import roc_auc_score

    agrees = [bool(a) for a in agrees]
    import numpy as np  # imported where used: most runs never train an assistant

    quality: dict[str, float] = {"base_rate": float(np.mean(agrees))} if agrees else {}
    unique = sorted(set(cases))
    if len(unique) >= 5:
        held = set(random.Random(seed).sample(unique, max(1, round(HELD_OUT * len(unique)))))
        fit_idx = [i for i, c in enumerate(cases) if c not in held]
        test_idx = [i for i, c in enumerate(cases) if c in held]
        probe = ReliabilityModel().fit(
            [texts[i] for i in fit_idx], [stances[i] for i in fit_idx], [agrees[i] for i in fit_idx]
        )
        scores = probe.score([texts[i] for i in test_idx], [stances[i] for i in test_idx])
        truth = [agrees[i] for i in test_idx]
        quality["held_out_comments"] = float(len(test_idx))
        quality["held_out_accuracy"] = float(np.mean([(s >= 0.5) == t for s, t in zip(scores, truth, strict=True)]))
        if len(set(truth)) == 2:
            quality["held_out_auc"] = float(roc_auc_score(truth, scores))
        sep = separation(scores, truth, [(cases[i], rounds[i]) for i in test_idx])
        if sep is not None:
            quality["held_out_separation"] = sep
    model = ReliabilityModel().fit(texts, stances, agrees)
    model.quality = quality
    return model


def quality_lines(quality: Mapping[str, float]) -> dict[str, float]:
    """The quality as the run summary prints it: metric name -> value."""
    names = {
        "held_out_accuracy": "assistant held-out accuracy",
        "held_out_auc": "assistant held-out AUC",
        "held_out_separation": "assistant right-vs-wrong separation (held out)",
        "held_out_comments": "assistant held-out statements",
        "base_rate": "assistant training: share of right stances",
    }
    counts = {"held_out_comments"}
    return {names[k]: int(quality[k]) if k in counts else quality[k] for k in QUALITY_KEYS if k in quality}
