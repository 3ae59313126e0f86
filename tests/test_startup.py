"""Start-up: each command imports only what its path needs, and a Ctrl-C during start-up is one line.

No wall-clock bound is asserted (a loaded machine would break it): the modules a fresh process
imports are what decide start-up time, and they do not depend on the load. bench/startup.py
measures the seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from courtroom.cli import _names
from courtroom.testing import FakeServer

HEAVY = ("dspy", "litellm", "sklearn", "pandas", "optuna", "datasets", "numpy", "matplotlib", "mlflow")

IMPORTED = textwrap.dedent(
    """
    import json, sys
    from courtroom.cli import main
    code = main(sys.argv[1:])
    heavy = {heavy!r}
    print(json.dumps({{"code": code, "heavy": sorted(m for m in heavy if m in sys.modules)}}))
    """
).format(heavy=HEAVY)


def imported(*args: str, cwd: Path | None = None) -> dict:
    """Run ``courtroom ARGS`` in a fresh interpreter; its exit status and the heavy modules it imported."""
    done = subprocess.run(
        [sys.executable, "-c", IMPORTED, *args], capture_output=True, text=True, timeout=300, cwd=cwd, check=False
    )
    assert done.stdout.strip(), done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_cli_names_agree_with_the_registries() -> None:
    from courtroom.data.catalog import BUILTIN_TASKS
    from courtroom.data.tasks import TASKS
    from courtroom.programs import FRAMEWORKS
    from courtroom.programs.presets import PRESETS

    # The built-in entries (other tests register their own in this process: those are not the CLI's).
    assert set(_names.FRAMEWORKS) == {n for n, c in FRAMEWORKS.items() if c.__module__.startswith("courtroom.")}
    assert set(_names.PRESETS) == set(PRESETS)
    assert {t.name for t in BUILTIN_TASKS} <= set(TASKS)


@pytest.mark.parametrize(
    ("args", "code"),
    [
        (["--help"], 0),
        (["run", "--help"], 0),
        (["run", "zero-shot", "--no-such-option"], 2),
        (["run", "zero-shot", "--limit", "0"], 2),
        (["run", "no-such-framework"], 2),
        (["run", "zero-shot", "--task", "no-such-task"], 2),
        (["compare", "--frameworks", "jot,no-such-framework"], 2),
        (["run", "jot", "--preset", "no-such-preset"], 2),
        (["run", "zero-shot", "--lm", "nosuchprovider/x", "--api-base", "ftp://x"], 2),
        (["run", "zero-shot", "--track", "sqlite:///m.db", "--limit", "0"], 2),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, list) else str(v),
)
def test_help_and_bad_input_import_nothing_heavy(args: list[str], code: int) -> None:
    seen = imported(*args)
    assert seen == {"code": code, "heavy": []}


def test_a_run_on_a_server_imports_neither_litellm_nor_scikit_learn(tmp_path: Path) -> None:
    # DSPy's native engine sends the requests (courtroom.models._server_engine); the metrics count by hand.
    with FakeServer() as server:
        seen = imported(
            "run", "zero-shot", "--task", "boolean_expressions", "--limit", "1", "--lm", "openai/fake",
            "--api-base", server.url, "--out", str(tmp_path / "runs"), cwd=tmp_path,
        )  # fmt: skip
    assert seen["code"] == 0
    assert server.counts["requests"] == 1
    assert "dspy" in seen["heavy"]
    assert not {"litellm", "sklearn", "pandas", "optuna", "datasets", "matplotlib"} & set(seen["heavy"])


def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path: Path) -> None:
    # The handler is installed before the command line loads: a SIGINT while it imports (here,
    # delivered by the process to itself at the first heavy import) is one line, status 130.
    code = textwrap.dedent(
        """
        import os, signal, sys
        import builtins
        real = builtins.__import__
        def interrupting(name, *args, **kwargs):
            if name == "typer":
                builtins.__import__ = real
                os.kill(os.getpid(), signal.SIGINT)
            return real(name, *args, **kwargs)
        builtins.__import__ = interrupting
        from courtroom.cli import main
        sys.exit(main())
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, "run", "zero-shot", "--limit", "1"],
        capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ}, check=False,
    )  # fmt: skip
    assert done.returncode == 130, done.stderr
    assert done.stderr.strip().splitlines() == ["interrupted before any model call: nothing was sent"]
