"""A finished command ends its process without the interpreter's teardown (issue 44)."""

from __future__ import annotations

import atexit
import os
import sys
import threading
from typing import Any

import pytest

from courtroom import cli


class Left(BaseException):
    """What the patched ``os._exit`` raises: the code the process would have ended with."""


@pytest.fixture
def leaving(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Record ``atexit``'s run and ``os._exit`` instead of doing them (this is pytest's process)."""
    seen: list[Any] = []

    def exit_now(code: int) -> None:
        seen.append(("exit", code))
        raise Left(code)

    monkeypatch.setattr(os, "_exit", exit_now)
    monkeypatch.setattr(atexit, "_run_exitfuncs", lambda: seen.append("atexit"))
    return seen


def test_a_finished_command_runs_atexit_then_leaves_at_once(leaving, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["courtroom", "--version"])
    # Only this thread, as in a command's process (threads that earlier tests left are not its own).
    monkeypatch.setattr(threading, "enumerate", lambda: [threading.current_thread()])
    with pytest.raises(Left):
        cli.main()
    assert leaving == ["atexit", ("exit", 0)]
    assert "courtroom" in capsys.readouterr().out  # printed and flushed before leaving


def test_a_command_whose_thread_still_runs_exits_as_usual(leaving, monkeypatch, capsys) -> None:
    monkeypatch.setattr(sys, "argv", ["courtroom", "--version"])
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        assert cli.main() == 0
    finally:
        release.set()
        worker.join()
    assert leaving == []


def test_a_library_call_returns(leaving, capsys) -> None:
    assert cli.main(["--version"]) == 0
    assert leaving == []
