"""The one description of an experiment (SPEC §12): :class:`Experiment`, its sections and checks.

:class:`Experiment` and :func:`differences` live in :mod:`courtroom.spec._experiment`, the
sections (:class:`Data`, :class:`Models`, :class:`Design`, :class:`Execution`, :class:`Budget`,
:class:`Output`, :class:`StudySettings`) and their checks in :mod:`courtroom.spec._sections`, the
parsing of setting values given as text in :mod:`courtroom.spec._values`. All are imported from
here. Nothing heavy is imported: ``courtroom --help`` and every bad-input error read this package.
"""

from courtroom.spec._experiment import DATA_SOURCE, FLAGS, IDENTITY, SECTIONS, Experiment, differences, flag_of
from courtroom.spec._sections import (
    DEFAULT_FRACTIONS,
    FORMATS,
    SPLITS,
    Budget,
    Data,
    Design,
    Execution,
    Models,
    Output,
    StudySettings,
    check_format,
    check_sizes,
    check_url,
    pruning_conflict,
)
from courtroom.spec._typed import typed
from courtroom.spec._values import parse_value, typed_knobs, typed_value

__all__ = [
    "DATA_SOURCE",
    "DEFAULT_FRACTIONS",
    "FLAGS",
    "FORMATS",
    "IDENTITY",
    "SECTIONS",
    "SPLITS",
    "Budget",
    "Data",
    "Design",
    "Execution",
    "Experiment",
    "Models",
    "Output",
    "StudySettings",
    "check_format",
    "check_sizes",
    "check_url",
    "differences",
    "flag_of",
    "parse_value",
    "pruning_conflict",
    "typed",
    "typed_knobs",
    "typed_value",
]
