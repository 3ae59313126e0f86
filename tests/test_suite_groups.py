"""The suite's own contract: under ``make test``'s ``-n N --dist loadgroup``, the tests of one
service (the embedded model, PostgreSQL) run in one worker, so each service starts once.

It broke silently twice: xdist reads the groups into node ids in its own collection hook, so ours
must run first, and pytest 9.2's structured node ids ignore that rewrite (pytest-xdist#1386).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

pytest.importorskip("xdist")

TESTS = Path(__file__).resolve().parent


def make_test_args() -> list[str]:
    """``make test``'s pytest arguments (the Makefile's ``PYTEST_ARGS``), workers included."""
    makefile = (TESTS.parent / "Makefile").read_text()
    line = next(x for x in makefile.splitlines() if x.startswith("PYTEST_ARGS"))
    args = line.split(":=", 1)[1].split()
    assert "--dist" in args and "loadgroup" in args, args
    return args


def test_the_tests_of_one_service_run_in_one_worker(tmp_path: Path) -> None:
    shutil.copy(TESTS / "conftest.py", tmp_path / "conftest.py")
    shutil.copy(TESTS / "warm.py", tmp_path / "warm.py")  # the conftest imports it
    log = tmp_path / "workers.log"
    (tmp_path / "test_grouped.py").write_text(
        textwrap.dedent(
            f"""
            import os, time, pytest

            @pytest.mark.local_model
            @pytest.mark.parametrize("i", range(6))
            def test_embedded(i):
                time.sleep(0.2)  # long enough that a free worker would take the next one
                with open({str(log)!r}, "a") as f:
                    f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")

            @pytest.mark.parametrize("i", range(6))
            def test_other(i):
                time.sleep(0.2)
            """
        )
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    local_model: x\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *make_test_args(), "."],
        capture_output=True, text=True, timeout=300, cwd=tmp_path, env={**os.environ}, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = Counter(log.read_text().split())
    assert sum(workers.values()) == 6 and len(workers) == 1, workers  # before: 3 on gw0, 3 on gw1


def test_a_killed_runs_memory_folder_is_removed_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /dev/shm is memory and outlives a run: folders of killed runs (hundreds of MB each) stayed
    # there until the machine restarted.
    import conftest

    monkeypatch.setattr(conftest, "_MEMORY", tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folders = {name: tmp_path / f"courtroom-tests-{name}" for name in ("dead", "alive", "unsigned")}
    for folder in folders.values():
        folder.mkdir()
    (folders["dead"] / conftest._OWNER).write_text(dead.stdout.strip())
    (folders["alive"] / conftest._OWNER).write_text(str(os.getpid()))
    conftest._remove_orphaned_folders()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["courtroom-tests-alive", "courtroom-tests-unsigned"]
