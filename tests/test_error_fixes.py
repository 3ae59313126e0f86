"""Errors that name the real fix, and commands that take what Python takes (issue 51, item 4).

A misspelled ``--dataset`` path is a missing file, not missing fields; suggested labels with
spaces paste as one argument; ``compare`` takes its frameworks by position as ``compare("a,b")``
does; ``show --example`` honours ``--format json|csv``. In process, against the fake server.
"""

from __future__ import annotations

import io
import json
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from courtroom.testing import FakeServer

LABELS = ["Plaintiff wins", "Defendant wins"]


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer() as s:
        yield s


def _csv(path: Path) -> Path:
    pd.DataFrame([{"q": f"case {i}: the tenant sued", "a": LABELS[i % 2]} for i in range(10)]).to_csv(path, index=False)
    return path


def test_a_misspelled_dataset_path_is_no_such_file(cli: Callable[..., Any], tmp_path: Path) -> None:
    _csv(tmp_path / "claims.csv")
    done = cli("run", "zero-shot", "--dataset", str(tmp_path / "cliams.csv"))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "no such file" in said and "--text-field" not in said, said
    assert f"did you mean {tmp_path / 'claims.csv'}?" in said


def test_suggested_labels_paste_as_given(cli: Callable[..., Any], server: FakeServer, tmp_path: Path) -> None:
    data = _csv(tmp_path / "claims.csv")
    done = cli("run", "zero-shot", "--dataset", str(data))
    said = " ".join(done.stderr.split())
    assert done.returncode == 2 and "--labels 'Defendant wins,Plaintiff wins'" in said, said
    suggested = shlex.split(
        said.split("e.g. ", 1)[1].split(" (or ", 1)[0]
    )  # what a user pastes, as the shell splits it
    pasted = cli("run", "zero-shot", "--dataset", str(data), *suggested, "--limit", "2", "--lm", "openai/m",
                 "--api-base", server.url, "--out", str(tmp_path / "runs"))  # fmt: skip
    assert pasted.returncode == 0, pasted.stderr


def test_compare_takes_frameworks_by_position(cli: Callable[..., Any], server: FakeServer, tmp_path: Path) -> None:
    common = ["--limit", "2", "--lm", "openai/m", "--api-base", server.url, "--out", str(tmp_path), "--format", "csv"]
    done = cli("compare", "zero-shot,cot", *common)
    assert done.returncode == 0, done.stderr
    assert {"zero-shot", "cot"} <= set(pd.read_csv(io.StringIO(done.stdout), index_col=0).index)
    twice = cli("compare", "zero-shot,cot", "--frameworks", "cot", *common)
    assert twice.returncode == 2 and "give them once" in twice.stderr


@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_show_one_example_honours_format(fmt: str, cli: Callable[..., Any], server: FakeServer, tmp_path: Path) -> None:
    done = cli("run", "jot", "--set", "n_loops=1", "--limit", "2", "--lm", "openai/m", "--api-base", server.url,
               "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = tmp_path.iterdir()
    shown = cli("show", str(run_dir), "--example", "0", "--format", fmt)
    assert shown.returncode == 0, shown.stderr
    if fmt == "json":
        record = json.loads(shown.stdout)
        assert record["i"] == 0 and {"id", "gold", "prediction", "input"} <= set(record)
        assert {t["role"] for t in record["transcript"]} == {"lawyer", "prosecutor", "judge"}
    else:
        turns = pd.read_csv(io.StringIO(shown.stdout))
        assert set(turns["i"]) == {0} and {"lawyer", "prosecutor", "judge"} <= set(turns["role"])
