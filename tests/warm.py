"""Child processes that start warm: forked from a server that has already imported courtroom and DSPy.

A cold ``python -m courtroom.cli`` pays ~3.5 s of CPU importing DSPy, LiteLLM and Optuna before
it does anything. Tests whose point is the process boundary (signals, exit codes, two writers,
orphans) need a real process, not that import: :class:`ForkServer` starts one single-threaded
Python that imports them once, and forks a child per request. The child is a real process with its
own pid, file descriptors, signal handlers, environment and working folder, running the command
as ``python ARGS`` would (``-m MODULE``, ``-c CODE`` or a script), and exits as Python does
(uncaught exception: traceback and 1; ``SystemExit``: its code; Ctrl-C: killed by SIGINT). Its
signals are those of a Python started from a terminal, whatever the server inherited.

What stays as it was at the server's start is what the preloaded modules read when imported (for
example ``$LITELLM_LOCAL_MODEL_COST_MAP``): tests of first calls and of start-up, whose races and
costs live in those imports, start cold processes (``subprocess``) instead. The tests of several
workers on one study start them warm: forked, they start within a millisecond of each other, the
closest race their storage and their claims on configurations can meet.

A test writes ``warm.Popen([sys.executable, "-m", "courtroom.cli", ...], ...)`` or ``warm.run(...)``
where it would write ``subprocess``'s; each test process (xdist worker) starts one server on first
use, and the conftest stops it at the session's end.
"""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PRELOAD = (
    "dspy",
    "litellm",
    "optuna",
    "optuna.storages",
    "optuna.importance",
    "optuna.visualization",
    "courtroom.*",
    "pandas",
    "scipy.stats",
    "sklearn.linear_model",
    "sklearn.metrics",
    "sklearn.feature_extraction.text",
    "sklearn.ensemble",
    "sqlalchemy.orm",
    "sqlalchemy.dialects.sqlite",
    "alembic.command",
    "alembic.migration",
    "diskcache",
    "matplotlib.pyplot",
    "httpcore",
    "h11",
    "h2",
    "pyarrow",
)
"""What the server imports before it forks (``courtroom.*``: every module of the package): what a
command imports on its way (a study's storage, plots and report, a comparison's statistics) would
otherwise cost each child seconds again."""


def _preload(names: tuple[str, ...]) -> None:
    import importlib
    import pkgutil

    for name in names:
        if not name.endswith(".*"):
            importlib.import_module(name)
            continue
        package = importlib.import_module(name[:-2])
        for found in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
            if not found.name.endswith("__main__"):  # a package's __main__ runs its command
                importlib.import_module(found.name)


_HEADER = 1 << 20  # a request's JSON (argv, environment, folder) fits in one message


# --- the server -------------------------------------------------------------------------------


def _serve(path: str) -> dict[str, Any]:
    """Fork a child per request; report each child's exit status on its connection. Returns in a child."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path + ".new")
    listener.listen(64)
    os.rename(path + ".new", path)  # the socket appears at ``path`` only once it takes connections
    parent = os.getppid()
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ)
    children: dict[int, socket.socket] = {}
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        for _ in selector.select(timeout=0.02):
            conn, _ = listener.accept()
            message, fds, _, _ = socket.recv_fds(conn, _HEADER, 3)
            request = json.loads(message)
            pid = os.fork()
            if pid == 0:  # the child: nothing of the server's survives but the imports
                _fresh_signals()
                selector.close()
                listener.close()
                for other in children.values():
                    other.close()
                conn.close()
                for target, fd in enumerate(fds):
                    os.dup2(fd, target)
                    os.close(fd)
                return request
            for fd in fds:  # the child holds them now: the test must see EOF when the child exits
                os.close(fd)
            conn.sendall(f"{pid}\n".encode())
            children[pid] = conn
        while children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            conn = children.pop(pid, None)
            if conn is not None:
                try:
                    conn.sendall(f"{os.waitstatus_to_exitcode(status)}\n".encode())
                except OSError:
                    pass  # the test stopped waiting for it
                conn.close()
        if os.getppid() != parent:  # the test process is gone
            os._exit(0)


def _fresh_signals() -> None:
    """Give this (forked) process the signal state of a Python started from a terminal.

    A forked child inherits its server's mask and dispositions, and the server inherits them from
    whatever started the test run: a run started in the background of a script (``make test &``,
    without job control) ignores SIGINT, and Python then installs no KeyboardInterrupt handler, so
    every warm child slept through its Ctrl-C; a thread's blocked signals would pass on the same
    way. A fresh Python blocks nothing, leaves every signal at its default but the three it sets
    at start-up: SIGINT raises KeyboardInterrupt, SIGPIPE and SIGXFSZ are ignored.
    """
    python_sets = {signal.SIGINT: signal.default_int_handler, signal.SIGPIPE: signal.SIG_IGN,
                   signal.SIGXFSZ: signal.SIG_IGN}  # fmt: skip
    for sig in signal.valid_signals():
        if sig not in (signal.SIGKILL, signal.SIGSTOP):  # neither can be caught nor ignored
            signal.signal(sig, python_sets.get(sig, signal.SIG_DFL))
    signal.pthread_sigmask(signal.SIG_SETMASK, ())  # last: a signal unblocked finds its handler set


def _as_python(request: dict[str, Any]) -> None:
    """Run ``python ARGV`` in this (forked) process, then exit as Python would, without its teardown.

    Python's exit joins the threads left running, runs the ``atexit`` functions and flushes the
    standard streams; then it tears down every module, which for ~3,700 modules costs seconds of CPU
    and shows nothing to a test. The child does the first three and then ``os._exit``.
    """
    import atexit
    import threading
    import traceback

    try:
        _run(request)
        code = 0
    except SystemExit as stop:
        code = _exit_code(stop.code)
    except KeyboardInterrupt:
        traceback.print_exc()
        code = -signal.SIGINT
    except BaseException:
        traceback.print_exc()
        code = 1
    threading._shutdown()  # type: ignore[attr-defined]  # what Py_FinalizeEx calls first
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    if code == -signal.SIGINT:  # as Python does since 3.8: die of the signal, so the parent sees it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code)


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def _run(request: dict[str, Any]) -> None:
    """``python ARGV``: sys.argv, sys.path and __main__ as Python sets them."""
    import resource
    import runpy

    os.chdir(request["cwd"])
    for which, (soft, hard) in request["rlimits"]:
        resource.setrlimit(which, (soft, hard))
    os.environ.clear()
    os.environ.update(request["env"])
    if "numpy" in sys.modules:  # random is reseeded by its own fork hook; numpy's global state is not
        sys.modules["numpy"].random.seed()
    argv = request["argv"]
    if argv[0] == "-m":
        sys.argv = [argv[1], *argv[2:]]
        sys.path[0] = os.getcwd()
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    elif argv[0] == "-c":
        sys.argv = ["-c", *argv[2:]]
        sys.path[0] = ""
        exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__", "__builtins__": __builtins__})
    else:
        script = os.path.abspath(argv[0])
        sys.argv = list(argv)
        sys.path[0] = os.path.dirname(script)
        runpy.run_path(script, run_name="__main__")


# --- the test side ----------------------------------------------------------------------------


_SHARED: ForkServer | None = None

SHARED_SOCKET = "COURTROOM_TEST_FORK_SERVER"
"""Environment variable: the socket of a fork server the whole run shares (pytest-xdist's workers).

Started by the run's controller (:func:`share`) as the workers start, it preloads once for all of
them, where each worker would start and preload its own: ~6 s of CPU and ~0.5 GB each."""


def server() -> ForkServer:
    """The fork server: the run's shared one, else this process's (started on first use; the conftest closes it)."""
    global _SHARED
    if _SHARED is None:
        shared = os.environ.get(SHARED_SOCKET)
        _SHARED = ForkServer(attach=shared) if shared else ForkServer()
    return _SHARED


def share() -> ForkServer:
    """Start this run's shared fork server without waiting for it, and name it to the processes started after."""
    global _SHARED
    _SHARED = ForkServer()
    threading.Thread(target=_SHARED._start, daemon=True).start()
    os.environ[SHARED_SOCKET] = _SHARED.path
    return _SHARED


def Popen(args: list[str], **options: Any) -> WarmProcess:  # noqa: N802 - subprocess's name
    """``subprocess.Popen([sys.executable, ...])``, forked warm: see :meth:`ForkServer.Popen`."""
    return server().Popen(args, **options)


def run(args: list[str], **options: Any) -> subprocess.CompletedProcess[Any]:
    """``subprocess.run([sys.executable, ...])``, forked warm: see :meth:`ForkServer.run`."""
    return server().run(args, **options)


def close() -> None:
    global _SHARED
    if _SHARED is not None:
        _SHARED.close()
        _SHARED = None


class ForkServer:
    """One warm Python per test process (started on first use); :meth:`Popen` and :meth:`run` fork from it."""

    def __init__(self, preload: tuple[str, ...] = PRELOAD, *, attach: str | None = None) -> None:
        """A server of this process's, or with ``attach``, the one listening there (another process's)."""
        self.preload = preload
        self._proc: subprocess.Popen[str] | None = None
        self._attached = attach is not None
        self._folder = os.path.dirname(attach) if attach else tempfile.mkdtemp(prefix="courtroom-warm-")
        self.path = attach or os.path.join(self._folder, "fork.sock")
        self._lock = threading.Lock()

    def _start(self) -> None:
        if self._attached:  # started by another process: wait until it listens (its preload takes seconds)
            deadline = time.monotonic() + 300
            while not os.path.exists(self.path):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"the shared fork server never listened at {self.path}")
                time.sleep(0.05)
            return
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return
            if os.path.exists(self.path):
                os.unlink(self.path)
            code = (
                f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); import warm\n"
                f"warm._preload({tuple(self.preload)!r})\n"
                f"warm._as_python(warm._serve({self.path!r}))\n"
            )
            self._proc = subprocess.Popen(
                [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True
            )
            assert self._proc.stdout is not None
            if self._proc.stdout.readline().strip() != "ready":
                raise RuntimeError(f"the fork server did not start (exit {self._proc.wait()})")

    def Popen(  # noqa: N802 - subprocess's name, so a test reads the same either way
        self,
        args: list[str],
        *,
        stdin: int | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
        text: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        rlimits: dict[int, tuple[int, int]] | None = None,
    ) -> WarmProcess:
        """Like ``subprocess.Popen([sys.executable, ...])``: ``args[0]`` must be ``sys.executable``.

        ``rlimits`` (``{resource.RLIMIT_NOFILE: (128, 128)}``) are set in the child before it runs,
        where ``subprocess`` would take a ``preexec_fn``.
        """
        if args[0] != sys.executable:
            raise ValueError(f"a warm child runs Python only: {args[0]!r} is not {sys.executable!r}")
        self._start()
        return WarmProcess(self, list(args), stdin, stdout, stderr, text, env, cwd, rlimits or {})

    def run(
        self,
        args: list[str],
        *,
        input: str | bytes | None = None,
        capture_output: bool = False,
        text: bool = False,
        timeout: float | None = None,
        check: bool = False,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
        stdout: int | None = None,
        stderr: int | None = None,
        rlimits: dict[int, tuple[int, int]] | None = None,
    ) -> subprocess.CompletedProcess[Any]:
        """Like ``subprocess.run([sys.executable, ...])``."""
        if capture_output:
            stdout = stderr = subprocess.PIPE
        stdin = subprocess.PIPE if input is not None else None
        proc = self.Popen(args, stdin=stdin, stdout=stdout, stderr=stderr, text=text, env=env, cwd=cwd, rlimits=rlimits)
        try:
            out, err = proc.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            raise
        done = subprocess.CompletedProcess(args, proc.returncode, out, err)
        if check:
            done.check_returncode()
        return done

    def close(self) -> None:
        if self._attached:  # its owner stops it
            return
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
        if os.path.exists(self.path):
            os.unlink(self.path)
        os.rmdir(self._folder)


class WarmProcess:
    """A forked child, driven like ``subprocess.Popen``: pid, poll, wait, communicate, signals, pipes."""

    def __init__(
        self,
        server: ForkServer,
        args: list[str],
        stdin: int | None,
        stdout: int | None,
        stderr: int | None,
        text: bool,
        env: dict[str, str] | None,
        cwd: str | Path | None,
        rlimits: dict[int, tuple[int, int]],
    ) -> None:
        self.args = args
        self.returncode: int | None = None
        ends: list[int] = []  # the child's ends of its three standard streams
        mine: list[int | None] = []
        for fd, spec, writing in ((0, stdin, False), (1, stdout, True), (2, stderr, True)):
            if spec == subprocess.PIPE:
                read, write = os.pipe()
                ends.append(read if not writing else write)
                mine.append(write if not writing else read)
            elif spec == subprocess.DEVNULL:
                ends.append(os.open(os.devnull, os.O_RDWR))
                mine.append(None)
            elif spec == subprocess.STDOUT and fd == 2:
                ends.append(os.dup(ends[1]))
                mine.append(None)
            elif spec is None:
                ends.append(os.dup(fd))
                mine.append(None)
            else:
                ends.append(os.dup(spec if isinstance(spec, int) else spec.fileno()))
                mine.append(None)
        request = {"argv": args[1:], "env": dict(os.environ if env is None else env), "cwd": str(cwd or os.getcwd())}
        request["rlimits"] = [[which, list(pair)] for which, pair in rlimits.items()]
        self._conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            self._conn.connect(server.path)
            socket.send_fds(self._conn, [json.dumps(request).encode()], ends)
        finally:
            for fd in ends:
                os.close(fd)
        self._buffer = b""
        self._readers: dict[str, tuple[threading.Thread, list[Any]]] | None = None  # communicate's
        self.pid = int(self._reply(None) or "-1")

        def wrap(fd: int | None, mode: str) -> Any:
            return None if fd is None else os.fdopen(fd, mode + ("" if text else "b"))

        self.stdin = wrap(mine[0], "w")
        self.stdout = wrap(mine[1], "r")
        self.stderr = wrap(mine[2], "r")

    def _reply(self, timeout: float | None) -> str | None:
        """The server's next line (the pid, then the exit status); None if none came within ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            poller = select.poll()  # not select(): a worker may hold more than 1,024 files
            poller.register(self._conn, select.POLLIN)
            if not poller.poll(None if left is None else left * 1000):
                return None
            chunk = self._conn.recv(64)
            if not chunk:
                raise RuntimeError(f"the fork server closed the connection of {self.args[1:]}")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return line.decode()

    def poll(self) -> int | None:
        if self.returncode is None:
            line = self._reply(0)
            if line is not None:
                self.returncode = int(line)
                self._conn.close()
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            line = self._reply(timeout)
            if line is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self.returncode = int(line)
            self._conn.close()
        return self.returncode

    def communicate(self, input: str | bytes | None = None, timeout: float | None = None) -> tuple[Any, Any]:
        """Write ``input``, read stdout and stderr to their end, wait: as ``Popen.communicate``.

        After a timeout, call it again as ``subprocess``'s: the readers the first call started go
        on, so what the child writes meanwhile (stacks dumped on a signal) is not lost to a
        second reader.
        """
        if self._readers is None:
            self._readers = {}
            for name, stream in (("out", self.stdout), ("err", self.stderr)):
                if stream is not None:
                    got: list[Any] = []
                    thread = threading.Thread(target=lambda s=stream, g=got: g.append(s.read()), daemon=True)
                    thread.start()
                    self._readers[name] = (thread, got)
            if self.stdin is not None:
                if input:
                    try:
                        self.stdin.write(input)
                    except BrokenPipeError:
                        pass
                try:
                    self.stdin.close()
                except BrokenPipeError:
                    pass
        deadline = None if timeout is None else time.monotonic() + timeout
        for thread, _ in self._readers.values():
            thread.join(None if deadline is None else max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                raise subprocess.TimeoutExpired(self.args, timeout)
        self.wait(None if deadline is None else max(0.01, deadline - time.monotonic()))
        for stream in (self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        out = self._readers["out"][1][0] if "out" in self._readers else None
        err = self._readers["err"][1][0] if "err" in self._readers else None
        return out, err

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def __enter__(self) -> WarmProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        for stream in (self.stdin, self.stdout, self.stderr):
            if stream is not None:
                stream.close()
        self.wait()
