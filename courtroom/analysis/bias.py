"""Position and length bias (SPEC §10): the position-swap run and the bias figures of run results.

**Position swap** (``--debias swap``, ``debias="swap"``): every case is tried a second time by the
program's :meth:`~courtroom.programs.CourtroomProgram.swapped` copy, where each side sits in the
other's seat (JoT: the lawyer argues positions[1]; Courtroom-LLM: the advocates' labels are
exchanged and the labels listed in reverse order; Khan debate: debater 1 defends the other answer).
On a multi-class task the same holds for Courtroom-LLM's A1/A2 and Khan's top two (JoT is binary).
Frameworks without seated sides (zero-shot, self-consistency, Debate-Feedback, ...) are refused.
Both runs are one example: their calls, tokens and cost add up, and their prompts differ, so the
cache keeps them apart. The example's ``fields`` record ``original_label``, ``swapped_label``,
``position_consistent``, ``swapped_transcript`` and ``swapped_fields`` (``swapped_error`` when
the swapped run failed).

* ``swap``: the verdict is the original order's.
* ``swap-vote``: the verdict is the two runs' agreement. When they disagree, the run whose own
  confidence (its judges' vote share, see :func:`courtroom.analysis.calibration.confidence`) is
  strictly higher wins; otherwise (equal, or no confidence: JoT, Khan) the original order's
  verdict stands. ``verdict_from`` says which (``both``, ``original``, ``swapped``).

An example fails when its original order fails; a swapped run that fails leaves the original's
verdict and is left out of the consistency rate.

**Length bias** (always, for frameworks with arguments): how often the verdict went to the side
whose arguments were longer in words (the text the judges read), over every trial with two argued
sides of unequal length; a debiased run's swapped trials count too.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import dspy

from courtroom.errors import ConfigError
from courtroom.models._concurrency import run_parallel

DEBIAS = ("swap", "swap-vote")

ARGUMENT_SIDE = {"lawyer": "label", "prosecutor": "label", "attorney": "label", "debater": "answer"}
"""Arguing role (before any ``-N``) -> the ``extra`` key of its turns that names the label it argues.

JoT's lawyer and prosecutor, Courtroom-LLM's prosecutor and attorney, Khan's debaters. Turns without
that key (Debate-Feedback's debaters, which may change stance) are not arguments for a side here.
"""


def swappable_frameworks() -> list[str]:
    """The registered frameworks whose sides a position swap can exchange."""
    from courtroom.programs import FRAMEWORKS

    return sorted(name for name, cls in FRAMEWORKS.items() if cls.swappable)


def check_debias(debias: str | None, framework: str | None = None) -> None:
    """Refuse, in one line, an unknown mode or a ``framework`` with no sides to swap."""
    if debias is None:
        return
    if debias not in DEBIAS:
        raise ConfigError(f"--debias {debias!r}: use one of {', '.join(DEBIAS)}")
    from courtroom.programs import get_framework

    if framework is not None and not get_framework(framework).swappable:
        raise ConfigError(
            f"--debias {debias}: {framework} has no sides to swap; "
            f"position swap works with {', '.join(swappable_frameworks())}"
        )


def swap_vote(
    original: str, swapped: str | None, original_confidence: float | None, swapped_confidence: float | None
) -> tuple[str, str]:
    """The ``swap-vote`` verdict and where it came from (``both``, ``original`` or ``swapped``)."""
    if swapped == original:
        return original, "both"
    if (
        swapped is not None
        and original_confidence is not None
        and swapped_confidence is not None
        and swapped_confidence > original_confidence
    ):
        return swapped, "swapped"
    return original, "original"


class PositionSwap(dspy.Module):
    """A program run in both orders per case (see the module docstring); ``mode`` is ``swap`` or ``swap-vote``.

    Build it after ``program.prepare``: the swapped copy keeps what was fitted.
    """

    def __init__(self, program: Any, mode: str) -> None:
        super().__init__()
        if mode not in DEBIAS:
            raise ConfigError(f"--debias {mode!r}: use one of {', '.join(DEBIAS)}")
        self.program, self.twin, self.mode = program, program.swapped(), mode

    def forward(self, case: str) -> dspy.Prediction:
        """Both orders, concurrently; the original order's failure is the example's."""
        from courtroom.analysis.calibration import confidence

        (first, failure), (second, error) = run_parallel(
            [lambda: _attempt(self.program, case), lambda: _attempt(self.twin, case)]
        )
        if first is None:
            assert failure is not None  # _attempt returns an answer or its exception
            raise failure
        own = _own_fields(first)
        fields: dict[str, Any] = {
            "debias": self.mode,
            "original_label": first.label,
            "swapped_label": None if second is None else second.label,
            "position_consistent": None if second is None else second.label == first.label,
        }
        if second is None:
            fields["swapped_error"] = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:300]}"
        else:
            fields |= {"swapped_transcript": list(second.transcript), "swapped_fields": _own_fields(second)}
        label = first.label
        if self.mode == "swap-vote":
            theirs = None if second is None else confidence(second.label, fields["swapped_fields"])
            label, source = swap_vote(first.label, fields["swapped_label"], confidence(first.label, own), theirs)
            fields["verdict_from"] = source
            if source == "swapped":
                fields["confidence"] = theirs  # the verdict's own run's confidence, for calibration
        return dspy.Prediction(label=label, transcript=first.transcript, **own, **fields)


def _attempt(program: Any, case: str) -> tuple[Any, Exception | None]:
    try:
        return program(case=case), None
    except Exception as exc:  # noqa: BLE001 - the caller decides what a failure means
        return None, exc


def _own_fields(pred: Any) -> dict[str, Any]:
    return {k: v for k, v in pred.items() if k not in ("label", "transcript")}


def debiased(program: Any, debias: str | None) -> Any:
    """``program`` itself, or its :class:`PositionSwap` when ``debias`` is set."""
    return program if debias is None else PositionSwap(program, debias)


# -- figures of run results -----------------------------------------------------------------------------


def _row(r: Any) -> Mapping[str, Any]:
    return r.to_dict() if hasattr(r, "to_dict") else r


def position_consistency(results: Iterable[Any]) -> dict[str, Any] | None:
    """Share of examples whose verdict is the same in both orders; None when the run was not swapped.

    ``n`` counts the examples with both verdicts; ``missing`` those where one order failed.
    """
    rows = [(_row(r).get("fields") or {}) for r in results]
    swapped = [f for f in rows if "position_consistent" in f]
    if not swapped:
        return None
    both = [f["position_consistent"] for f in swapped if f["position_consistent"] is not None]
    return {
        "rate": sum(both) / len(both) if both else None,
        "n": len(both),
        "missing": len(swapped) - len(both),
        "debias": swapped[0].get("debias"),
    }


def argument_words(transcript: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """Label -> words argued for it, over the arguing turns (:data:`ARGUMENT_SIDE`)."""
    out: dict[str, int] = {}
    for turn in transcript:
        t = turn.to_dict() if hasattr(turn, "to_dict") else turn
        key = ARGUMENT_SIDE.get(str(t.get("role", "")).split("-")[0])
        side = (t.get("extra") or {}).get(key) if key else None
        if side is not None:
            out[str(side)] = out.get(str(side), 0) + len(str(t.get("text") or "").split())
    return out


def length_bias(results: Iterable[Any]) -> dict[str, Any] | None:
    """How often the verdict went to the longer argument; None when no trial had two argued sides.

    A trial is one order of one example (a swapped run adds its swapped order). ``n`` counts the
    trials with a verdict and two sides of unequal length; ``ties`` those of equal length.
    """
    argued, n, ties, longer = 0, 0, 0, 0
    for r in results:
        a, b, c, d = length_counts(r)
        argued, n, ties, longer = argued + a, n + b, ties + c, longer + d
    return length_rate(argued, n, ties, longer)


def length_rate(argued: int, n: int, ties: int, longer: int) -> dict[str, Any] | None:
    """:func:`length_bias`'s figures from its counts (:func:`length_counts` summed)."""
    if not argued:
        return None
    return {"rate": longer / n if n else None, "n": n, "ties": ties, "unit": "words"}


def length_counts(result: Any) -> tuple[int, int, int, int]:
    """One result's trials (argued, with a verdict and unequal sides, tied, verdict to the longer)."""
    r = _row(result)
    fields = r.get("fields") or {}
    trials = [(r.get("transcript") or [], fields.get("original_label", r.get("prediction")))]
    if fields.get("swapped_transcript"):
        trials.append((fields["swapped_transcript"], fields.get("swapped_label")))
    argued, n, ties, longer = 0, 0, 0, 0
    for transcript, verdict in trials:
        words = argument_words(transcript)
        if len(words) != 2:
            continue
        argued += 1
        if verdict is None:
            continue
        (a, wa), (b, wb) = words.items()
        if wa == wb:
            ties += 1
            continue
        n += 1
        longer += verdict == (a if wa > wb else b)
    return argued, n, ties, longer


def bias_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(metric, value) rows of a summary's bias figures, for its tables."""

    def rate(value: float | None, n: int) -> str:
        return f"n/a (n={n})" if value is None else f"{value:.3f} (n={n})"

    rows = []
    if "position_consistency" in summary:
        name = f"position consistency ({summary.get('debias')})"
        rows.append((name, rate(summary["position_consistency"], summary["position_consistency_n"])))
    if "longer_argument_rate" in summary:
        rows.append(("verdict to longer argument", rate(summary["longer_argument_rate"], summary["longer_argument_n"])))
    return rows
