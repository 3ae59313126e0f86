"""compare(): one table over frameworks, Markdown/CSV, analyses and plots; the CLI on a fake server."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from courtroom.cli import main
from courtroom.comparison.compare import compare, split_knobs
from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.models.lms import RoleLMs
from courtroom.testing import FakeServer, oracle_lm


def _oracle(tag: str) -> RoleLMs:
    data = load_task("web_of_lies", limit=8, seed=1)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(
        gold,
        ["Yes", "No"],
        accuracy={"default": 0.7, "judge": 0.8, "clerk": 0.6},
        cache=True,
        model=f"fake/{tag}-{time.time_ns()}",
    )
    return RoleLMs({"default": lm})


def test_compare_with_repeats_writes_table_analyses_and_plots(tmp_path: Path) -> None:
    result = compare(
        "web_of_lies",
        ["zero-shot", "courtroom-llm", "jot"],
        limit=8,
        seed=1,
        repeats=3,
        knobs={"jot.n_loops": 1, "k_precedents": 0, "n_judges": 3},
        out=tmp_path,
        ambiguity_k=3,
        lms=_oracle("cmp"),
        matched_baselines=False,
    )
    table = result.table
    assert list(table.index) == ["zero-shot", "courtroom-llm", "jot"]
    for column in (
        "accuracy",
        "macro_f1",
        "failures",
        "calls",
        "tokens",
        "cost",
        "wall_seconds",
        "accuracy_sd",
        "accuracy_ci_low",
        "accuracy_ci_high",
    ):
        assert column in table.columns
    assert table.loc["zero-shot", "calls"] == 8 and table.loc["jot", "calls"] == 8 * 3
    assert table.loc["courtroom-llm", "calls"] == 8 * (1 + 2 + 3)
    assert (table["repeats"] == 3).all()
    csv = pd.read_csv(result.out_dir / "table.csv", index_col="framework")
    assert csv.loc["jot", "accuracy"] == pytest.approx(table.loc["jot", "accuracy"])
    md = (result.out_dir / "table.md").read_text()
    assert "| framework | accuracy (95% CI) | macro-F1 |" in md and md.count("\n|") >= 4
    analyses = json.loads((result.out_dir / "analyses.json").read_text())
    assert analyses["courtroom-llm"]["agreement"]["n"] == 8
    assert analyses["courtroom-llm"]["ph_transitions"]["n"] == 8
    assert len(analyses["courtroom-llm"]["ambiguity"]) == 4 and len(analyses["jot"]["repeat_accuracies"]) == 3
    assert {"repeats", "agreement", "ambiguity-courtroom-llm"} <= set(result.plots)
    for path in result.plots.values():
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # The hearing runs once per case for the whole comparison, and splits every row by it.
    votes = json.loads((result.out_dir / "ambiguity.json").read_text())["votes"]
    assert len(votes) == 8 and all(len(v) == 3 for v in votes.values())
    rows = ("zero-shot", "courtroom-llm", "jot")
    sizes = {f: [(p["rule"], p["part"], p["n"]) for p in analyses[f]["ambiguity"]] for f in rows}
    assert sizes["zero-shot"] == sizes["courtroom-llm"] == sizes["jot"]
    assert sum(n for rule, _, n in sizes["jot"] if rule.startswith("D_rate")) == 8
    parts = {(p["rule"], p["part"]): p for p in analyses["courtroom-llm"]["ambiguity"]}
    assert all("agreement" in p for p in parts.values() if p["n"])  # judge agreement split the same way
    assert "ambiguity-zero-shot" in result.plots


def test_rows_and_presets_compare_named_configurations(tmp_path: Path) -> None:
    rows = {
        "jot-1-loop": ("jot", {"n_loops": 1}, None),
        "jot-2-loops": ("jot", {"n_loops": 2}, "jot-paper"),
    }
    result = compare(
        "web_of_lies",
        list(rows),
        rows=rows,
        limit=4,
        seed=1,
        out=tmp_path,
        lms=_oracle("rows"),
        matched_baselines=False,
    )
    assert list(result.table.index) == ["jot-1-loop", "jot-2-loops"]
    assert result.table.loc["jot-1-loop", "calls"] == 4 * 3 and result.table.loc["jot-2-loops", "calls"] == 4 * 6
    meta = json.loads((tmp_path.glob("*/jot-2-loops/meta.json").__next__()).read_text())
    assert meta["preset"] == "jot-paper" and meta["framework_config"]["n_loops"] == 2
    result = compare(
        "web_of_lies", ["jot", "zero-shot"], presets=["jot-paper"], limit=2, seed=1, out=tmp_path, lms=_oracle("p")
    )
    assert result.table.loc["jot", "calls"] == 2 * 9  # the preset's 3 loops
    with pytest.raises(ConfigError, match="not compared"):
        compare("web_of_lies", ["zero-shot"], presets=["jot-paper"], limit=2, out=tmp_path, lms=_oracle("x"))


def test_split_knobs() -> None:
    assert split_knobs({"jot.n_loops": 2, "n_judges": 5}, ["jot", "courtroom-llm"]) == {
        "jot": {"n_loops": 2},
        "courtroom-llm": {"n_judges": 5},
    }
    with pytest.raises(ConfigError, match="no compared framework has that knob"):
        split_knobs({"n_rounds": 2}, ["jot"])
    with pytest.raises(ConfigError, match="not one of the compared frameworks"):
        split_knobs({"cot.k": 2}, ["jot"])


def test_compare_cli_over_http(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with FakeServer() as server:
        code = main(
            [
                "compare",
                "--task",
                "navigate",
                "--frameworks",
                "zero-shot,cot,jot",
                "--limit",
                "4",
                "--set",
                "jot.n_loops=1",
                "--lm",
                f"openai/cmp-{time.time_ns()}",
                "--api-base",
                server.url,
                "--out",
                str(tmp_path),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    # The key columns at the terminal's width (the whole table: --format md, or table.md in the folder).
    assert "accuracy (95% CI)" in out and re.search(r"^ jot ", out, re.M) and "comparison folder:" in out
    (folder,) = tmp_path.iterdir()
    assert {"table.md", "table.csv", "comparison.json", "analyses.json"} <= {p.name for p in folder.iterdir()}
    assert main(["compare", "--frameworks", "jot,nope", "--lm", "openai/x"]) == 2
    assert "unknown framework 'nope'" in capsys.readouterr().err


def test_run_prints_the_ambiguity_split_and_compare_prints_analyses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with FakeServer() as server:
        code = main(
            [
                "run",
                "courtroom-llm",
                "--task",
                "web_of_lies",
                "--limit",
                "4",
                "--set",
                "k_precedents=0",
                "--lm",
                f"openai/amb-{time.time_ns()}",
                "--api-base",
                server.url,
                "--ambiguity-k",
                "3",
                "--out",
                str(tmp_path / "runs"),
            ]
        )
        out, err = capsys.readouterr()
        assert code == 0, err
        assert "ambiguous vs normal" in out and "| D_rate <= 0.5 |" in out and "| top label changed |" in out
        (run_dir,) = (tmp_path / "runs").iterdir()
        votes = json.loads((run_dir / "ambiguity.json").read_text())["votes"]
        assert len(votes) == 4 and all(len(v) == 3 for v in votes.values())
        code = main(
            [
                "compare",
                "--task",
                "web_of_lies",
                "--frameworks",
                "courtroom-llm",
                "--limit",
                "3",
                "--set",
                "k_precedents=0",
                "--lm",
                f"openai/amb2-{time.time_ns()}",
                "--api-base",
                server.url,
                "--out",
                str(tmp_path / "cmp"),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "courtroom-llm: judge agreement (parallel): unanimous" in out
    assert "courtroom-llm: preliminary hearing -> verdict: wrong->correct" in out


def test_plots_of_a_perfect_score_never_get_negative_error_bars(tmp_path: Path) -> None:
    """A design scoring 1.00 whose interval's end reads back a hair below it: matplotlib refused negative yerr."""
    from courtroom.reporting import plots

    accuracy = pd.Series({"jot": 1.0, "cot": 0.5})
    low, high = pd.Series({"jot": 0.9, "cot": 0.2}), pd.Series({"jot": 0.99999999, "cot": 0.8})
    path = plots.accuracy_bars(accuracy, tmp_path / "a.png", [accuracy - low, high - accuracy], "t")
    assert path.is_file()
    cost = pd.Series({"jot": 2.0, "cot": 1.0})
    assert plots.frontier(cost, accuracy, low, high, tmp_path / "f.png", xlabel="calls").is_file()
