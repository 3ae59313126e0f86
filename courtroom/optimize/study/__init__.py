"""Studies: Optuna searches over a framework's structural knobs, or across designs (SPEC §6, §17).

The study path in the order a study runs it:

* :mod:`~courtroom.optimize.study.pipeline`: from an experiment spec to a finished study, its
  report and its export (``courtroom study`` and :func:`courtroom.study` call it);
* :mod:`~courtroom.optimize.study._config`: what defines a study (:class:`StudyConfig`);
* :mod:`~courtroom.optimize.study.spaces`: the searched parameters of each framework;
* :mod:`~courtroom.optimize.study._run`: creating, continuing and running a study's trials;
* :mod:`~courtroom.optimize.study._trials`: what one trial does (build, score on dev, record);
* :mod:`~courtroom.optimize.study.race`: racing the trials on shared dev cases against the incumbent;
* :mod:`~courtroom.optimize.study._dedupe`, :mod:`~courtroom.optimize.study._workers`,
  :mod:`~courtroom.optimize.study._storage`: each configuration once, several workers, the storage;
* :mod:`~courtroom.optimize.study.tied`: the configurations the dev data cannot separate from the best;
* :mod:`~courtroom.optimize.study.holdout`: the chosen configuration scored once on the test split;
* :mod:`~courtroom.optimize.study.report`, :mod:`~courtroom.optimize.study._design_report`: reports;
* :mod:`~courtroom.optimize.study.designs`: a study across designs.

The names below are importable from here; they load (with DSPy) on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from courtroom.optimize.study._config import OBJECTIVES, StudyConfig
    from courtroom.optimize.study._run import (
        StudyOutcome,
        create_study,
        report_dir,
        run_study,
        study_config_dict,
        study_data,
        unclaimed_name,
    )

_LAZY = {
    "OBJECTIVES": "courtroom.optimize.study._config",
    "StudyConfig": "courtroom.optimize.study._config",
    "StudyOutcome": "courtroom.optimize.study._run",
    "create_study": "courtroom.optimize.study._run",
    "report_dir": "courtroom.optimize.study._run",
    "run_study": "courtroom.optimize.study._run",
    "study_config_dict": "courtroom.optimize.study._run",
    "study_data": "courtroom.optimize.study._run",
    "unclaimed_name": "courtroom.optimize.study._run",
}

__all__ = [
    "OBJECTIVES",
    "StudyConfig",
    "StudyOutcome",
    "create_study",
    "report_dir",
    "run_study",
    "study_config_dict",
    "study_data",
    "unclaimed_name",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
