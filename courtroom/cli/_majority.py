"""Is a score above always giving the most frequent answer? The line compile and score print.

On CaseLaw 63.7% of cases are "Plaintiff wins": a program at 0.533 is worse than that constant
answer, which no interval or paired test against the starting program says. The line names the
majority class, where it was counted, the accuracy of always answering it on the scored cases, and
whether the program is below it (its label accuracy: under ``--metric`` its mean is another scale).
"""

from __future__ import annotations

from collections.abc import Mapping


def majority_line(label: str, rate: float, counted: str, scored: str, accuracy: float | None, who: str) -> str:
    """``majority class (training split): 'Plaintiff wins', 0.637 of the held-out cases; ... below it``."""
    line = f"majority class ({counted}): {label!r}, {rate:.3f} of the {scored}"
    if accuracy is None:
        return line
    if accuracy < rate:
        return f"{line}; {who} ({accuracy:.3f}) is below always answering {label!r}"
    return f"{line}; {who} ({accuracy:.3f}) is not below it"


def per_class_majority(per_class: Mapping[str, Mapping[str, float]]) -> tuple[str, float] | None:
    """The majority class of scored cases and its share, from a summary's ``per_class`` supports."""
    support = {label: float(row.get("support") or 0) for label, row in per_class.items()}
    total = sum(support.values())
    if not total:
        return None
    label = max(support, key=lambda k: (support[k], k))
    return label, support[label] / total
