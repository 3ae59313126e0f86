"""The parts of the ``compare`` command in :mod:`courtroom.api`.

:func:`compared` is what a comparison covers, per task (a suite's rows, or the spec's frameworks), as
:func:`courtroom.api.estimate` prices it; :func:`row_hooks` draws the progress of
:func:`courtroom.api.compare` and :func:`courtroom.api.compare_suite`, one bar per row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from courtroom.spec import Experiment

__all__ = ["compared", "row_hooks"]


def compared(spec: Experiment) -> dict[str, Any]:
    """Task -> the suite's rows on it (None without a suite: the spec's frameworks on its task)."""
    if not spec.design.suite:
        return {"": None}
    from courtroom.comparison.suites import get_suite

    about = get_suite(spec.design.suite)
    rows = {r.name: (r.framework, dict(r.knobs), r.preset) for r in about.rows}
    return {t: rows for t in (spec.design.suite_tasks or list(about.tasks))}


def row_hooks(display: Any) -> dict[str, Any]:
    """A comparison's progress: one bar per row, made when the row starts."""
    bars: dict[str, Any] = {}

    def bar(row: str) -> Any:
        if row not in bars:
            bars[row] = display.track(row)
        return bars[row]

    return {"progress": lambda f, res: bar(f).result(res), "on_start": lambda f, n: bar(f).start(n)}
