"""One writer per folder: an advisory lock (``flock``) on ``FOLDER/.lock`` held while writing.

The kernel drops the lock when its process dies, however it dies (SIGKILL included), so a killed
run leaves no stale lock: the file stays, the lock does not. The file names the holder (pid,
host, start time), so a second writer fails in one line that says who holds the folder.
"""

from __future__ import annotations

import datetime as _dt
import fcntl
import os
import socket
import time
from pathlib import Path
from types import TracebackType

from courtroom.errors import CourtroomError

LOCK_NAME = ".lock"


class FolderBusy(CourtroomError):
    """Another process is writing the folder."""


class FolderLock:
    """``with FolderLock(folder, what="run folder"):`` holds the folder's lock, or raises :class:`FolderBusy`.

    ``wait`` seconds > 0 waits for the holder to finish instead of failing at once; ``lock_file``
    locks another file than ``FOLDER/.lock`` (e.g. ``study.db.lock`` next to a SQLite file).
    """

    def __init__(  # noqa: D107
        self, folder: str | Path, *, what: str = "folder", wait: float = 0.0, lock_file: str | Path | None = None
    ) -> None:
        self.folder = Path(folder)
        self.what = what
        self.wait = wait
        self.lock_file = Path(lock_file) if lock_file else self.folder / LOCK_NAME
        self._fd: int | None = None

    def acquire(self) -> FolderLock:
        """Take the lock (non-blocking unless ``wait``); write the holder's name into the file."""
        self.lock_file.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_file, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 512, 0).decode("utf-8", "replace").strip() or "another process"
                    os.close(fd)
                    raise FolderBusy(
                        f"{self.what} {self.folder} is being written by {holder}: wait for it to finish "
                        "(or stop it), then run again"
                    ) from None
                time.sleep(0.05)
        started = _dt.datetime.now().isoformat(timespec="seconds")
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"pid {os.getpid()} on {socket.gethostname()} (since {started})\n".encode(), 0)
        self._fd = fd
        return self

    def release(self) -> None:
        """Drop the lock (closing the file descriptor releases it)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FolderLock:
        return self.acquire()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
