"""How is a run folder read back: its settings, results and summary, without holding what it holds?

:func:`load_run` reads a folder whole (``courtroom show``, ``report``, a resume);
:class:`StoredResults` is a finished run's results as :class:`~courtroom.runner.runs.RunOutcome`
gives them: read from ``results.jsonl`` each time they are asked for, never kept by the run, so a
run's memory does not grow with its cases (issue 44).
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, overload

from courtroom._files import read_json, read_jsonl, skipped_text
from courtroom.errors import ConfigError, DataError
from courtroom.eval.harness import ExampleResult
from courtroom.runner._records import meta_problem, result_problem

logger = logging.getLogger(__name__)

__all__ = ["StoredResults", "load_run", "positions"]


def load_run(run_dir: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]], dict[str, Any] | None]:
    """(meta, results in example order, summary or None) of a run folder.

    A line that is not UTF-8 JSON (cut off by a kill or a full disk, or damaged) or not a result
    (:mod:`courtroom.runner._records`) is skipped and counted in one warning, and a resume runs its
    example again; when an example appears twice (a resumed run that retried it), the
    last line wins. A damaged ``meta.json`` (or one of the wrong shape) or ``summary.json`` raises a
    :class:`DataError` naming it.
    """
    path = Path(run_dir)
    if not (path / "meta.json").is_file():
        raise ConfigError(f"{path} is not a run folder (no meta.json): pass a folder printed by `courtroom run`")
    meta = read_json(path / "meta.json", "the run's settings are lost: start a new run")
    problem = meta_problem(meta)
    if problem:
        raise DataError(f"{path / 'meta.json'} is damaged ({problem}): restore it from a copy, or start a new run")
    by_id: dict[str, dict[str, Any]] = {}
    rows, bad = read_jsonl(path / "results.jsonl", result_problem)
    for row in rows:
        by_id[row["id"]] = row
    if bad:
        _warn_once(skipped_text(path / "results.jsonl", bad))
    order = {i: n for n, i in enumerate(meta.get("example_ids", []))}
    results = sorted(by_id.values(), key=lambda r: order.get(r["id"], len(order)))
    summary_path = path / "summary.json"
    summary = (
        read_json(summary_path, f"delete it and finish the run with: courtroom run --resume {path}")
        if summary_path.is_file()
        else None
    )
    return meta, results, summary


def positions(meta: Mapping[str, Any], results: list[dict[str, Any]]) -> list[int]:
    """Each result's position in the run's input (``meta.json``'s ``example_ids``), as ``show`` numbers it.

    Not its place among ``results``: an unfinished run has gaps. An id the input does not list
    (none is written so) is numbered after the input's last.
    """
    order = {i: n for n, i in enumerate(meta.get("example_ids", []))}
    extra = iter(range(len(order), len(order) + len(results)))
    return [order[r["id"]] if r["id"] in order else next(extra) for r in results]


_warned: set[str] = set()


def _warn_once(line: str) -> None:
    if line not in _warned:
        _warned.add(line)
        logger.warning(line)


_FIELDS = frozenset(ExampleResult.__dataclass_fields__)


class StoredResults(Sequence[ExampleResult]):
    """A run folder's results as :class:`~courtroom.eval.harness.ExampleResult` s, in input order.

    Read from ``results.jsonl`` (as :func:`load_run` reads it) at each iteration, ``len`` or
    index, and not kept: ``list(outcome.results)`` keeps a copy when you need them more than once.
    """

    def __init__(self, run_dir: str | Path) -> None:  # noqa: D107
        self.run_dir = Path(run_dir)

    def _read(self) -> list[ExampleResult]:
        rows = load_run(self.run_dir)[1]
        return [ExampleResult(**{k: v for k, v in r.items() if k in _FIELDS}) for r in rows]

    def __iter__(self) -> Iterator[ExampleResult]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    @overload
    def __getitem__(self, index: int) -> ExampleResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[ExampleResult]: ...

    def __getitem__(self, index: int | slice) -> ExampleResult | list[ExampleResult]:
        return self._read()[index]

    def __repr__(self) -> str:
        return f"StoredResults({str(self.run_dir)!r})"
