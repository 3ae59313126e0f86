"""Metrics for the optimizers: exact-label accuracy, and GEPA's per-role feedback text.

GEPA calls ``metric(gold, pred, trace, pred_name, pred_trace)`` and, when it is tuning one
predictor (``pred_name``, which is a role here), reflects on the ``feedback`` text. The text
tells that role what it did in this case and how the verdict turned out: an advocate learns
whether the side it argued was the right one and how the judge ruled; a deciding role (judge,
clerk, classifier) learns which of its decisions matched the gold label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import dspy

SIDE_FIELDS = ("position", "label", "perspective")
"""Input fields that name the side an advocate argues."""


def label_metric(example: Any, pred: Any, trace: Any = None) -> bool:
    """DSPy metric: the verdict equals the gold label."""
    return getattr(pred, "label", None) == example.label


def _decisions(outputs: Any, choices: Sequence[str]) -> list[str]:
    return [
        str(v)
        for k, v in dict(outputs.items()).items()
        if isinstance(v, str) and v in choices and k not in ("analysis", "reason", "summary", "argument", "opinion")
    ]


def role_feedback(
    gold: dspy.Example,
    pred: Any,
    role: str,
    calls: Sequence[tuple[Any, dict[str, Any], Any]],
    labels: Sequence[str],
    positions: Sequence[str],
) -> str:
    """Feedback for ``role`` from its calls in this case."""
    gold_label = gold.label
    gold_position = positions[list(labels).index(gold_label)] if gold_label in labels else gold_label
    verdict = getattr(pred, "label", None)
    outcome = (
        f"The final verdict was {verdict!r}, {'correct' if verdict == gold_label else 'wrong'}; "
        f"the correct answer is {gold_label!r}."
    )
    if not calls:
        return f"{outcome} The {role} was not called in this case."
    choices = list(labels) + list(positions)
    notes: list[str] = []
    for i, (_, inputs, outputs) in enumerate(calls, 1):
        side = next((inputs[f] for f in SIDE_FIELDS if isinstance(inputs.get(f), str) and inputs[f] in choices), None)
        decided = _decisions(outputs, choices)
        if side is not None:
            right = side in (gold_label, gold_position)
            notes.append(
                f"call {i}: you argued for {side!r}, which is the {'correct' if right else 'wrong'} answer"
                + (
                    "; keep it sharp and decisive."
                    if right
                    else "; argue honestly within your role and do not overstate weak points."
                )
            )
        elif decided:
            wrong = [d for d in decided if d not in (gold_label, gold_position)]
            notes.append(
                f"call {i}: you decided {', '.join(map(repr, decided))}, "
                + ("correct." if not wrong else "wrong: re-check the case itself before weighing the arguments.")
            )
    if not notes:
        notes.append(f"{len(calls)} call(s); none chose a label.")
    return f"{outcome} As the {role}: " + " ".join(notes)


def feedback_metric(labels: Sequence[str], positions: Sequence[str], base: Callable[..., Any] = label_metric) -> Any:
    """A GEPA metric over ``labels``: ``base``'s score (1/0 on the verdict by default), with role-level feedback."""

    def metric(
        gold: dspy.Example, pred: Any, trace: Any = None, pred_name: str | None = None, pred_trace: Any = None
    ) -> dspy.Prediction:
        score = float(base(gold, pred))
        if pred_name is None:
            verdict = getattr(pred, "label", None)
            return dspy.Prediction(score=score, feedback=f"Verdict {verdict!r}; correct answer {gold.label!r}.")
        text = role_feedback(gold, pred, pred_name, list(pred_trace or []), labels, positions)
        return dspy.Prediction(score=score, feedback=text)

    return metric
