"""Did compiling help? The starting and the optimized program scored on the same cases, with intervals.

A compile scores both programs on the dev split (which selecting optimizers may have used) and on a
held-out test split that neither the optimizer nor any selection saw. For each split:

* each program's accuracy with its 95% Wilson interval over the split's cases (:class:`Score`);
* the paired difference, optimized minus starting, with Newcombe's 95% interval for a difference of
  paired proportions (his method 10, built from the two Wilson intervals and the correlation of
  the paired answers) and the exact McNemar test on the cases only one program got right
  (:func:`courtroom.comparison.significance.mcnemar`) (:class:`Gain`).

A gain (or loss) is called significant when the McNemar p-value is below 0.05 *and* the interval
excludes 0 on the same side; the two agree but for cases at the margin, where the claim is withheld.
Both intervals cover the sampling of cases only (the fakes and a temperature-0 model answer the
same case the same way; a sampled model's own randomness is in the answers, not modelled apart).

:class:`CompileResult` is what :func:`courtroom.compile` returns.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from courtroom.programs import CourtroomProgram

ALPHA = 0.05
"""The level of the paired test (and 1 - the intervals' coverage)."""

DEFAULT_TEST_LIMIT = 50
"""Held-out test cases a compile scores before and after (``--test-limit``; 0: none)."""

SPLIT_WORDS = {"dev": "dev cases", "test": "held-out cases"}


@dataclass(frozen=True)
class Score:
    """One program's accuracy on one split."""

    n: int
    """Cases scored (failures included, as wrong answers)."""
    accuracy: float
    ci_low: float
    """95% Wilson interval of the accuracy over the ``n`` cases (low end)."""
    ci_high: float
    """... (high end)."""
    macro_f1: float
    failures: int
    """Cases with no usable answer (counted wrong)."""
    calls: int
    """LM calls the scoring made (cache hits included)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields."""
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class Gain:
    """The optimized program against the starting one on the same cases of one split."""

    split: str
    """``dev`` or ``test`` (held out)."""
    before: Score
    after: Score
    difference: float
    """Accuracy after minus before (on the paired cases)."""
    ci_low: float
    """Newcombe's 95% interval of the paired difference (low end)."""
    ci_high: float
    """... (high end)."""
    only_before: int
    """Cases only the starting program got right."""
    only_after: int
    """Cases only the optimized program got right."""
    p_value: float
    """Exact two-sided McNemar p-value (1 when the programs never disagree)."""

    @property
    def significant(self) -> bool:
        """The p-value is below 0.05 and the interval excludes 0 on the side of the difference."""
        if self.p_value >= ALPHA or self.difference == 0:
            return False
        return self.ci_low > 0 if self.difference > 0 else self.ci_high < 0

    @property
    def verdict(self) -> str:
        """``gain``, ``loss`` or ``none`` (not significant)."""
        if not self.significant:
            return "none"
        return "gain" if self.difference > 0 else "loss"

    def figures(self) -> str:
        """``+0.12 [+0.03, +0.21]``: the difference and its interval, signed (never ``-0.00``)."""
        return f"{_signed(self.difference)} [{_signed(self.ci_low)}, {_signed(self.ci_high)}]"

    def sentence(self) -> str:
        """``gain on held-out cases: +0.12 [+0.03, +0.21] (p=0.03)``, or ``no significant gain ...``."""
        where = SPLIT_WORDS.get(self.split, f"{self.split} cases")
        figures = self.figures()
        p = f"p={self.p_value:.2g}"
        if self.verdict == "none":
            return f"no significant gain on {where} ({figures}, {p})"
        return f"{self.verdict} on {where}: {figures} ({p})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready fields, with the verdict and the sentence."""
        out: dict[str, Any] = {k: getattr(self, k) for k in self.__dataclass_fields__ if k not in ("before", "after")}
        return out | {
            "before": self.before.to_dict(),
            "after": self.after.to_dict(),
            "verdict": self.verdict,
            "sentence": self.sentence(),
        }


def score(results: Sequence[Any], labels: Sequence[str], calls: int = 0) -> Score:
    """A :class:`Score` of harness results (failures count as wrong)."""
    from courtroom.eval.metrics import score_results, wilson

    s = score_results(results, labels)  # under --metric: accuracy is its mean
    n = len(results)
    low, high = wilson(float(s["accuracy"]), n) if n else (math.nan, math.nan)
    return Score(
        n=n,
        accuracy=float(s["accuracy"]),
        ci_low=round(low, 4),
        ci_high=round(high, 4),
        macro_f1=float(s["macro_f1"]),
        failures=int(s["failures"]),
        calls=int(calls),
    )


def newcombe(a: int, b: int, c: int, d: int) -> tuple[float, float]:
    """95% interval of p_after - p_before for paired answers (Newcombe 1998, method 10).

    ``a``: both right, ``b``: only before right, ``c``: only after right, ``d``: both wrong. The two
    Wilson intervals are combined with the continuity-adjusted phi (:func:`_adjusted_phi`).
    """
    from courtroom.eval.metrics import wilson

    n = a + b + c + d
    if n == 0:
        return math.nan, math.nan
    p_after, p_before = (a + c) / n, (a + b) / n
    l1, u1 = wilson(p_after, n)
    l2, u2 = wilson(p_before, n)
    phi = _adjusted_phi(a, b, c, d)
    diff = p_after - p_before
    delta = math.sqrt(max((p_after - l1) ** 2 - 2 * phi * (p_after - l1) * (u2 - p_before) + (u2 - p_before) ** 2, 0))
    eps = math.sqrt(max((u1 - p_after) ** 2 - 2 * phi * (u1 - p_after) * (p_before - l2) + (p_before - l2) ** 2, 0))
    return max(-1.0, diff - delta), min(1.0, diff + eps)


def _adjusted_phi(a: int, b: int, c: int, d: int) -> float:
    """The correlation of the two programs' correctness, as method 10 uses it (0 when a margin is empty).

    Newcombe corrects a positive ``ad - bc`` for continuity (``max(ad - bc - n/2, 0)``) and keeps a
    negative one as it is; so do the published implementations (R's contingencytables,
    ``Newcombe_square_and_add_CI_paired_2x2``; biostatUZH, ``confIntPairedProportion``). Without the
    correction two identical programs (b = c = 0) get phi = 1 and the zero-width interval [0, 0].
    """
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if not margins:
        return 0.0
    cross = float(a * d - b * c)
    if cross > 0:
        cross = max(cross - (a + b + c + d) / 2, 0.0)
    return cross / math.sqrt(margins)


def gain(
    split: str,
    before: Sequence[Any],
    after: Sequence[Any],
    labels: Sequence[str],
    calls: Mapping[str, int] | None = None,
) -> Gain:
    """The paired comparison of two evaluations of the same cases (harness results, matched by id)."""
    from courtroom.comparison.significance import correct_by_id, mcnemar

    right_before, right_after = correct_by_id(before), correct_by_id(after)
    paired = [i for i in right_before if i in right_after]
    only_after, only_before, p = mcnemar(right_after, right_before)
    both = sum(1 for i in paired if right_before[i] and right_after[i])
    neither = len(paired) - both - only_before - only_after
    low, high = newcombe(both, only_before, only_after, neither)
    n = max(len(paired), 1)
    calls = calls or {}
    return Gain(
        split=split,
        before=score(before, labels, calls.get("before", 0)),
        after=score(after, labels, calls.get("after", 0)),
        difference=round((only_after - only_before) / n, 4),
        ci_low=round(low, 4),
        ci_high=round(high, 4),
        only_before=only_before,
        only_after=only_after,
        p_value=p,
    )


@dataclass(frozen=True)
class CompileResult:
    """What a compile returns (:func:`courtroom.compile`, :func:`~courtroom.optimize.compile.compile_program`)."""

    program: CourtroomProgram
    """The program kept: the optimized one, or the starting one (``kept == "start"``)."""
    before: dict[str, Any]
    """Dev scores of the starting program (``accuracy``, ``macro_f1``, ``failures``, ``n``, ``calls``, ``status``)."""
    after: dict[str, Any]
    """Dev scores of the optimized program (the same keys)."""
    metadata: dict[str, Any]
    """What is saved with the program: task and split ids, optimizer, scores, the proof."""
    dev: Gain
    """Optimized against starting program on the dev split (which a selecting optimizer may have used)."""
    test: Gain | None
    """Optimized against starting program on the held-out test split; None when no test split was scored."""
    worse_on_dev: bool = False
    """The optimized program scored lower on dev than the starting one."""
    kept: str = "optimized"
    """``optimized``, or ``start`` when ``keep_better`` kept the starting program (worse on dev)."""
    path: Path | None = None
    """Where the program was saved (by :func:`courtroom.compile`)."""
    results: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    """Split (``dev``, ``test``) -> ``before`` / ``after`` -> the per-case harness results (errors included)."""
    walls: dict[str, dict[str, float]] = field(default_factory=dict)
    """Split -> ``before`` / ``after`` -> the evaluation's wall seconds."""
    run_dirs: dict[str, Path] = field(default_factory=dict)
    """``dev before``, ``dev after``, ``test before``, ``test after``: run folders (by :func:`courtroom.compile`)."""

    @property
    def gains(self) -> dict[str, Gain]:
        """The scored splits' comparisons, dev first."""
        return {"dev": self.dev} | ({"test": self.test} if self.test is not None else {})


def proof_record(
    dev: Gain, test: Gain | None, *, worse_on_dev: bool, kept: str, test_note: str | None
) -> dict[str, Any]:
    """The ``proof`` section of a compiled program's metadata (and of the compile's run folders)."""
    return {
        "dev": dev.to_dict(),
        "test": None if test is None else test.to_dict(),
        "test_note": test_note,
        "worse_on_dev": worse_on_dev,
        "kept": kept,
        "alpha": ALPHA,
        "intervals": "95%: Wilson per program; Newcombe (paired) for the difference; both over the cases scored",
        "test_statistic": "exact McNemar (two-sided binomial test on the discordant cases)",
    }


__all__ = ["ALPHA", "DEFAULT_TEST_LIMIT", "CompileResult", "Gain", "Score", "gain", "newcombe", "proof_record", "score"]


def _signed(x: float) -> str:
    """``x`` to two decimals with its sign; a value that rounds to zero reads ``+0.00``."""
    return f"{round(x, 2) + 0.0:+.2f}"
