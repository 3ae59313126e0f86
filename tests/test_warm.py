"""The suite's warm children (tests/warm.py) are real processes that behave as ``python ARGS`` does.

Signal, exit-code and two-writer tests rely on it: a child that shared the test's pid, files or
signal handlers, or exited otherwise than Python does, would let those tests pass on a broken CLI.
"""

from __future__ import annotations

import os
import resource
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import warm


def test_a_child_is_its_own_process_with_the_environment_and_folder_it_was_given(tmp_path: Path) -> None:
    code = "import os, sys; print(os.getpid(), os.getcwd(), os.environ['WARM_TEST'], sys.argv[1:])"
    done = warm.run([sys.executable, "-c", code, "a", "b"], capture_output=True, text=True, cwd=tmp_path,
                    env={**os.environ, "WARM_TEST": "yes"})  # fmt: skip
    pid, cwd, value, argv = done.stdout.split(maxsplit=3)
    assert done.returncode == 0 and int(pid) != os.getpid()
    assert (cwd, value, argv.strip()) == (str(tmp_path), "yes", "['a', 'b']")
    assert "WARM_TEST" not in os.environ  # the test process's own environment is untouched


def test_a_child_exits_as_python_does() -> None:
    def status(code: str) -> subprocess.CompletedProcess[str]:
        return warm.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)

    assert status("import sys; sys.exit(3)").returncode == 3
    assert status("pass").returncode == 0
    failed = status("raise ValueError('boom')")
    assert failed.returncode == 1 and "ValueError: boom" in failed.stderr and "Traceback" in failed.stderr
    said = status("import sys; sys.exit('no such file')")
    assert said.returncode == 1 and said.stderr.strip() == "no such file"
    # An atexit function runs and what was printed reaches the pipe before the child is gone.
    done = status("import atexit; atexit.register(print, 'bye'); print('hi', end='')")
    assert done.stdout == "hibye\n"


def test_signals_reach_the_child_and_its_own_handlers() -> None:
    code = (
        "import signal, sys, time\n"
        "signal.signal(signal.SIGTERM, lambda *a: (print('term', flush=True), sys.exit(143)))\n"
        "print('ready', flush=True)\n"
        "time.sleep(60)\n"
    )
    proc = warm.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    assert proc.poll() is None
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert (proc.returncode, out) == (143, "term\n")

    # Ctrl-C left to Python: KeyboardInterrupt, and the process dies of the signal (-2), as a cold one
    # started from a terminal does. The child says first whether it can: a child that inherited
    # SIGINT ignored or blocked fails here at once, not after sleeping through the signal.
    code = (
        "import faulthandler, signal, time; faulthandler.register(signal.SIGUSR1)\n"
        "print(signal.getsignal(signal.SIGINT), signal.pthread_sigmask(signal.SIG_BLOCK, ()), flush=True)\n"
        "time.sleep(60)"
    )
    proc = warm.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    state = proc.stdout.readline()  # its SIGINT handler and blocked signals
    if state != f"{signal.default_int_handler} set()\n":
        observed = (state, _signal_state(proc.pid))
        proc.kill()
        pytest.fail(f"the child cannot take a Ctrl-C as Python does: {observed}")
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:  # a hang of another kind: its stacks (SIGUSR1) say where it waits
        proc.send_signal(signal.SIGUSR1)
        time.sleep(1)
        proc.kill()
        _, err = proc.communicate(timeout=30)
        pytest.fail(f"the child outlived its SIGINT by 30 s; its threads:\n{err[-6000:]}")
    assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in err

    proc = warm.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc.kill()
    assert proc.wait(timeout=30) == -signal.SIGKILL


def _signal_state(pid: int) -> tuple[str, str]:
    """The kernel's view of a process's main thread: its blocked and its ignored signals (hex masks)."""
    status = dict(line.split(":\t", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return status["SigBlk"].strip(), status["SigIgn"].strip()


def test_a_child_starts_with_the_signals_of_a_fresh_python_whatever_its_server_inherited() -> None:
    # The server inherits the test run's signal state. A run started in the background of a script
    # (without job control) ignores SIGINT, and then every warm child slept through its Ctrl-C: the
    # suite's flake. A server started from a thread that blocks signals keeps them blocked. A light
    # server (nothing preloaded) started both ways here; its children must not inherit either.
    server = warm.ForkServer(preload=())
    blocked = {signal.SIGINT, signal.SIGTERM, signal.SIGUSR1}

    def start() -> None:
        signal.pthread_sigmask(signal.SIG_BLOCK, blocked)  # this thread's mask only
        server._start()

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # for the instant the server starts
    try:
        starter = threading.Thread(target=start)
        starter.start()
        starter.join()
    finally:
        signal.signal(signal.SIGINT, previous)
    proc = None
    try:
        assert server._proc is not None
        server_blocked, server_ignored = (int(mask, 16) for mask in _signal_state(server._proc.pid))
        bit = {sig: 1 << (sig - 1) for sig in signal.Signals}
        assert server_blocked & bit[signal.SIGUSR1] and server_ignored & bit[signal.SIGINT]  # the premise
        code = "import signal, time; print(signal.getsignal(signal.SIGINT), flush=True); time.sleep(60)"
        proc = server.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert proc.stdout is not None
        handler = proc.stdout.readline()
        assert handler == f"{signal.default_int_handler}\n", (handler, _signal_state(proc.pid))
        # A Python started from a terminal blocks nothing and ignores SIGPIPE and SIGXFSZ only, of the
        # signals a program can set: glibc keeps 32 and 33 for itself (signal.valid_signals() skips
        # them), and once in about seven runs the child showed 32 ignored, out of Python's reach.
        settable = sum(bit[sig] for sig in signal.valid_signals() if sig in bit)
        child_blocked, child_ignored = (int(mask, 16) & settable for mask in _signal_state(proc.pid))
        assert (child_blocked, child_ignored) == (0, bit[signal.SIGPIPE] | bit[signal.SIGXFSZ])
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == -signal.SIGINT and "KeyboardInterrupt" in err
    finally:
        if proc is not None and proc.returncode is None:  # failed: no child sleeps on once its server is gone
            proc.kill()
        server.close()


def test_a_limit_holds_in_the_child_only_and_stdin_is_read() -> None:
    code = "import resource, sys; print(resource.getrlimit(resource.RLIMIT_NOFILE)[0], sys.stdin.read().upper())"
    done = warm.run([sys.executable, "-c", code], input="case", capture_output=True, text=True,
                    rlimits={resource.RLIMIT_NOFILE: (200, 200)})  # fmt: skip
    assert done.stdout.split() == ["200", "CASE"]
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] != 200


def test_a_script_and_a_module_run_as_main(tmp_path: Path) -> None:
    script = tmp_path / "job.py"
    script.write_text("import sys\nprint(__name__, sys.argv[1:], sys.path[0])\n")
    done = warm.run([sys.executable, str(script), "x"], capture_output=True, text=True)
    assert done.stdout.split() == ["__main__", "['x']", str(tmp_path)]
    help_ = warm.run([sys.executable, "-m", "courtroom.cli", "--help"], capture_output=True, text=True)
    assert help_.returncode == 0 and "Usage" in help_.stdout


def test_children_start_warm() -> None:
    # What a child finds imported when it starts: the point of the fork server.
    code = "import sys; print(all(m in sys.modules for m in ('dspy', 'litellm', 'optuna', 'courtroom.cli._main')))"
    assert warm.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "True"
