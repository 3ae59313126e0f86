"""The workers of one study: a heartbeat per running trial, stale trials, and the trials a worker owes.

* :class:`heartbeat` beats from a thread while a trial runs (every :data:`BEAT_SECONDS`), however
  long one chunk of dev examples takes; each beat also looks at the other workers' trials.
* :func:`fail_stale_trials` marks a RUNNING trial failed when its worker on this host is gone (its
  pid is not running, or runs another process: the start time the trial recorded differs), or
  when this worker has watched its heartbeat stand still for :data:`GRACE_SECONDS` by its own
  clock: the stamps of another machine are never compared with this one's, so a clock ahead or
  behind fails nothing. A failed paper default is queued again.
* :func:`until_settled` keeps a worker, its own trials done, until no other worker's trial is left
  running: a dead worker's is marked failed and what the study then owes runs here.
* :func:`optimize_owed` runs the trials this worker owes: a trial another worker finished meanwhile
  (it judged this one silent, or popped the same queued trial) is dropped with one line, and a
  storage that fails (a full disk) is named in one line with the command that resumes the study.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from courtroom.errors import ConfigError
from courtroom.optimize.study import _storage

logger = logging.getLogger(__name__)

BEAT_SECONDS = float(_storage.HEARTBEAT_SECONDS)
"""How often a running trial's heartbeat is written."""
GRACE_SECONDS = float(_storage.GRACE_SECONDS)
"""How long a heartbeat may stand still, as this worker sees it, before its trial is marked failed."""

_seen: dict[tuple[str, int], tuple[Any, float]] = {}
"""(study, trial id) -> (its heartbeat when last seen to change, this worker's monotonic time then)."""
_seen_lock = threading.Lock()
_taken: list[int] = []
"""Numbers of this worker's trials that another worker finished while they ran here."""
STARTED = "worker_started"
"""User attribute: when the trial's worker process started, as its OS tells (:func:`process_started`)."""
LOST = "lost"
"""User attribute: why another worker marked the trial failed (its worker gone, or silent)."""
WAIT_POLL = 0.5
"""Seconds between two looks at the other workers' running trials (:func:`until_settled`)."""
SAY_WAIT_SECONDS = 10.0
"""A worker waiting this long for the other workers' trials says so, in one line."""


def sign(trial: Any) -> None:
    """Name this worker on ``trial`` (host and pid, the process's start) and write its first heartbeat."""
    trial.set_user_attr("worker", _storage.worker())
    started = process_started(os.getpid())
    if started is not None:
        trial.set_user_attr(STARTED, started)
    trial.set_user_attr("heartbeat", time.time())


def process_started(pid: int) -> str | None:
    """When process ``pid`` started, as ``PIDNS/TICKS`` (Linux: its pid namespace, its start in clock ticks).

    A pid is reused once its process is gone: a trial's worker is alive only if the process with
    its pid started when the trial says. Two containers of one host name may each have a pid 7:
    a pid of another namespace is not judged. None where ``/proc`` does not tell (macOS): there
    the pid alone is judged.
    """
    try:
        namespace = os.stat("/proc/self/ns/pid").st_ino
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()  # the command name, in parentheses, may hold spaces
    return f"{namespace}/{fields[19]}" if len(fields) > 19 else None


class heartbeat:  # noqa: N801 - used as a context manager, like contextlib's
    """``with heartbeat(trial):`` writes the trial's ``heartbeat`` every ``every`` seconds from a thread.

    A beat that finds the trial finished by another worker stops beating and notes it (the
    trial's own next write then fails, and :func:`optimize_owed` drops it with one line).
    """

    def __init__(self, trial: Any, every: float | None = None) -> None:  # noqa: D107
        self.trial = trial
        self.every = BEAT_SECONDS if every is None else every
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._beat, name=f"heartbeat-{trial.number}", daemon=True)

    def __enter__(self) -> heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join(timeout=10)
        if self.trial.number in _taken:
            return
        try:
            taken = self.trial.study._storage.get_trial(self.trial._trial_id).state.is_finished()
        except Exception:  # noqa: BLE001 - the storage failed: optimize_owed names it
            return
        if taken:
            _taken.append(self.trial.number)

    def _beat(self) -> None:
        from optuna.exceptions import UpdateFinishedTrialError

        storage, trial_id = self.trial.study._storage, self.trial._trial_id
        while not self._done.wait(self.every):
            try:
                storage.set_trial_user_attr(trial_id, "heartbeat", time.time())
            except UpdateFinishedTrialError:
                _taken.append(self.trial.number)
                return
            except Exception as exc:  # noqa: BLE001 - a storage hiccup: the next beat tries again
                logger.debug("heartbeat of trial %s not written: %s", self.trial.number, exc)
                continue
            try:
                fail_stale_trials(self.trial.study)
            except Exception as exc:  # noqa: BLE001 - watching the others never stops this trial
                logger.debug("stale trials not checked: %s", exc)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _gone(trial: Any) -> bool:
    """Whether ``trial``'s worker is a process of this host (and pid namespace) that is gone."""
    w_host, _, w_pid = str(trial.user_attrs.get("worker", "")).rpartition(":")
    if w_host != socket.gethostname() or not w_pid.isdigit():
        return False
    started, ours = trial.user_attrs.get(STARTED), process_started(os.getpid())
    if started is not None and ours is not None and str(started).split("/")[0] != ours.split("/")[0]:
        return False  # another container's pid: its heartbeat judges it
    if not _alive(int(w_pid)):
        return True
    now = process_started(int(w_pid))
    return started is not None and now is not None and now != started  # the pid runs another process now


def fail_stale_trials(study: Any, grace: float | None = None) -> list[int]:
    """Mark RUNNING trials of dead or silent workers as FAIL; returns their numbers.

    Dead: its worker is a process of this host that is gone (:func:`_gone`). Silent: its heartbeat
    has not changed for ``grace`` seconds (default :data:`GRACE_SECONDS`) of this worker's watching.
    The reason is recorded on the trial (:data:`LOST`); a failed paper default is queued again, so
    the study still runs it.
    """
    from optuna.exceptions import UpdateFinishedTrialError
    from optuna.trial import TrialState

    grace = GRACE_SECONDS if grace is None else grace
    now = time.monotonic()
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if str(t.user_attrs.get("worker", "")) == _storage.worker():
            continue
        dead = _gone(t)
        beat, key = t.user_attrs.get("heartbeat"), (study.study_name, t._trial_id)
        with _seen_lock:
            last = _seen.get(key)
            if last is None or last[0] != beat:
                _seen[key] = (beat, now)
                silent = False
            else:
                silent = now - last[1] > grace
        if dead or silent:
            why = "its worker is gone" if dead else f"no heartbeat for {grace:g} s"
            try:  # the reason first: a finished trial takes no attribute (a silent one may still end meanwhile)
                study._storage.set_trial_user_attr(t._trial_id, LOST, why)
                study._storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
            except (UpdateFinishedTrialError, RuntimeError):  # finished meanwhile
                continue
            logger.warning("trial %d of study %s marked failed: %s", t.number, study.study_name, why)
            failed.append(t.number)
            if t.user_attrs.get("paper_default"):  # the study's reference point: it still runs
                study.enqueue_trial(t.system_attrs.get("fixed_params") or t.params, user_attrs={"paper_default": True})
    return failed


def others_running(study: Any) -> list[Any]:
    """The study's RUNNING trials that are not this worker's."""
    from optuna.trial import TrialState

    me = _storage.worker()
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    return [t for t in running if str(t.user_attrs.get("worker", "")) != me]


def until_settled(study: Any, run: Callable[[], Any], again: Callable[[], bool] = lambda: True) -> None:
    """``run()`` (this worker's share of ``--trials``), then wait until no other worker's trial runs.

    A trial whose worker is gone is marked failed meanwhile (:func:`fail_stale_trials`: at once on
    this host, after the grace period on another); it no longer counts, nor does one another
    worker's Ctrl-C cut short, so once the others' trials have ended ``run()`` is called again
    (while ``again()``) for what the study still owes. (A worker that left at once, the study
    holding ``--trials`` with a dead worker's trial among them, left that trial RUNNING until the
    dead worker's command was run again.) A stop (Ctrl-C) ends the wait.
    """
    from courtroom import _stop

    while True:
        run()
        if not _await_others(study) or _stop.stop_requested() or not again():
            return


def _await_others(study: Any) -> bool:
    """Wait until no other worker's trial runs, failing those of dead or silent workers; whether any ran or failed."""
    from courtroom import _stop

    waited, since, told = False, time.monotonic(), False
    while not _stop.stop_requested():
        failed = fail_stale_trials(study)
        running = others_running(study)
        waited = waited or bool(failed or running)
        if not running:
            break
        if not told and time.monotonic() - since > SAY_WAIT_SECONDS:
            told = True
            logger.warning(
                "waiting for trial(s) %s of study %s, running in other workers (one whose worker is gone is run "
                "here)", ", ".join(str(t.number) for t in running), study.study_name,
            )  # fmt: skip
        _stop.wait(WAIT_POLL)
    return waited


def _told_elsewhere(exc: BaseException) -> bool:
    """Whether ``exc`` (or what it interrupted) is Optuna refusing to tell a trial another worker finished."""
    from optuna.exceptions import UpdateFinishedTrialError

    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return False
        if isinstance(seen, UpdateFinishedTrialError) or "Cannot tell a" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _storage_cause(exc: BaseException) -> BaseException | None:
    """The database error in ``exc``'s chain (Optuna's, SQLAlchemy's or sqlite3's), or None."""
    seen: BaseException | None = exc
    for _ in range(10):
        if seen is None:
            return None
        name, module = type(seen).__name__, type(seen).__module__
        if name in ("StorageInternalError", "OperationalError", "DatabaseError") or module.startswith("sqlite3"):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def optimize_owed(
    study: Any,
    objective: Any,
    config: Any,
    n_trials: int,
    n_jobs: int,
    callbacks: Sequence[Any] = (),
    catch: tuple[type[Exception], ...] = (),
) -> None:
    """``study.optimize`` until this worker has told ``n_trials`` trials, whatever other workers do.

    A trial another worker finished while it ran here cannot be told ("Cannot tell a FAIL trial"):
    it is dropped with one line and this worker goes on with the trials it still owes. A storage
    that fails (a full disk, a read-only file) raises one :class:`ConfigError` naming it, the cause
    and the command that resumes the study. ``catch``: the objective's errors recorded on a failed trial.
    """
    from courtroom.eval.metrics import active, scoring
    from courtroom.optimize.study._attrs import ran

    chosen = active()
    if chosen is not None and n_jobs > 1:  # Optuna's worker threads start from an empty context
        scored_objective = objective

        def objective(trial: Any) -> Any:
            with scoring(chosen):
                return scored_objective(trial)

    told: list[int] = []
    total = getattr(config, "trials", None)

    stopped = False

    def enough(study: Any, _trial: Any) -> None:  # other workers count too: stop once the study holds --trials
        nonlocal stopped
        if total is not None and ran(study) >= total:
            stopped = True
            study.stop()

    # Our own flag, not Optuna's: its ``_stop_flag`` stays set after the round it stopped, and a study
    # that held --trials then (a running trial counts) may owe one again once that trial turns out
    # a repeat; read at the next round's start, it ended every round at once, and the caller
    # queued another configuration each time, forever (hundreds of waiting trials in seconds).
    for _ in range(n_trials + 1):
        remaining = n_trials - len(told)
        if remaining <= 0 or stopped:
            return
        try:
            study.optimize(
                objective,
                n_trials=remaining,
                n_jobs=n_jobs,
                catch=catch,
                gc_after_trial=False,
                callbacks=[lambda _study, trial: told.append(trial.number), *callbacks, enough],
            )
            return
        except Exception as exc:
            cause = _storage_cause(exc)
            if cause is not None:  # the study keeps what it told: the same command continues it
                from courtroom import _stop

                again = _stop.command_line() or "the same study command (same storage and study name)"
                raise ConfigError(_storage.storage_failure(config.storage, cause, resume=again)) from exc
            if not _told_elsewhere(exc):
                raise
            which = f"trial {_taken.pop()}" if _taken else "a trial"
            logger.warning(
                "%s of study %s was finished by another worker while it ran here: its result is dropped "
                "and this worker goes on",
                which,
                study.study_name,
            )
