"""One Python function per command: the command calls it, and it writes what the command writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import courtroom

COMMANDS = ("run", "compare", "compile", "study", "report", "runs")


def test_top_level_functions_are_the_api_functions() -> None:
    import courtroom.api

    for name in COMMANDS:
        assert getattr(courtroom, name) is getattr(courtroom.api, name), name
    from courtroom.saving import load_program

    assert courtroom.load is load_program


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("run", ["run", "zero-shot", "--limit", "2"]),
        ("compare", ["compare", "--frameworks", "zero-shot,cot", "--limit", "2"]),
        (
            "compile",
            [
                "compile",
                "zero-shot",
                "--optimizer",
                "labeled",
                "--opt",
                "k=1",
                "--train-limit",
                "2",
                "--dev-limit",
                "2",
                "--test-limit",
                "0",
            ],
        ),
        (
            "study",
            [
                "study",
                "jot",
                "--space",
                "n_loops=1",
                "--trials",
                "1",
                "--dev-limit",
                "2",
                "--storage",
                "sqlite:///s.db",
            ],
        ),
        ("report", ["report", "RUN"]),
        ("runs", ["runs"]),
    ],
)
def test_each_command_calls_its_function(name: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    import courtroom.api
    from courtroom.cli import main
    from courtroom.testing import FakeServer

    calls: list[str] = []
    original = getattr(courtroom.api, name)

    def spy(*a: Any, **k: Any) -> Any:
        calls.append(name)
        return original(*a, **k)

    monkeypatch.setattr(courtroom.api, name, spy)
    with FakeServer() as server:
        if name == "report":
            run_dir = courtroom.run("zero-shot", limit=2, lm="openai/m", api_base=server.url, progress=False).run_dir
            args = ["report", str(run_dir)]
        extra = ["--lm", "openai/m", "--api-base", server.url] if name not in ("report", "runs") else []
        assert main([*args, *extra]) == 0
    assert calls == [name]


def test_python_functions_write_what_the_commands_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        models = {"lm": "openai/m", "api_base": server.url}
        outcome = courtroom.study(
            "jot",
            trials=2,
            dev=2,
            train=2,
            space={"n_loops": "1"},
            storage=f"sqlite:///{tmp_path}/s.db",
            export_best=tmp_path / "best.json",
            **models,
        )
        err = capsys.readouterr().err
        err = err.replace("\n  ", " ")  # a progress line cut at the width goes on indented: read it whole
        # Progress shows from Python too (plain lines when stderr is not a terminal), with LM calls.
        assert re.search(r"study jot-boolean_expressions: .*2/2 trials, \d+ LM calls", err), err
        # ... and the tokens the trials sent, as their user attributes record them.
        tokens = sum(t.user_attrs.get("tokens", 0) for t in outcome.study.trials)  # a repeated configuration sent none
        assert tokens > 0 and re.search(rf"LM calls( \(\d+ sent\))?, {tokens:,} tokens", err), err
        assert (Path("studies") / "jot-boolean_expressions" / "trials.csv").is_file()
        assert outcome.report_dir == Path("studies") / "jot-boolean_expressions"
        # Two configurations ran; a trial that repeated one is in the table too, marked duplicate_of.
        assert isinstance(outcome.table, pd.DataFrame) and len(distinct_rows(outcome.table)) == 2
        assert (tmp_path / "best.json").is_file()

        result = courtroom.compile(
            config=tmp_path / "best.json",
            optimizer="labeled",
            settings={"k": 1},
            train=2,
            dev=2,
            test_limit=0,
            api_base=server.url,
            out=tmp_path / "p.json",
            progress=False,
        )
        assert result.path == tmp_path / "p.json" and result.path.is_file()
        assert capsys.readouterr().err == ""  # progress=False draws nothing

        comparison = courtroom.compare("zero-shot,cot", limit=2, progress=False, matched_baselines=False, **models)
        assert list(comparison.table.index) == ["zero-shot", "cot"] and "accuracy" in comparison.table
        assert (comparison.out_dir / "table.csv").is_file()
        run = courtroom.run("zero-shot", limit=2, progress=False, **models)
        assert (run.run_dir / "summary.json").is_file()
        page = courtroom.report(run.run_dir, tmp_path / "r.html")
        assert page.is_file()
    listed = courtroom.runs()
    assert list(listed["path"])[:2] == [str(run.run_dir), str(comparison.out_dir)]


def test_no_documented_name_lives_in_a_private_module() -> None:
    root = Path(__file__).resolve().parents[1]
    readme = "\n".join(p.read_text() for p in [root / "README.md", *sorted((root / "docs").rglob("*.md"))])
    private = re.findall(r"courtroom(?:\.\w+)*\._\w+", readme)
    assert not private, private
    for name in COMMANDS:
        assert f"courtroom.{name}(" in readme, name


def distinct_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The trials that ran their configuration (a trial that repeated one carries ``duplicate_of``)."""
    return table[table["duplicate_of"].isna()] if "duplicate_of" in table else table
