"""Output that fits a person: tables at the terminal's width, ``--format`` for programs, help at full width."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from courtroom.testing import FakeServer

KEYS = ("accuracy (95% CI)", "calls/ex", "cost", "matched vote")


def _table_block(stdout: str) -> list[str]:
    """The lines of the printed comparison table: from its title to the hint under it."""
    lines = stdout.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith("all columns: --format"))
    return lines[:end]


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer() as fake:
        yield fake


def _compare(courtroom_cli: Any, server: Any, out: Path, *extra: str, columns: int = 200) -> Any:
    args = ["compare", "--frameworks", "zero-shot,cot,jot", "--limit", "4", "--lm", "openai/m", "--api-base",
            server.url, "--out", str(out), *extra]  # fmt: skip
    done = courtroom_cli(*args, env={"COLUMNS": str(columns)})
    assert done.returncode == 0, done.stderr
    return done


@pytest.mark.parametrize("width", [80, 100])
def test_compare_table_fits_the_terminal_and_keeps_the_key_columns(
    width: int, tmp_path: Path, courtroom_cli: Any, server: Any
) -> None:
    done = _compare(courtroom_cli, server, tmp_path, columns=width)
    block = _table_block(done.stdout)
    assert max(len(line) for line in block) <= width, "\n".join(block)
    header = next(line for line in block if "framework" in line)
    for key in KEYS:
        assert key in header, header
    rows = {line.split()[0]: line for line in block if line.strip().startswith(("zero-shot", "cot", "jot"))}
    assert set(rows) == {"zero-shot", "cot", "jot"}, block
    assert all("[0." in row or "[1." in row for row in rows.values())  # the accuracy's interval
    assert "self-consistency k=9" in rows["jot"]  # the vote at jot's cost, on jot's row
    assert any(line.strip().startswith("self-consistency") for line in block)  # the vote rows themselves
    # The whole table is still in the folder, as CSV and Markdown.
    folder = Path(done.stdout.split("comparison folder: ")[1].split()[0])
    assert len(pd.read_csv(folder / "table.csv").columns) >= 18
    assert "McNemar p (exact)" in (folder / "table.md").read_text()


def test_compare_format_prints_the_whole_table(tmp_path: Path, courtroom_cli: Any, server: Any) -> None:
    csv_done = _compare(courtroom_cli, server, tmp_path / "a", "--format", "csv", columns=80)
    table = pd.read_csv(io.StringIO(csv_done.stdout), index_col="framework")
    assert {"zero-shot", "cot", "jot", "self-consistency k=9"} <= set(table.index)
    assert {"accuracy", "calls_per_example", "cost", "matched_vote", "mcnemar_p"} <= set(table.columns)
    assert "comparison folder:" in csv_done.stderr  # the other lines leave stdout to the table
    rows = json.loads(_compare(courtroom_cli, server, tmp_path / "b", "--format", "json").stdout)
    assert {r["framework"] for r in rows} == set(table.index) and all("accuracy" in r for r in rows)
    md = _compare(courtroom_cli, server, tmp_path / "c", "--format", "md").stdout.strip().splitlines()
    assert md[0].startswith("| framework | accuracy (95% CI) |") and md[1].startswith("|---|")
    assert len(md) == 2 + len(table) and all(line.count("|") == md[0].count("|") for line in md)


def test_run_show_runs_and_study_take_format(tmp_path: Path, courtroom_cli: Any, server: Any) -> None:
    common = ["--lm", "openai/m", "--api-base", server.url]
    done = courtroom_cli("run", "cot", "--limit", "3", *common, "--out", str(tmp_path / "runs"), "--format", "csv")
    assert done.returncode == 0, done.stderr
    summary = pd.read_csv(io.StringIO(done.stdout))
    assert len(summary) == 1 and summary.at[0, "n"] == 3 and "accuracy" in summary.columns
    folder = done.stderr.split("run folder: ")[1].split()[0]

    shown = json.loads(courtroom_cli("show", folder, "--format", "json").stdout)
    assert shown["summary"]["n"] == 3 and len(shown["examples"]) == 3
    examples = pd.read_csv(io.StringIO(courtroom_cli("show", folder, "--format", "csv").stdout))
    assert list(examples.columns) == ["i", "id", "gold", "prediction", "correct", "error"] and len(examples) == 3
    md = courtroom_cli("show", folder, "--format", "md").stdout
    assert "| metric | value |" in md and "| i | id | gold |" in md

    listed = json.loads(courtroom_cli("runs", str(tmp_path / "runs"), "--format", "json").stdout)
    assert len(listed) == 1 and listed[0]["framework"] == "cot"
    assert pd.read_csv(io.StringIO(courtroom_cli("runs", str(tmp_path / "runs"), "--format", "csv").stdout)).shape[0]

    study = courtroom_cli("study", "self-consistency", "--trials", "2", "--dev-limit", "2", *common,
                          "--storage", f"sqlite:///{tmp_path}/s.db", "--out", str(tmp_path / "study"),
                          "--format", "json")  # fmt: skip
    assert study.returncode == 0, study.stderr
    trials = json.loads(study.stdout)
    ran = [t for t in trials if t.get("duplicate_of") is None]  # a repeated configuration reuses its value
    assert len(ran) == 2 and all("state" in t for t in trials)
    assert "report:" in study.stderr

    bad = courtroom_cli("runs", str(tmp_path / "runs"), "--format", "xml")
    assert bad.returncode != 0 and "--format 'xml'" in bad.stderr

    compiled = [
        courtroom_cli("compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=1", "--train-limit", "2",
                      "--dev-limit", "2", "--test-limit", "3", *common, "-o", str(tmp_path / f"p-{fmt}.json"),
                      "--format", fmt)
        for fmt in ("json", "csv", "md")
    ]  # fmt: skip
    assert all(c.returncode == 0 for c in compiled), [c.stderr for c in compiled]
    scores = {r["scores"]: r for r in json.loads(compiled[0].stdout)}
    assert list(scores) == ["dev before", "dev after", "test before", "test after"]
    assert scores["dev before"]["n"] == scores["dev after"]["n"] == 2 and scores["test after"]["n"] == 3
    assert 0 <= scores["test after"]["accuracy"] <= 1 and 0 <= scores["test after"]["mcnemar_p"] <= 1
    assert f"program: {tmp_path / 'p-json.json'}" in compiled[0].stderr  # the other lines leave stdout
    assert "held-out cases" in compiled[0].stderr
    columns = list(pd.read_csv(io.StringIO(compiled[1].stdout)).columns)
    assert columns[:4] == ["scores", "n", "accuracy", "ci_low"] and "difference_ci_high" in columns
    assert compiled[2].stdout.startswith("| scores | n | accuracy |")


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study", "show", "runs"])
def test_every_command_that_prints_a_table_takes_format(command: str, courtroom_cli: Any) -> None:
    helped = courtroom_cli(command, "--help")
    assert helped.returncode == 0 and "--format" in helped.stdout, helped.stdout


def test_help_uses_the_terminal_width(courtroom_cli: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    wide = courtroom_cli("compare", "--help", env={"COLUMNS": "150"}).stdout.splitlines()
    assert 80 < max(len(line) for line in wide) <= 150
    # A pipe with no terminal and no COLUMNS: 100 columns, not click's 80.
    import os

    from courtroom.cli import main

    def no_terminal(fd: int = 1) -> os.terminal_size:
        raise OSError("not a terminal")

    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(os, "get_terminal_size", no_terminal)
    capsys.readouterr()
    assert main(["compare", "--help"]) == 0
    piped = capsys.readouterr().out.splitlines()
    assert 80 < max(len(line) for line in piped) <= 100


def test_help_usage_names_arguments_as_the_reference_does(courtroom_cli: Any) -> None:
    # Typer 0.29 printed `courtroom predict [OPTIONS] {program_file} [case]`.
    from courtroom.cli._reference import cli_reference

    helped = courtroom_cli("predict", "--help")
    assert helped.returncode == 0 and "Usage: courtroom predict [OPTIONS] PROGRAM_FILE [CASE]" in helped.stdout
    assert "PROGRAM_FILE" in helped.stdout.split("Arguments")[1]  # the panel names it as the usage does
    missing = courtroom_cli("predict")
    assert missing.returncode == 2 and "Missing argument 'PROGRAM_FILE'" in missing.stderr, missing.stderr
    reference = cli_reference()
    for command in ("predict", "runs", "show", "report", "compile", "run", "study", "compare", "tasks"):
        usage = next(
            line.split("Usage: ")[1].strip()
            for line in courtroom_cli(command, "--help").stdout.splitlines()
            if "Usage: " in line
        )
        assert "{" not in usage and usage.split(" [OPTIONS]")[0] == f"courtroom {command}", usage
        assert f"```text\n{usage}\n```" in reference, usage  # the reference prints the same usage line


def test_fitted_adds_columns_only_while_they_fit() -> None:
    from rich.console import Console

    from courtroom.reporting.tables import fitted

    df = pd.DataFrame({"a": ["x" * 10] * 2, "b": ["y" * 30] * 2, "c": ["z" * 30] * 2}, index=pd.Index(["r1", "r2"]))
    for width, expect in ((40, ["a"]), (70, ["a", "b"]), (120, ["a", "b", "c"])):
        table = fitted(df, ["a"], width)
        assert [c.header for c in table.columns][1:] == expect, width
        out = io.StringIO()
        Console(file=out, width=width).print(table)
        assert max(len(line) for line in out.getvalue().splitlines()) <= width


def test_fitted_measures_each_column_once_and_adds_columns_exactly_to_the_width() -> None:
    # The columns are measured alone and summed with what lies between them: the sum must be the
    # whole table's width as rich measures it, at every width, on cells of any shape.
    import random

    from rich import box
    from rich.table import Table

    from courtroom.reporting.tables import fitted, measured_width

    rng = random.Random(7)

    def text() -> str:
        word = "".join(rng.choice("abcXYZ -_/.é→😀:") for _ in range(rng.choice([0, 1, 4, 12, 40])))
        return word + rng.choice(["", "", "\nsecond line", "[bold]b[/bold]"])

    for _ in range(40):
        columns = [f"c{j}{text()[:3]}" for j in range(rng.randint(1, 6))]
        rows = rng.randint(0, 6)
        df = pd.DataFrame({c: [text() for _ in range(rows)] for c in columns}, index=[text() for _ in range(rows)])
        for cut in range(1, len(columns) + 1):
            whole = Table(box=box.SIMPLE_HEAD, pad_edge=False, collapse_padding=True)
            for name in ["", *columns[:cut]]:
                whole.add_column(name, overflow="fold")
            for i, row in zip(df.index, df[columns[:cut]].itertuples(index=False), strict=True):
                whole.add_row(str(i), *row)
            width = measured_width(whole)
            shown = [str(c.header) for c in fitted(df, columns[: cut - 1], width).columns][1:]
            assert shown[:cut] == columns[:cut], (width, shown)  # the cut-th column fits at exactly its width ...
            if cut == len(columns):
                shown = [str(c.header) for c in fitted(df, columns[: cut - 1], width - 1).columns][1:]
                assert shown == columns[: cut - 1], (width, shown)  # ... and not a column less
