"""Every error line fits 80 columns (issue 51, item 3): wrapped at spaces, a path or URL never cut.

The CLI prints its errors in one place (``courtroom.cli._main`` through
:func:`courtroom.reporting.tables.to_stderr`); this drives many of its error paths at
``COLUMNS=80`` and reads every stderr line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _output import unwrapped

BAD = [
    "run nosuch", "run jot --task nosuch", "compile jot --optimizer simba", "compile jot --optimizer nosuch",
    "run jot --limit 0", "run jot --train 5", "study jot --keep-better", "run jot --dataset missing-file.csv",
    "run jot --dataset f.csv", "compare jot,cot --frameworks zero-shot,cot", "compare jot,nosuch", "compare",
    "score nosuch.json", "show /nonexistent/run", "runs /nonexistent/folder", "run jot --api-base notaurl",
    "run jot --role badrole", "run jot --role witness=openai/x", "run jot --set nonsense=1",
    "compile jot --opt foo=1", "compile jot --optimizer mipro --opt num_trials=3", "run jot --split-sizes x",
    "predict nosuch.json", "run jot --config missing.yaml", "run jot --config bad.yaml", "run jot --format xml",
    "run jot --max-cost -1", "run jot --lm nosuchprovider/x", "run jot --text-field x", "run jot --task caselaw",
    "compile cot --train-limit 0", "study jot --space n_loops", "run jot --preset nosuch",
    "run jot --concurrency 0", "run jot --lm openai/gpt-4o-mini",
    "compile jot --optimizer labeled --opt k=50 --lm openai/x --api-base http://127.0.0.1:9/v1",
]  # fmt: skip
"""Bad input of every kind: unknown names, values out of range, missing files and fields, keys, settings."""


def fits(line: str, width: int = 80) -> bool:
    """Within ``width``, or past it only by a path or URL that would not fit any line (never cut)."""
    if len(line) <= width:
        return True
    long = max(line.split(), key=len)
    return "/" in long and len(line) - len(long) < width // 2


@pytest.mark.parametrize("command", BAD)
def test_every_error_line_fits_80_columns(
    command: str, cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.chdir(tmp_path)
    labels = ["Plaintiff wins", "Defendant wins"]
    pd.DataFrame([{"q": f"case {i}", "a": labels[i % 2]} for i in range(10)]).to_csv("f.csv", index=False)
    Path("bad.yaml").write_text("limit: [1\n")
    done = cli(*command.split())
    assert done.returncode == 2, done.stderr
    lines = done.stderr.splitlines()
    assert all(fits(line) for line in lines), "\n".join(lines)
    errors = [line for line in unwrapped(done.stderr) if line.startswith("error: ")]
    assert len(errors) == 1, "one error, wrapped: its other lines are indented"


def test_a_long_path_overflows_whole_and_the_rest_wraps(
    cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    deep = tmp_path / ("a-folder-name-long-enough-to-pass-eighty-columns-on-its-own" * 2) / "program.json"
    done = cli("score", str(deep))
    assert done.returncode == 2
    assert any(str(deep) in line for line in done.stderr.splitlines()), "the path is whole on one line"
    assert all(fits(line) for line in done.stderr.splitlines()), done.stderr


def test_frameworks_wraps_descriptions_at_80_columns(cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch) -> None:
    from courtroom.programs import FRAMEWORKS

    monkeypatch.setenv("COLUMNS", "80")
    done = cli("frameworks")
    assert done.returncode == 0 and all(len(line) <= 80 for line in done.stdout.splitlines()), done.stdout
    assert "…" not in done.stdout  # wrapped, not cut
    cells = " ".join(line.split("│")[-2] for line in done.stdout.splitlines() if line.count("│") == 4)
    for cls in FRAMEWORKS.values():
        assert " ".join(cls.summary.split()) in " ".join(cells.split()), cls.summary


def test_runs_never_cuts_a_folder(cli: Callable[..., Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from courtroom.testing import FakeServer

    deep = tmp_path / "a-folder-with-a-rather-long-name-for-its-experiments" / "runs"
    with FakeServer() as server:
        done = cli("run", "zero-shot", "--limit", "2", "--lm", "openai/m", "--api-base", server.url, "--out", str(deep))
    assert done.returncode == 0, done.stderr
    (run_dir,) = deep.iterdir()
    monkeypatch.setenv("COLUMNS", "80")
    listed = cli("runs", str(deep))
    lines = listed.stdout.splitlines()
    assert all(fits(line) for line in lines), listed.stdout
    assert any(run_dir.name in line.split() for line in lines) and str(deep) in listed.stdout, listed.stdout
