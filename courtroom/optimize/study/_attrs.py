"""What a study's trials record about their configuration, and which of them count against ``--trials``.

The study modules that claim, race and tie configurations (:mod:`._dedupe`, :mod:`.race`,
:mod:`.tied`) and the workers (:mod:`._workers`) all read these; they import nothing of each other
for them.
"""

from __future__ import annotations

from typing import Any

KEY = "config_key"
"""User attribute: the trial's parameters as sorted JSON, set when it claims its configuration."""
DUPLICATE = "duplicate_of"
"""User attribute: the number of the trial whose value a duplicate took."""


def counts(trial: Any) -> bool:
    """Whether ``trial`` counts against ``--trials``: it ran (or runs) a configuration.

    Not counted: a repeat (it took a stored value), a trial the budget refused, one cut short by a
    stop (Ctrl-C: it runs again when the study is continued), and one marked failed without an
    error of its own (its worker died; the same).
    """
    from optuna.trial import TrialState

    attrs = trial.user_attrs
    if DUPLICATE in attrs or "budget" in attrs or attrs.get("interrupted"):
        return False
    if trial.state == TrialState.FAIL:
        return "error" in attrs
    return trial.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)


def ran(study: Any) -> int:
    """Trials that count against ``--trials``, whichever worker or earlier command ran them (:func:`counts`)."""
    return sum(1 for t in study.get_trials(deepcopy=False) if counts(t))


def ended(study: Any) -> int:
    """Trials that count against ``--trials`` and have ended: what a study's progress shows as done."""
    return sum(1 for t in study.get_trials(deepcopy=False) if counts(t) and t.state.name != "RUNNING")


def configuration(trial: Any) -> dict[str, Any]:
    """The configuration ``trial`` ran: the one it recorded (a continued or repeated one), else its parameters."""
    return dict(trial.user_attrs["config"] if "config" in trial.user_attrs else trial.params)


def why_failed(trial: Any) -> str:
    """What a FAIL trial's report says: its error, or why it has none (interrupted, its worker gone)."""
    attrs = trial.user_attrs
    if "error" in attrs:
        return str(attrs["error"])
    if attrs.get("interrupted"):
        return "interrupted (not counted: it runs again when the study is continued)"
    if "lost" in attrs:
        return f"{attrs['lost']}, marked failed by another worker (not counted)"
    return "no error recorded (its worker died)"
