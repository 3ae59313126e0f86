"""Is a framework better than the majority vote that spends as much? An exact McNemar test, paired by example.

Each framework and its matched vote row (:mod:`courtroom.comparison.matched`) answered the same
examples, so the comparison is paired: only the examples one got right and the other wrong (the
discordant pairs b and c) carry evidence. Under "no difference" each discordant example is a fair
coin, so the exact two-sided p-value is the binomial test of b successes in b + c trials at 1/2
(``scipy.stats.binomtest``; scipy comes with scikit-learn). A failed example counts as wrong. With
repeats, the first repeat's answers are paired.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

COLUMNS = ("matched_vote", "discordant", "mcnemar_p")


def mcnemar(first: Mapping[str, bool], second: Mapping[str, bool]) -> tuple[int, int, float]:
    """(b, c, p): examples only ``first`` got right, only ``second`` got right, and the exact two-sided p.

    ``first`` and ``second`` map example id -> correct; only ids in both are paired. With no
    discordant pair the p-value is 1.
    """
    from scipy.stats import binomtest

    paired = set(first) & set(second)
    b = sum(1 for i in paired if first[i] and not second[i])
    c = sum(1 for i in paired if second[i] and not first[i])
    p = float(binomtest(b, b + c, 0.5).pvalue) if b + c else 1.0
    return b, c, p


VOTE_FAILED = "vote failed"
"""``discordant`` of a row whose matched vote failed on every case: no McNemar test is made."""


def correct_by_id(results: Sequence[Any]) -> dict[str, bool]:
    """Example id -> whether the prediction is right (a failure is wrong; under ``--metric``: its value >= 0.5).

    :func:`courtroom.eval.metrics.right` decides.
    """
    from courtroom.eval.metrics import right

    return {str(r.id): right(r) for r in results}


def add_mcnemar(
    table: pd.DataFrame, results: Mapping[str, Sequence[Any]], matches: Mapping[str, Sequence[str]]
) -> pd.DataFrame:
    """Add, on each framework row, its matched vote row, the discordant counts and McNemar's exact p."""
    table = table.copy()
    for column in COLUMNS:
        table[column] = None
    for vote, frameworks in matches.items():
        if vote not in results:
            continue
        votes = correct_by_id(results[vote])
        every_case_failed = bool(results[vote]) and all(r.prediction is None for r in results[vote])
        for f in frameworks:
            if f not in results or f not in table.index:
                continue
            if every_case_failed:  # no answer to pair with: a test against it would only count the failures
                table.at[f, "matched_vote"] = vote
                table.at[f, "discordant"] = VOTE_FAILED
                continue
            b, c, p = mcnemar(correct_by_id(results[f]), votes)
            table.at[f, "matched_vote"] = vote
            table.at[f, "discordant"] = f"{b} / {c}"
            table.at[f, "mcnemar_p"] = p
    return table
