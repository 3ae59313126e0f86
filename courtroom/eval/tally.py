"""What does a run's summary need from each result, once it is in the run folder?

A :class:`Tally` folds each :class:`~courtroom.eval.harness.ExampleResult` into running counts as
it arrives, so a run keeps no result in memory (``results.jsonl`` holds them): memory stays
bounded however many cases a run has (issue 44: holding them grew a run ~6 KB a call). Its
summary is :func:`~courtroom.eval.harness.summarize`'s, which is a tally fed in order:

- scores from the (gold, prediction) pairs counted (:func:`~courtroom.eval.metrics.score_counts`);
- usage summed, each model listed in the order its first example comes in the input;
- the failed ids in input order (only failures are kept);
- Brier and ECE (:mod:`courtroom.analysis.calibration`) from exact sums (Shewchuk's partials,
  as ``math.fsum``), so no figure depends on which case finished first;
- the bias figures (:func:`~courtroom.analysis.bias.position_consistency`,
  :func:`~courtroom.analysis.bias.length_bias`) from their counts.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from courtroom.analysis.bias import length_counts, length_rate
from courtroom.analysis.calibration import BINS
from courtroom.eval.metrics import active, score_counts, user_prices
from courtroom.models.usage import Usage

__all__ = ["Tally", "add_usage"]

_COUNTS = (
    "calls",
    "sent",
    "failed",
    "cached",
    "shared",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def add_usage(total: Usage, u: Mapping[str, Any]) -> None:
    """Add one result's usage (``ExampleResult.usage``) to ``total``."""
    for key in _COUNTS:
        setattr(total, key, getattr(total, key) + u.get(key, 0))
    for model, counts in (u.get("by_model") or {}).items():
        agg = total.by_model.setdefault(model, {"sent": 0, "prompt_tokens": 0, "completion_tokens": 0})
        for key, value in counts.items():  # the provider's cache counts too, where it served any
            if isinstance(value, int):
                agg[key] = agg.get(key, 0) + value
    for model, counts in (u.get("cached_by_model") or {}).items():
        agg = total.cached_by_model.setdefault(model, {})
        for key, value in counts.items():
            if isinstance(value, int):
                agg[key] = agg.get(key, 0) + value


class _Sum:
    """A float sum with no rounding error until it is read (the partials of ``math.fsum``)."""

    __slots__ = ("partials",)

    def __init__(self) -> None:
        self.partials: list[float] = []

    def add(self, x: float) -> None:
        kept = []
        for y in self.partials:
            if abs(x) < abs(y):
                x, y = y, x
            high = x + y
            low = y - (high - x)
            if low:
                kept.append(low)
            x = high
        kept.append(x)
        self.partials = kept

    def value(self) -> float:
        return math.fsum(self.partials)


class Tally:
    """Running counts of a run's results (:meth:`add` each, in any order), and the summary they give."""

    def __init__(self, labels: Any, bins: int = BINS) -> None:  # noqa: D107
        self.labels = list(labels)
        self.pairs: Counter[tuple[str, str | None]] = Counter()
        self.usage = Usage()
        self._first: dict[str, tuple[int, int]] = {}
        """Model -> (input position, place in that example's usage) of the first example that used it."""
        self.failed: dict[int, tuple[str, str | None]] = {}
        """Input position -> id and error of each failed example (only failures are kept)."""
        self.bins = bins
        self._conf = [(_Sum(), 0, 0) for _ in range(bins)]  # per bin: sum of confidences, right, n
        self._brier = _Sum()
        self.calibrated = 0
        self.swapped = 0
        self.consistent: list[int] = [0, 0]  # position_consistent True, and not None
        self._debias: tuple[int, Any] | None = None
        self.lengths = [0, 0, 0, 0]  # argued, n, ties, longer (analysis.bias.length_counts)
        self.count = 0
        self._scores = _Sum()
        self.scored = 0
        """Results that carry a ``--metric`` value (``score``)."""
        chosen = active()
        self.metric = chosen.name if chosen is not None else None

    def add(self, res: Any, position: int) -> None:
        """Fold in one result (an :class:`~courtroom.eval.harness.ExampleResult`) at ``position`` in the input."""
        self.count += 1
        self.pairs[(res.gold, res.prediction)] += 1
        if getattr(res, "score", None) is not None:
            self._scores.add(float(res.score))
            self.scored += 1
        self._add_usage(res.usage or {}, position)
        if res.prediction is None:
            self.failed[position] = (res.id, res.error)
        elif res.confidence is not None:
            conf, right = float(res.confidence), res.prediction == res.gold
            self.calibrated += 1
            self._brier.add((conf - right) ** 2)
            i = min(int(conf * self.bins), self.bins - 1)
            total, hits, n = self._conf[i]
            total.add(conf)
            self._conf[i] = (total, hits + right, n + 1)
        fields = res.fields or {}
        if "position_consistent" in fields:
            self.swapped += 1
            if fields["position_consistent"] is not None:
                self.consistent[0] += bool(fields["position_consistent"])
                self.consistent[1] += 1
            if self._debias is None or position < self._debias[0]:
                self._debias = (position, fields.get("debias"))
        for k, v in enumerate(length_counts(res)):
            self.lengths[k] += v

    def _add_usage(self, u: Mapping[str, Any], position: int) -> None:
        add_usage(self.usage, u)
        for place, model in enumerate(u.get("by_model") or {}):
            if model not in self._first or (position, place) < self._first[model]:
                self._first[model] = (position, place)

    def total_usage(self) -> Usage:
        """The usage summed, each model in the order its first example comes in the input."""
        order = sorted(self.usage.by_model, key=lambda m: self._first[m])
        by_model = {m: self.usage.by_model[m] for m in order}
        return Usage(
            **{k: getattr(self.usage, k) for k in _COUNTS},
            by_model=by_model,
            cached_by_model=self.usage.cached_by_model,
        )

    def failed_ids(self) -> list[str]:
        """The failed examples' ids, in input order."""
        return [self.failed[p][0] for p in sorted(self.failed)]

    def errors(self) -> list[str | None]:
        """The failed examples' errors, in input order."""
        return [self.failed[p][1] for p in sorted(self.failed)]

    def summary(self, wall: float, prices: Any = None) -> dict[str, Any]:
        """:func:`~courtroom.eval.harness.summarize`'s figures of the results added."""
        usage = self.total_usage()
        summary = score_counts(self.pairs, self.labels)
        if self.scored:  # under --metric: accuracy is the metric's mean (a failure scores 0)
            summary["label_accuracy"] = summary["accuracy"]
            summary["accuracy"] = self._scores.value() / self.count
            summary["metric"] = self.metric or "a metric"  # a resume that did not name it
        summary.update(
            calls=usage.calls,
            sent=usage.sent,
            cached=usage.cached,
            shared=usage.shared,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            tokens=usage.prompt_tokens + usage.completion_tokens,
            tokens_counted="sent",
            cached_tokens=usage.cached_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_write_tokens=usage.cache_write_tokens,
            cost=usage.cost(user_prices(usage.by_model, prices)),
            cached_cost=usage.cached_cost(user_prices(usage.cached_by_model, prices)),
            wall_seconds=round(wall, 3),
            failed_ids=self.failed_ids(),
        )
        summary.update(self._calibration())
        summary.update(self._bias())
        return summary

    def _calibration(self) -> dict[str, Any]:
        n = self.calibrated
        if not n:
            return {"brier": None, "ece": None}
        ece = sum(k / n * abs(hits / k - total.value() / k) for total, hits, k in self._conf if k)
        return {"brier": round(self._brier.value() / n, 6), "ece": round(ece, 6)}

    def _bias(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.swapped:
            right, both = self.consistent
            out.update(
                debias=self._debias[1] if self._debias else None,
                position_consistency=right / both if both else None,
                position_consistency_n=both,
            )
        lengths = length_rate(*self.lengths)
        if lengths is not None:
            out.update(longer_argument_rate=lengths["rate"], longer_argument_n=lengths["n"])
        return out
