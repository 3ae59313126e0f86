"""The records :mod:`courtroom.api` returns that are its own: :class:`Verdict` (one per case of :func:`predict`).

Every result is a typed record, each field documented, all exported from :mod:`courtroom`:
:class:`Verdict` here, and beside the code that makes them
:class:`~courtroom.runner.runs.RunOutcome`, :class:`~courtroom.runner.repeats.RepeatOutcome`,
:class:`~courtroom.comparison.table.Comparison`, :class:`~courtroom.optimize.compile.CompileResult`,
:class:`~courtroom.optimize.study.StudyOutcome`, :class:`~courtroom.cost.estimate.Estimate` and
:class:`~courtroom.eval.harness.ExampleResult`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["Verdict"]


@dataclass(frozen=True)
class Verdict:
    """One case's verdict from :func:`courtroom.predict`: its label, or why it failed, and the transcript."""

    id: str
    """The case's ``id`` as given (a dict's ``"id"``), else its position in ``cases``, from 1."""
    label: str | None
    """The verdict: one of the program's labels; None when the case failed."""
    error: str | None = None
    """Why the case failed (``Type: message``); None when it has a label."""
    transcript: list[dict[str, Any]] = field(default_factory=list)
    """Each turn in order: ``role``, ``round``, ``text`` (and for a judge its ``decision``)."""

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready fields (one line of ``courtroom predict --input``'s output)."""
        return asdict(self)
