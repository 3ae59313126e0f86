"""Isolation (DSPy settings, cache and run folders in temporary directories) and the suite's services.

The services are started once per test session (per xdist worker): the embedded model server
(:func:`local_lm`), PostgreSQL (:func:`postgres`) and Chromium (:func:`chromium`). Their system
packages are installed by ``make test``'s set-up step (``make system``), never from inside a test.
"""

from __future__ import annotations

import glob
import importlib.util
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import warm

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Anything that still reached DSPy's default cache would share ~/.dspy_cache with every other run.
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))
# One llama.cpp thread for the embedded model in the suite. ggml's threads spin while they wait for
# each other, and beside the other busy workers the second thread's spinning costs a core of CPU the
# rest of the suite needs, for little gain (the suite is CPU-bound on 2 cores). Users keep the default.
os.environ.setdefault("COURTROOM_LOCAL_THREADS", "1")
# LiteLLM points tiktoken at the encodings it ships by setting $TIKTOKEN_CACHE_DIR when it is
# imported. Set here first, so a test that restores the environment after a first import of LiteLLM
# (test_bench's benches) cannot drop it: tiktoken would then try to download the encodings offline,
# and the fake server's token counts fail with HTTP 500 for every later test of that worker.
_litellm = importlib.util.find_spec("litellm")
if _litellm is not None and _litellm.origin:
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(Path(_litellm.origin).parent / "litellm_core_utils" / "tokenizers"))
# Retries wait 0.05 s x 2^attempt, not 1 s: the fault tests check what is retried and counted, not
# the backoff (users keep 1 s; a test of the wait itself sets its own).
os.environ.setdefault("COURTROOM_RETRY_WAIT", "0.05")


_MEMORY = Path("/dev/shm")


@pytest.hookimpl(tryfirst=True)  # before pytest's tmp_path factory reads --basetemp
def pytest_configure(config: pytest.Config) -> None:
    """Temporary folders in memory (``/dev/shm``) unless ``--basetemp`` says otherwise.

    Every test gets a cache of its own (16 SQLite files, :func:`_isolated_cache`) and most write
    run folders: on this machine's disk creating the cache alone takes 0.1 s idle and up to 0.8 s
    under load, 0.02 s in memory. The folder is new for each run (two runs never share one) and is
    removed at the end; xdist's workers get a folder each inside it.
    """
    if config.option.basetemp or hasattr(config, "workerinput"):
        return
    try:
        room = shutil.disk_usage(_MEMORY).free
    except OSError:
        return
    if room > 2 << 30 and os.access(_MEMORY, os.W_OK):
        _remove_orphaned_folders()
        config.option.basetemp = tempfile.mkdtemp(prefix="courtroom-tests-", dir=_MEMORY)
        (Path(config.option.basetemp) / _OWNER).write_text(str(os.getpid()))
        config._courtroom_basetemp = config.option.basetemp  # type: ignore[attr-defined]


_OWNER = ".owner-pid"
"""The pid of the run that made a folder in ``/dev/shm``, written into it."""


def _remove_orphaned_folders() -> None:
    """Remove the memory folders of earlier runs whose process is gone (a run killed before its end).

    ``/dev/shm`` is memory, and it outlives the run: a killed run's folder (hundreds of MB) stayed
    until the machine restarted, and the runs after it, CI's among them, had that much less.
    """
    for folder in _MEMORY.glob("courtroom-tests-*"):
        try:
            pid = int((folder / _OWNER).read_text())
        except (OSError, ValueError):
            continue  # not ours to judge (a run of an older suite, or one just starting)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except PermissionError:
            pass  # alive, another user's


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist starts the workers: they inherit the environment
def pytest_sessionstart(session: pytest.Session) -> None:
    """Under pytest-xdist, the run's controller starts one fork server (:mod:`warm`) for every worker."""
    config = session.config
    if not hasattr(config, "workerinput") and getattr(config.option, "numprocesses", None):
        warm.share()


def pytest_unconfigure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):
        warm.close()
    folder = getattr(config, "_courtroom_basetemp", None)
    if folder:
        shutil.rmtree(folder, ignore_errors=True)


def _cpu_seconds() -> float:
    import resource

    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Iterator[None]:
    item._cpu_start = _cpu_seconds()  # type: ignore[attr-defined]
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Each test's CPU seconds (its process's threads and the children it waited for, set-up and
    call) as the ``cpu`` property of the JUnit report that ``make test-times`` reads. Tear-down is
    left out: the last test of a worker would get the session's services (the fork server, whose
    warm children's CPU reaches the worker only when it is reaped, the embedded model, PostgreSQL),
    which count in the run's total only."""
    start = getattr(item, "_cpu_start", None)
    if call.when == "call" and start is not None:
        item.user_properties.append(("cpu", round(_cpu_seconds() - start, 3)))
    yield


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook reads the groups into the node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the tests of one service run in one worker.

    The embedded model is CPU-bound (two servers on two cores would only slow each other) and
    PostgreSQL is started once per worker: grouping keeps each to one start.
    """
    for item in items:
        names = getattr(item, "fixturenames", ())
        if item.get_closest_marker("local_model") or "local_lm" in names:
            item.add_marker(pytest.mark.xdist_group("embedded-model"))
        elif "postgres" in names or "storage" in names:
            item.add_marker(pytest.mark.xdist_group("postgres"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # One cache per test: a test that kills a process mid-write cannot leave a damaged cache for the next.
    # mkdtemp, not mktemp: pytest numbers a mktemp folder by listing every folder made before it,
    # which grows with the session (two listings a test, one of them here).
    cache = Path(tempfile.mkdtemp(prefix="cache-", dir=tmp_path_factory.getbasetemp()))
    os.environ["COURTROOM_CACHE_DIR"] = str(cache)
    from courtroom.models.cache import configure_cache

    configure_cache(cache)


@pytest.fixture(autouse=True)
def _fresh_command() -> None:
    """Each test starts as a new command does: no stop requested, no flags or folders noted by the last.

    (A library call notes its ``--api-base`` for resume hints and keeps it; a test calling the runner
    directly next read it into its own hint.)
    """
    from courtroom import _stop

    _stop.reset()


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def local_lm():
    """A dspy.LM on the real embedded llama.cpp server (started once per test session)."""
    from courtroom.models.local import local_lm as make

    return make(max_tokens=64, temperature=0.0)


BOOL_LABELS = ["True", "False"]


@pytest.fixture
def cold_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """An empty LM cache for one test (runs reconfigure the cache from $COURTROOM_CACHE_DIR)."""
    path = tmp_path_factory.mktemp("cold-cache")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(path))
    from courtroom.models.cache import configure_cache

    configure_cache(path)
    return path


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """``courtroom ARGS`` in this process (fast): returncode, stdout and stderr, like a subprocess.

    ``COLUMNS`` is 200 for the whole test (a test may set its own before calling), unlike
    :func:`courtroom_cli`, which sets it for each call.
    """
    import types

    from courtroom.cli import main

    monkeypatch.setenv("COLUMNS", "200")

    def call(*args: str) -> types.SimpleNamespace:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=out, stderr=err)

    return call


@pytest.fixture
def courtroom_cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch):
    """``courtroom ARGS`` run in this process, like a subprocess: returncode, stdout and stderr as text.

    ``env`` is added to the environment for the call (and restored after), ``cwd`` is the working
    folder. In process, a call costs no interpreter start-up; tests that need a real process
    (signals, two writers, orphan servers, first-call races) use :func:`courtroom_process`.
    """
    import types

    from courtroom.cli import main

    def call(
        *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 0
    ) -> types.SimpleNamespace:
        capsys.readouterr()
        with monkeypatch.context() as m:
            m.setenv("COLUMNS", "200")
            for key, value in (env or {}).items():
                m.setenv(key, value)
            if cwd is not None:
                m.chdir(cwd)
            code = main(list(args))
        out, err = capsys.readouterr()
        return types.SimpleNamespace(returncode=code, stdout=out, stderr=err, args=list(args))

    return call


@pytest.fixture(scope="session", autouse=True)
def _warm_children() -> Iterator[None]:
    """The fork server of :mod:`warm` (real child processes that start warm) ends with the session."""
    yield
    warm.close()


@pytest.fixture
def courtroom_process():
    """``courtroom ARGS`` as a real (warm) child process (``env`` added to this process's), captured as text."""
    import sys

    def call(
        *args: str, env: dict[str, str] | None = None, cwd: str | Path | None = None, timeout: float = 300
    ) -> subprocess.CompletedProcess[str]:
        return warm.run(
            [sys.executable, "-m", "courtroom.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=cwd,
            env=os.environ | {"COLUMNS": "200"} | (env or {}),
        )

    return call


class FakeClock:
    """The clock run, repeat-group and comparison folders read their one-second stamps from."""

    def __init__(self) -> None:
        import datetime

        self.now = datetime.datetime(2026, 1, 2, 3, 4, 5)
        clock = self

        class _Datetime(datetime.datetime):
            @classmethod
            def now(cls, tz: object = None) -> datetime.datetime:  # type: ignore[override]
                return clock.now

        self.module = type("FakeDatetimeModule", (), {"datetime": _Datetime})

    def advance(self, seconds: float) -> None:
        """Move the clock on (what a test would otherwise sleep for)."""
        import datetime

        self.now += datetime.timedelta(seconds=seconds)


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> FakeClock:
    """A clock the test moves on by hand: stamps differ without sleeping for them."""
    import courtroom.comparison.compare
    import courtroom.runner.repeats
    import courtroom.runner.runs

    fake = FakeClock()
    for module in (courtroom.runner.runs, courtroom.runner.repeats, courtroom.comparison.compare):
        monkeypatch.setattr(module, "_dt", fake.module)
    return fake


def _installable(package: str) -> None:
    """Fail (it could be installed: the set-up step was skipped) or skip (it cannot be, here)."""
    if os.geteuid() == 0 and shutil.which("apt-get"):
        pytest.fail(f"{package} is not installed: run `make system` (make test runs it first)")
    pytest.skip(f"{package} is not installed and cannot be installed here (needs root and apt-get)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_postgres(args: list[str]) -> list[str]:
    if os.geteuid() == 0:  # initdb refuses to run as root
        return ["runuser", "-u", "postgres", "--", *args]
    return args


@pytest.fixture(scope="session")
def postgres() -> Iterator[str]:
    """A PostgreSQL server on loopback with an empty ``courtroom`` database, for the whole session.

    Each test names its own study, so they share the database without seeing each other's.
    """
    pytest.importorskip("psycopg2", reason="pip install 'courtroom[postgres]'")
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        _installable("postgresql")
    bin_dir = Path(found[-1]).parent
    # Not under pytest's tmp dir: that one is private to root and the server runs as postgres.
    root = Path(tempfile.mkdtemp(prefix="courtroom-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = _free_port()
    initdb = [str(bin_dir / "initdb"), "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"]
    subprocess.run(_as_postgres(initdb), check=True, capture_output=True)
    start = [str(bin_dir / "pg_ctl"), "-D", str(data), "-l", str(root / "log"), "-w"]
    start += ["-o", f"-p {port} -h 127.0.0.1 -k {sock}", "start"]
    subprocess.run(_as_postgres(start), check=True, capture_output=True)
    try:
        createdb = [str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(port), "-U", "postgres", "courtroom"]
        subprocess.run(_as_postgres(createdb), check=True, capture_output=True)
        yield f"postgresql+psycopg2://postgres@127.0.0.1:{port}/courtroom"
    finally:
        stop = [str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]
        subprocess.run(_as_postgres(stop), capture_output=True)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless-capable chromium (installed by ``make system``)."""
    found = next((p for p in (shutil.which(n) for n in ("chromium", "chromium-browser")) if p), None)
    if not found:
        _installable("chromium")
    return str(found)
