"""A saved program reads data as its own task whenever ``--task`` is absent (issue 51, item 2).

``score`` and ``predict`` with ``--data FILE`` (a registered task's rows), a ``--dataset`` or an
``--input`` file of the program's own shape, and ``compile --config`` with ``--data FILE``: none of
them falls back to the default task (BIG-Bench-Hard's boolean expressions). In process, against
the loopback fake server.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from courtroom.testing import FakeServer

LABELS = ("Plaintiff wins", "Defendant wins")


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer() as s:
        yield s


def _caselaw(path: Path, first: int, n: int) -> Path:
    """CaseLaw's own rows (``text``, ``label``): no ``case`` field, not BIG-Bench-Hard's ``input``/``target``."""
    rows = [
        {"text": f"The court heard case {i} about a fence.", "label": LABELS[i % 2]} for i in range(first, first + n)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _compiled(cli: Callable[..., Any], server: FakeServer, tmp: Path, *data: str) -> Path:
    program = tmp / "program.json"
    done = cli("compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=2", *data, "--train-limit", "3",
               "--dev-limit", "2", "--test-limit", "2", "--lm", "openai/m", "--api-base", server.url,
               "-o", str(program))  # fmt: skip
    assert done.returncode == 0, done.stderr
    return program


def test_score_and_predict_read_a_file_as_the_programs_task(
    cli: Callable[..., Any], server: FakeServer, tmp_path: Path
) -> None:
    program = _compiled(
        cli, server, tmp_path, "--task", "caselaw", "--data", str(_caselaw(tmp_path / "c.jsonl", 0, 12))
    )
    held = _caselaw(tmp_path / "held.jsonl", 100, 7)
    model = ["--lm", "openai/m", "--api-base", server.url]
    done = cli("score", str(program), "--data", str(held), *model, "--out", str(tmp_path / "runs"), "--format", "json")
    assert done.returncode == 0, done.stderr
    [folder] = (tmp_path / "runs").iterdir()
    assert "_score_caselaw_" in folder.name  # not boolean_expressions
    summary = json.loads((folder / "program" / "summary.json").read_text())
    assert summary["n"] == 7, "a file other than the program's own is scored whole"
    predicted = cli("predict", str(program), "--input", str(held), *model)
    assert predicted.returncode == 0, predicted.stderr
    lines = [json.loads(x) for x in predicted.stdout.splitlines()]
    assert len(lines) == 7 and all(x["gold"] in LABELS for x in lines)  # read as CaseLaw reads it: text and label
    assert "7 case(s), 0 failed" in predicted.stderr and "right" in predicted.stderr


def test_a_dataset_of_the_programs_shape_needs_no_fields(
    cli: Callable[..., Any], server: FakeServer, tmp_path: Path
) -> None:
    rows = [{"q": f"case {i}: the tenant sued", "a": LABELS[i % 2]} for i in range(12)]
    pd.DataFrame(rows).to_csv(tmp_path / "mine.csv", index=False)
    fields = ["--text-field", "q", "--label-field", "a", "--labels", ",".join(LABELS)]
    program = _compiled(cli, server, tmp_path, "--dataset", str(tmp_path / "mine.csv"), *fields)
    other = tmp_path / "other.csv"
    pd.DataFrame([{"q": f"new case {i}", "a": LABELS[i % 2]} for i in range(5)]).to_csv(other, index=False)
    model = ["--lm", "openai/m", "--api-base", server.url]
    done = cli("score", str(program), "--dataset", str(other), *model, "--out", str(tmp_path / "runs"))
    assert done.returncode == 0, done.stderr
    [folder] = (tmp_path / "runs").iterdir()
    assert json.loads((folder / "program" / "summary.json").read_text())["n"] == 5
    predicted = cli("predict", str(program), "--input", str(other), *model)
    assert predicted.returncode == 0, predicted.stderr
    assert [json.loads(x)["gold"] for x in predicted.stdout.splitlines()] == [LABELS[i % 2] for i in range(5)]


def test_compile_config_with_data_keeps_the_recipes_task(tmp_path: Path) -> None:
    from courtroom.api._compile import with_recipe
    from courtroom.cli._options import from_flags

    held = _caselaw(tmp_path / "held.jsonl", 0, 12)
    recipe = {"kind": "courtroom-config", "framework": "zero-shot", "data": {"task": "caselaw", "source": "old.jsonl"}}
    spec = from_flags("compile", {"data": str(held)}, {"data"})
    filled, _ = with_recipe(spec, recipe)
    assert (filled.data.task, filled.data.source) == ("caselaw", str(held))
