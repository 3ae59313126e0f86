"""The libraries' own log lines (DSPy, LiteLLM, Optuna): quiet on the command line unless ``--debug``.

The command line draws its own progress (:mod:`courtroom.reporting.progress`); DSPy's INFO lines
("Average Metric", MIPROv2's steps), its prints and tqdm bars, LiteLLM's warnings and Optuna's
"Trial N finished" lines would bury it. :func:`set_debug` is called once per command by the CLI;
a script that never calls it keeps its own logging as it set it.

An optimizer's phases still reach the display: :func:`optimizer_output` reads DSPy's step lines
(bootstrap, propose, evaluate trial i/n) and its prints into the tracker's phase note.
"""

from __future__ import annotations

import contextlib
import logging
import re
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")

_state: dict[str, bool | None] = {"debug": None}


def set_debug(debug: bool) -> None:
    """The command line's choice: libraries' log lines shown (``--debug``) or quiet."""
    _state["debug"] = debug
    level = logging.NOTSET if debug else logging.ERROR
    for name in LITELLM_LOGGERS:  # LiteLLM never sets these loggers' levels itself, so before its import is fine
        logging.getLogger(name).setLevel(level)
    if "dspy" in sys.modules:
        quiet_dspy()


def reset() -> None:
    """Back to a script's logging (after a command run in-process): DSPy's stream on, LiteLLM's levels unset."""
    _state["debug"] = None
    for name in LITELLM_LOGGERS:
        logging.getLogger(name).setLevel(logging.NOTSET)
    if "dspy" in sys.modules:
        from dspy.utils import logging_utils

        logging_utils.enable_logging()


def debug() -> bool | None:
    """``--debug`` given (True), not given (False), or not on the command line (None)."""
    return _state["debug"]


def quiet_dspy() -> None:
    """DSPy's log stream off (on with ``--debug``); its records still reach :class:`PhaseNotes`.

    DSPy sets its logger to INFO when imported, so this runs after its import (the progress
    display, which every long command opens, imports DSPy and calls it).
    """
    if _state["debug"] is None:
        return
    from dspy.utils import logging_utils

    logging.getLogger("dspy").setLevel(logging.INFO)
    if _state["debug"]:
        logging_utils.enable_logging()
    else:
        logging_utils.disable_logging()


def optuna_level() -> int:
    """Optuna's verbosity: its INFO lines ("Trial N finished ...") only with ``--debug``."""
    return logging.INFO if _state["debug"] else logging.ERROR


PHASES: list[tuple[re.Pattern[str], Callable[[re.Match[str]], str], bool]] = [
    (re.compile(r"STEP 1: BOOTSTRAP"), lambda m: "bootstrap demos", True),
    (re.compile(r"STEP 2: PROPOSE"), lambda m: "propose instructions", True),
    (re.compile(r"STEP 3: FINDING OPTIMAL"), lambda m: "evaluate candidates", True),
    # MIPROv2 counts its evaluation of the default program as trial 1. With minibatches its total counts
    # it too; without, the total is num_trials and the trials that follow are numbered 2 .. num_trials + 1.
    (re.compile(r"Trial 1 / \d+ - Full Evaluation of Default Program"), lambda m: "evaluate default program", True),
    (re.compile(r"^=+ Trial (\d+) / (\d+) =+\s*$"), lambda m: f"evaluate trial {m[1]}/{int(m[2]) + 1}", True),
    (re.compile(r"Trial (\d+) / (\d+)"), lambda m: f"evaluate trial {m[1]}/{max(int(m[1]), int(m[2]))}", True),
    (re.compile(r"Iteration Depth: (\d+)/(\d+)"), lambda m: f"propose round {m[1]}/{m[2]}", True),
    # GEPA runs one iteration per proposal (130 for auto=light on 6 cases): each updates the phase,
    # which a pipe then gets every COURTROOM_PROGRESS_EVERY seconds, not a line per iteration.
    (re.compile(r"Iteration (\d+):"), lambda m: f"iteration {m[1]}", False),
    (re.compile(r"Will attempt to bootstrap (\d+) candidate sets"), lambda m: f"bootstrap {m[1]} candidate sets", True),
    (re.compile(r"Bootstrapped (\d+) full traces"), lambda m: f"bootstrapped {m[1]} demo(s)", False),
    (re.compile(r"(\d+) candidate programs found"), lambda m: f"{m[1]} candidate programs", False),
    (re.compile(r"Best score so far: ([\d.]+)"), lambda m: f"best so far {m[1]}", False),
]
"""DSPy optimizer lines -> the phase shown on the progress display, and whether it starts a stage
(a plain line at once) or only updates the current one (seen on the next line)."""


def phase_of(text: str) -> tuple[str, bool] | None:
    """The phase a DSPy optimizer line announces, if any, and whether it starts a stage."""
    for pattern, note, stage in PHASES:
        found = pattern.search(text)
        if found:
            return note(found), stage
    return None


class PhaseNotes(logging.Handler):
    """A handler on DSPy's logger that turns the optimizer's step lines (of one thread) into notes."""

    def __init__(self, on_phase: Callable[..., None]) -> None:  # noqa: D107
        super().__init__(logging.INFO)
        self.on_phase = on_phase
        self.thread = threading.get_ident()

    def emit(self, record: logging.LogRecord) -> None:  # noqa: D102
        if record.thread != self.thread:
            return  # another trial's optimizer, running beside this one
        with contextlib.suppress(Exception):
            phase = phase_of(record.getMessage())
            if phase:
                self.on_phase(*phase)


class _Prints:
    """Where DSPy's ``print`` calls go while an optimizer runs: phase notes (and stderr with ``--debug``)."""

    def __init__(self, original: Any) -> None:
        self.original = original
        self.listeners: dict[int, Callable[..., None]] = {}

    def write(self, text: str) -> int:
        listener = self.listeners.get(threading.get_ident())
        if listener is not None:
            phase = phase_of(text)
            if phase:
                listener(*phase)
        if _state["debug"] or (_state["debug"] is None and listener is None):
            sys.stderr.write(text)
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False


_sink: dict[str, Callable[..., None] | None] = {"notes": None}


@contextlib.contextmanager
def phases_to(notes: Callable[..., None]) -> Iterator[None]:
    """Optimizers run inside (without a display of their own: a study's trials) report their phases to ``notes``."""
    previous, _sink["notes"] = _sink["notes"], notes
    try:
        yield
    finally:
        _sink["notes"] = previous


_prints_lock = threading.Lock()
_prints: dict[str, Any] = {"stream": None, "users": 0}


@contextlib.contextmanager
def optimizer_output(on_phase: Callable[..., None] | None = None, label: str = "") -> Iterator[None]:
    """While a DSPy optimizer runs: its prints off stdout, its tqdm bars off, its phases to ``on_phase``.

    Without ``on_phase``, the phases go to the notes of :func:`phases_to` (if any), after ``label``.

    stdout carries the command's results (``--format csv``), so DSPy's prints never reach it:
    they become phase notes (and, with ``--debug``, stderr lines). Threads that run optimizers
    side by side (a study's workers) share one replacement of ``sys.stdout``.
    """
    notes = _sink["notes"]
    if on_phase is None and notes is not None:
        on_phase = (lambda phase, stage=True: notes(f"{label}: {phase}", stage)) if label else notes
    handler = PhaseNotes(on_phase) if on_phase is not None else None
    dspy_logger = logging.getLogger("dspy")
    with _prints_lock:
        if _prints["users"] == 0:
            _prints["stream"] = _Prints(sys.stdout)
            sys.stdout = _prints["stream"]
        _prints["users"] += 1
        stream = _prints["stream"]
        if on_phase is not None:
            stream.listeners[threading.get_ident()] = on_phase
    if handler is not None:
        dspy_logger.addHandler(handler)
    try:
        with quiet_tqdm(True):
            yield
    finally:
        if handler is not None:
            dspy_logger.removeHandler(handler)
        with _prints_lock:
            stream.listeners.pop(threading.get_ident(), None)
            _prints["users"] -= 1
            if _prints["users"] == 0:
                sys.stdout = stream.original
                _prints["stream"] = None


_tqdm_lock = threading.Lock()
_tqdm_state: dict[str, Any] = {"users": 0, "original": None}


@contextlib.contextmanager
def quiet_tqdm(quiet: bool) -> Iterator[None]:
    """Silence DSPy's tqdm bars while our own display runs (one display, not two mixed).

    DSPy passes ``disable=False`` itself, so the bar is forced off whatever the caller asks;
    threads that quiet it side by side (a study's workers) share one patch.
    """
    if not quiet:
        yield
        return
    import tqdm

    with _tqdm_lock:
        if _tqdm_state["users"] == 0:
            original = _tqdm_state["original"] = tqdm.tqdm.__init__

            def silent(self: Any, *args: Any, **kwargs: Any) -> None:
                kwargs["disable"] = True
                original(self, *args, **kwargs)

            tqdm.tqdm.__init__ = silent  # type: ignore[method-assign]
        _tqdm_state["users"] += 1
    try:
        yield
    finally:
        with _tqdm_lock:
            _tqdm_state["users"] -= 1
            if _tqdm_state["users"] == 0:
                tqdm.tqdm.__init__ = _tqdm_state["original"]  # type: ignore[method-assign]


__all__ = [
    "PhaseNotes",
    "debug",
    "optimizer_output",
    "optuna_level",
    "phase_of",
    "phases_to",
    "quiet_dspy",
    "quiet_tqdm",
    "reset",
    "set_debug",
]
