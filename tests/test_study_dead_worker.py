"""A worker of a study SIGKILLed mid-trial: the living one notices, marks its trial failed and runs what
the study still owes, on SQLite, a journal and PostgreSQL; a pid reused by another process is no
worker alive; a Ctrl-C'd trial says "interrupted"; progress never counts past --trials."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import warm

from courtroom.testing import FakeServer

TRIALS = 3
"""What the workers ask for: trial 0 run first, then one trial each, then the one the dead worker owed."""


@pytest.fixture(params=["sqlite", "journal", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/dead.db"
    if request.param == "journal":
        return f"journal:{tmp_path}/dead.journal"
    return str(request.getfixturevalue("postgres"))  # the session's server (tests/conftest.py)


def _args(storage: str, name: str, url: str, out: Path, trials: int = TRIALS) -> list[str]:
    return [
        "study", "jot", "--task", "boolean_expressions", "--trials", str(trials), "--dev-limit", "2",
        "--train-limit", "1", "--space", "n_loops=1:2", "--lm", "openai/dead", "--api-base", url,
        "--no-prune", "--concurrency", "1", "--test-limit", "0", "--storage", storage, "--study-name", name,
        "--out", str(out),
    ]  # fmt: skip


def _trials(storage: str, name: str) -> list[Any]:
    import optuna

    from courtroom.optimize.study._storage import open_storage

    try:
        return list(optuna.load_study(study_name=name, storage=open_storage(storage)).trials)
    except KeyError:  # not created yet
        return []


def _running(storage: str, name: str, procs: list[Any], timeout: float = 120) -> dict[int, Any]:
    """pid -> the trial it runs, once each of ``procs`` runs one (and has signed it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = {}
        for t in _trials(storage, name):
            pid = str(t.user_attrs.get("worker", "")).rpartition(":")[2]
            if t.state.name == "RUNNING" and pid.isdigit():
                running[int(pid)] = t
        if {p.pid for p in procs} <= set(running):
            return running
        assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
        time.sleep(0.05)
    raise AssertionError("the trials did not start")


def _mid_trial(storage: str, name: str, procs: list[Any], timeout: float = 120) -> dict[int, Any]:
    """pid -> the trial it runs, once none of them can end while the server holds its answers.

    A trial drawing a configuration the study already finished is a duplicate and completes at once,
    with no request (courtroom.optimize.study._dedupe): killed after that, its worker leaves no
    trial behind. Only a trial whose configuration is drawn and unfinished is mid-trial.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        running = _running(storage, name, procs)
        finished = [t.params for t in _trials(storage, name) if t.state.name == "COMPLETE"]
        if all(running[p.pid].params and running[p.pid].params not in finished for p in procs):
            return running
        time.sleep(0.05)
    raise AssertionError("no worker was mid-trial")


def test_the_living_worker_runs_a_killed_workers_trial(storage: str, tmp_path: Path, courtroom_cli: Any) -> None:
    name = f"dead-{tmp_path.name}"  # the PostgreSQL server is the session's: a study of this test's own
    env = {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        # Trial 0 (the paper default) first: queued, it runs under the storage's lock, one worker at a time.
        first = courtroom_cli(*_args(storage, name, server.url, tmp_path / "out", trials=1), env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        server.hold()  # every answer waits: both workers are mid-trial when one is killed
        procs = [
            warm.Popen(
                [sys.executable, "-m", "courtroom.cli", *_args(storage, name, server.url, tmp_path / f"out-{i}")],
                env=os.environ | env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for i in range(2)
        ]
        running = _mid_trial(storage, name, procs)  # before: a duplicate's trial, complete by the kill (1 run in 7)
        victim, survivor = procs
        victim.send_signal(signal.SIGKILL)
        victim.communicate(timeout=60)
        server.release()
        _, err = survivor.communicate(timeout=240)
    assert survivor.returncode == 0, err[-3000:]
    from courtroom.optimize.study._attrs import counts

    trials = _trials(storage, name)
    states = {t.number: t.state.name for t in trials}
    assert "RUNNING" not in states.values(), states  # before: the dead worker's trial stayed RUNNING
    # Before: 2 of 3 counted (the survivor stopped counting the dead trial, which failed later).
    assert sum(map(counts, trials)) == TRIALS, (states, err[-3000:])
    dead = trials[running[victim.pid].number]
    assert dead.state.name == "FAIL" and dead.user_attrs.get("lost") == "its worker is gone"
    assert f"trial {dead.number} of study {name} marked failed: its worker is gone" in " ".join(err.split())


def test_a_pid_another_process_took_is_no_worker_alive(tmp_path: Path) -> None:
    import optuna

    from courtroom.optimize.study import _workers

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    with subprocess.Popen(["cat"], stdin=subprocess.PIPE) as other:  # alive until its input closes
        started = _workers.process_started(other.pid)
        assert started is not None, "/proc tells when a process started (Linux)"
        reused, alive = study.ask(), study.ask()
        for trial, when in ((reused, started.split("/")[0] + "/1"), (alive, started)):
            trial.set_user_attr("worker", f"{socket.gethostname()}:{other.pid}")
            trial.set_user_attr(_workers.STARTED, when)
            trial.set_user_attr("heartbeat", time.time())
        # The pid runs, but not the process that signed the first trial (it started at tick 1): gone.
        failed = _workers.fail_stale_trials(study)
        other.stdin.close()  # type: ignore[union-attr]
    assert failed == [reused.number]  # before: [] (the pid alone was asked, and it answered)
    states = [t.state.name for t in study.trials]
    assert states == ["FAIL", "RUNNING"]


def test_a_dead_workers_paper_default_is_queued_again() -> None:
    import optuna

    from courtroom.optimize.study import _workers

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    study.enqueue_trial({"n_loops": 3}, user_attrs={"paper_default": True})
    trial = study.ask()  # popped by a worker that then died
    trial.set_user_attr("worker", f"{socket.gethostname()}:{_dead_pid()}")
    assert _workers.fail_stale_trials(study) == [trial.number]
    waiting = [t for t in study.trials if t.state.name == "WAITING"]
    assert [(t.system_attrs["fixed_params"], t.user_attrs) for t in waiting] == [
        ({"n_loops": 3}, {"paper_default": True})
    ]  # the study's reference point still runs (before: lost with its worker)


def test_a_silent_worker_of_another_host_is_waited_out_then_its_trial_run_here(monkeypatch: pytest.MonkeyPatch) -> None:
    # Another machine's worker can't be asked about its pid: its heartbeat, standing still for the
    # grace period (shortened here) as this worker watches, fails it; then what is owed runs here.
    import optuna

    from courtroom.optimize.study import _workers

    monkeypatch.setattr(_workers, "GRACE_SECONDS", 0.3)
    monkeypatch.setattr(_workers, "WAIT_POLL", 0.05)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    far = study.ask()
    far.set_user_attr("worker", "another-host:7")
    far.set_user_attr("heartbeat", 1.0)
    runs: list[list[str]] = []
    start = time.monotonic()
    _workers.until_settled(study, lambda: runs.append([t.state.name for t in study.trials]))
    assert runs == [["RUNNING"], ["FAIL"]]  # its own share, then again once the silent trial failed
    assert 0.3 < time.monotonic() - start < 10
    assert study.trials[0].user_attrs["lost"] == "no heartbeat for 0.3 s"


def _dead_pid() -> int:
    """The pid of a process that has ended."""
    done = subprocess.run(["sh", "-c", "echo $$"], capture_output=True, text=True, check=True)
    return int(done.stdout)


def test_a_ctrl_c_trial_is_reported_interrupted(tmp_path: Path, courtroom_cli: Any) -> None:
    storage, name = f"sqlite:///{tmp_path}/stop.db", "stop"
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        args = _args(storage, name, server.url, tmp_path / "out", trials=2)
        server.hold()
        proc = warm.Popen([sys.executable, "-m", "courtroom.cli", *args], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)  # fmt: skip
        _running(storage, name, [proc])
        deadline = time.monotonic() + 60
        while not server.in_flight:  # a request is out: the trial is scoring when it is stopped
            assert time.monotonic() < deadline, "no request reached the server"
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        server.release()
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 130, err[-3000:]
        stopped = [t for t in _trials(storage, name) if t.state.name != "COMPLETE"]
        # Before: FAIL with no word of why, and the continued study said "no error recorded (its worker died)".
        assert [(t.state.name, t.user_attrs.get("interrupted")) for t in stopped] == [("FAIL", True)]
        again = courtroom_cli(*args, env={"COURTROOM_CACHE_DIR": str(tmp_path / "cache")})
    assert again.returncode == 0, again.stderr[-3000:]
    text = " ".join((again.stdout + again.stderr).split())
    assert "its worker died" not in text
    assert f"trial {stopped[0].number}: interrupted (not counted: it runs again when the study is continued)" in text


@pytest.mark.filterwarnings("ignore:Heartbeat of storage")  # the test's own ask(), as a killed worker's
def test_progress_never_counts_past_the_trials_asked_for(tmp_path: Path, courtroom_cli: Any) -> None:
    # A study holds 1 trial and one a killed worker left RUNNING: the rerun fails it and runs one
    # more. Before: the bar counted the dead trial when the command started, then the one run in its
    # place: "3/2 trials, ETA -1s".
    import optuna

    from courtroom.optimize.study._storage import open_storage

    storage, name = f"sqlite:///{tmp_path}/progress.db", "progress"
    env = {"COURTROOM_CACHE_DIR": str(tmp_path / "cache"), "COURTROOM_PROGRESS_EVERY": "600"}
    with FakeServer() as server:
        first = courtroom_cli(*_args(storage, name, server.url, tmp_path / "out", trials=1), env=env)
        assert first.returncode == 0, first.stderr[-3000:]
        study = optuna.load_study(study_name=name, storage=open_storage(storage))
        left = study.ask()  # as a SIGKILLed worker leaves it
        left.set_user_attr("worker", f"{socket.gethostname()}:{_dead_pid()}")
        left.set_user_attr("heartbeat", time.time())
        again = courtroom_cli(*_args(storage, name, server.url, tmp_path / "out", trials=2), env=env)
    assert again.returncode == 0, again.stderr[-3000:]
    lines = " ".join(again.stderr.split())
    counts = [(int(a), int(b)) for a, b in re.findall(r"(\d+)/(\d+) trials", lines)]
    assert counts and all(a <= b for a, b in counts), counts
    assert counts[-1] == (2, 2), counts
    assert not re.search(r"ETA -", lines), lines
