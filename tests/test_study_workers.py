"""Two worker processes of one study: a live trial is never failed by the other, whatever its clock says
or however long one chunk of dev examples takes; a worker whose trial another finished exits 0 with
one line. Heartbeats and the stale limit are shortened in the workers (0.2 s, 1 s) so a chunk of a few
seconds is "longer than the stale limit", as a 4-minute chunk is under the real 180 s."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import warm
from _output import unwrapped

from courtroom.testing import FakeServer

WORKER = textwrap.dedent("""
    import sys
    import time

    real = time.time
    skew = float(sys.argv[1])
    time.time = lambda: real() + skew  # this worker's clock, ahead of the other's by SKEW seconds

    from courtroom.optimize.study import _workers

    _workers.BEAT_SECONDS, _workers.GRACE_SECONDS = 0.2, 1.0
    from courtroom.cli import main

    sys.exit(main(sys.argv[2:]))
""")


class Gate:
    """Holds every request until opened: a chunk of dev examples lasts as long as the test wants."""

    def __init__(self, server: FakeServer) -> None:
        self.opened, self._answer = threading.Event(), server.responder
        server.responder = self.answer

    def answer(self, prompt: str, schema: dict[str, Any]) -> Any:
        self.opened.wait(120)
        return self._answer(prompt, schema)


def _args(tmp_path: Path, server: FakeServer, name: str, trials: int = 1) -> list[str]:
    return [
        "study", "jot", "--task", "boolean_expressions", "--trials", str(trials), "--dev-limit", "2",
        "--train-limit", "1", "--space", "n_loops=1", "--lm", "openai/workers", "--api-base", server.url, "--no-prune",
        "--concurrency", "1", "--storage", f"journal:{tmp_path / 'study.journal'}", "--study-name", "shared",
        "--out", str(tmp_path / f"report-{name}"),
    ]  # fmt: skip


def _worker(tmp_path: Path, server: FakeServer, name: str, skew: float = 0.0, trials: int = 1) -> Any:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    args = _args(tmp_path, server, name, trials)
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / f"cache-{name}")}  # no answer shared
    return warm.Popen(  # forked warm (the skew patches time.time, which the heartbeats call at each beat)
        [sys.executable, str(script), str(skew), *args], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _trials(tmp_path: Path) -> list[Any]:
    import optuna

    from courtroom.optimize.study._storage import open_storage

    try:
        return list(
            optuna.load_study(study_name="shared", storage=open_storage(f"journal:{tmp_path / 'study.journal'}")).trials
        )
    except KeyError:  # not created yet
        return []


def _wait_running(tmp_path: Path, n: int = 1, timeout: float = 180) -> list[Any]:
    """The first ``n`` trials running, once they are."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        trials = _trials(tmp_path)
        running = [t for t in trials if t.state.name == "RUNNING" and "worker" in t.user_attrs]
        assert "FAIL" not in [t.state.name for t in trials], "a live trial was marked failed"
        if len(running) >= n:
            return running
        time.sleep(0.1)
    raise AssertionError(f"{n} trial(s) did not start")


def test_a_worker_with_a_skewed_clock_never_fails_a_live_trial(tmp_path: Path, courtroom_cli: Any) -> None:
    with FakeServer() as server:
        # The paper default first: a worker runs a queued trial under the storage's lock, alone.
        assert courtroom_cli(*_args(tmp_path, server, "first")).returncode == 0
        gate = Gate(server)
        # --trials 3: the study holds three when done; the two workers share the two it still owes.
        live = _worker(tmp_path, server, "live", trials=3)
        _wait_running(tmp_path)
        ahead = _worker(tmp_path, server, "ahead", skew=200.0, trials=3)  # before: it failed the live trial at once
        _wait_running(tmp_path, 2)
        time.sleep(3)  # both chunks held three times the stale limit: each worker watches the other's beats
        gate.opened.set()
        outs = [p.communicate(timeout=300) for p in (live, ahead)]
    for proc, (_, err) in zip((live, ahead), outs, strict=True):
        assert proc.returncode == 0, err[-3000:]
        assert "marked failed" not in err and "finished by another worker" not in err, err[-3000:]
    trials = [t for t in _trials(tmp_path) if "duplicate_of" not in t.user_attrs]  # a repeat is not run again
    assert [t.state.name for t in trials] == ["COMPLETE"] * 3, [(t.number, t.state.name) for t in trials]
    assert len({t.user_attrs["worker"] for t in trials}) == 3


def test_a_worker_whose_trial_was_taken_goes_on_and_exits_0(tmp_path: Path) -> None:
    import optuna
    from optuna.trial import TrialState

    from courtroom.optimize.study._storage import open_storage

    with FakeServer() as server:
        gate = Gate(server)
        worker = _worker(tmp_path, server, "taken")
        running = _wait_running(tmp_path)[0]
        # Another worker judged it silent and marked it failed while it ran.
        storage = open_storage(f"journal:{tmp_path / 'study.journal'}")
        optuna.load_study(study_name="shared", storage=storage)
        storage.set_trial_state_values(running._trial_id, TrialState.FAIL)
        time.sleep(0.5)
        gate.opened.set()
        _, err = worker.communicate(timeout=300)
    # before: exit 1, "Cannot tell a FAIL trial" (an AssertionError "Should not reach." when it completed)
    assert worker.returncode == 0, err[-3000:]
    said = [line for line in unwrapped(err) if "finished by another worker" in line]
    assert len(said) == 1 and f"trial {running.number} " in said[0], err[-3000:]
    assert "Traceback" not in err and "Cannot tell" not in err
    trials = _trials(tmp_path)
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]  # the trial it owed, run in its place


def test_a_round_after_one_the_count_stopped_still_runs_what_is_owed() -> None:
    # Two threads: a round stopped once the study held --trials, counting a trial still running;
    # that trial then turned out a repeat (uncounted), so one was owed again. Optuna's stop flag,
    # still set, ended every later round before its first trial, and the study queued another
    # configuration each time, forever (336 waiting trials in one hung suite run).
    import optuna

    from courtroom.optimize.study import StudyConfig
    from courtroom.optimize.study._workers import optimize_owed

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study()
    objective = lambda t: t.suggest_float("x", 0, 1)  # noqa: E731
    optimize_owed(study, objective, StudyConfig("jot", trials=1), 3, 1)  # stopped: the study holds 1
    assert len(study.trials) == 1
    optimize_owed(study, objective, StudyConfig("jot", trials=3), 2, 1)  # two owed now
    assert len(study.trials) == 3


def test_a_configuration_already_queued_is_not_queued_again() -> None:
    import optuna

    from courtroom.optimize.study._dedupe import configurations, enqueue_unseen
    from courtroom.optimize.study.spaces import build_space

    space = build_space("jot", overrides={"n_loops": "1:1"})
    size = len(list(configurations(space)))
    study = optuna.create_study()
    queued = 0
    while enqueue_unseen(study, space, queued) and queued <= size:
        queued += 1
    assert queued == size == len(study.trials)  # each configuration once, then nothing left to queue


def test_a_process_forked_after_import_names_itself_on_its_trials() -> None:
    # The name was fixed at import: forked workers (a fork server, a multiprocessing pool) all
    # took their parent's, each took the other's running trial for its own, and a killed one's
    # trial was never marked failed (its "pid", the parent's, alive).
    from courtroom.optimize.study import _storage

    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.write(write, _storage.worker().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 200).decode()
    os.close(read)
    assert child.endswith(f":{pid}") and child != _storage.worker()
