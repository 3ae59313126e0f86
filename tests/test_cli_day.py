"""The command line a researcher meets: --version, runs, folder names, hints, show, prices, offline."""

from __future__ import annotations

import io
import json
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import warm

from courtroom.testing import FakeServer, fault_prompts


def subprocess_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 120) -> Any:
    return warm.run(
        [sys.executable, "-m", "courtroom.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def test_version() -> None:
    import courtroom

    done = subprocess_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"courtroom {courtroom.__version__}"


def test_runs_lists_runs_and_comparisons_newest_first(
    tmp_path: Path, cli: Callable[..., Any], clock: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    with FakeServer() as server:
        common = ["--lm", "openai/m-one", "--api-base", server.url, "--limit", "3"]
        assert cli("run", "zero-shot", "--out", str(tmp_path / "runs"), *common).returncode == 0
        clock.advance(2)  # folder names and `created` have one-second resolution
        assert cli("compare", "--frameworks", "zero-shot,cot", "--out", str(tmp_path / "cmp"), *common).returncode == 0
        clock.advance(2)
        assert (
            cli("run", "cot", "--out", str(tmp_path / "runs"), *common, "--role", "classifier=openai/m-two").returncode
            == 0
        )
    monkeypatch.setenv("COLUMNS", "400")  # every column beside the full tmp paths (long under xdist)
    done = cli("runs", str(tmp_path / "runs"), str(tmp_path / "cmp"))
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stdout.splitlines() if line.lstrip().startswith(str(tmp_path))]
    assert len(lines) == 3, done.stdout
    assert "cot" in lines[0] and "m-two" in lines[0]
    assert "_compare_" in lines[1] and "zero-shot,cot" in lines[1]
    assert "zero-shot" in lines[2] and "openai/m-one" in lines[2] and " 3 " in lines[2]
    # At 80 columns (here through a pipe) the table fits: each folder whole on its line, the columns that fit.
    piped = warm.run([sys.executable, "-m", "courtroom.cli", "runs", "runs"], capture_output=True, text=True,
                           cwd=tmp_path, env={**os.environ, "COLUMNS": "80"}, timeout=120)  # fmt: skip
    rows = [line for line in piped.stdout.splitlines() if line.lstrip().startswith("runs/20")]
    assert len(rows) == 2 and all(" 3 " in row for row in rows), piped.stdout
    assert max(len(line) for line in piped.stdout.splitlines()) <= 80, piped.stdout
    (tmp_path / "nothing").mkdir()
    empty = cli("runs", str(tmp_path / "nothing"))
    assert empty.returncode == 0 and "no runs" in empty.stdout
    missing = cli("runs", str(tmp_path / "no-such-folder"))  # a typo is bad input, not an empty list
    assert missing.returncode == 2 and "no such folder" in missing.stderr


def test_custom_dataset_folder_names_have_no_colon(tmp_path: Path, cli: Callable[..., Any]) -> None:
    rows = [{"q": f"is {i} even?", "a": "yes" if i % 2 == 0 else "no"} for i in range(20)]
    pd.DataFrame(rows).to_csv(tmp_path / "my.csv", index=False)
    with FakeServer() as server:
        done = cli(
            "run",
            "zero-shot",
            "--dataset",
            str(tmp_path / "my.csv"),
            "--text-field",
            "q",
            "--label-field",
            "a",
            "--labels",
            "yes,no",
            "--lm",
            "openai/m",
            "--api-base",
            server.url,
            "--limit",
            "2",
            "--out",
            str(tmp_path / "runs"),
        )
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    assert ":" not in folder.name and "custom-my" in folder.name


def _run_with_failures(tmp_path: Path, server: FakeServer, cli: Callable[..., Any]) -> Path:
    done = cli(
        "run",
        "zero-shot",
        "--limit",
        "8",
        "--lm",
        "openai/m",
        "--api-base",
        server.url,
        "--out",
        str(tmp_path / "runs"),
        "--fail-on-error",
        "1",  # the failures are the point here: the run itself succeeds
    )
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["failures"] > 0
    return run_dir


def test_resume_of_a_finished_run_with_failures_names_retry_failed(tmp_path: Path, cli: Callable[..., Any]) -> None:
    with FakeServer(fault_for=fault_prompts(0.3, seed=3)) as server:
        run_dir = _run_with_failures(tmp_path, server, cli)
        done = cli("run", "--resume", str(run_dir), "--api-base", server.url, "--fail-on-error", "1")
    assert done.returncode == 0, done.stderr
    assert f"courtroom run --resume {run_dir} --retry-failed" in done.stdout


def test_show_prints_runs_table_and_examples_by_position_or_id(tmp_path: Path, cli: Callable[..., Any]) -> None:
    with FakeServer() as server:
        done = cli(
            "run",
            "zero-shot",
            "--limit",
            "4",
            "--lm",
            "openai/m",
            "--api-base",
            server.url,
            "--out",
            str(tmp_path / "runs"),
        )
    (run_dir,) = (tmp_path / "runs").iterdir()
    shown = cli("show", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    # The same rich summary table as `run`: every metric row of run's table appears in show's.
    run_rows = [line for line in done.stdout.splitlines() if line.startswith("│")]
    assert run_rows and all(row in shown.stdout for row in run_rows), (done.stdout, shown.stdout)
    assert "input order" in shown.stdout
    meta = json.loads((run_dir / "meta.json").read_text())
    second = meta["example_ids"][1]
    by_position, by_id = cli("show", str(run_dir), "--example", "1"), cli("show", str(run_dir), "--example", second)
    assert by_position.returncode == by_id.returncode == 0
    assert f"id {second}" in by_position.stdout and "position in input order" in by_position.stdout
    assert by_position.stdout == by_id.stdout
    bad = cli("show", str(run_dir), "--example", "9")
    assert bad.returncode == 2 and "position 0..3" in bad.stderr and "input order" in bad.stderr


def test_show_numbers_an_unfinished_runs_examples_by_input_position(tmp_path: Path, cli: Callable[..., Any]) -> None:
    with FakeServer() as server:
        done = cli("run", "zero-shot", "--limit", "6", "--lm", "openai/m", "--api-base", server.url,
                   "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    ids = json.loads((run_dir / "meta.json").read_text())["example_ids"]
    # Stopped with three of six done, finished out of input order (as under concurrency).
    lines = {json.loads(line)["id"]: line for line in (run_dir / "results.jsonl").read_text().splitlines()}
    (run_dir / "results.jsonl").write_text("".join(lines[ids[n]] + "\n" for n in (4, 1, 3)))
    (run_dir / "summary.json").unlink()

    shown = cli("show", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    rows = [line.split("│")[1:3] for line in shown.stdout.splitlines() if line.count("│") > 2]
    assert [(i.strip(), id_.strip()) for i, id_ in rows] == [(str(n), ids[n]) for n in (1, 3, 4)], shown.stdout
    assert "3 of 6 finished" in shown.stdout
    listed = json.loads(cli("show", str(run_dir), "--format", "json").stdout)["examples"]
    assert [(e["i"], e["id"]) for e in listed] == [(n, ids[n]) for n in (1, 3, 4)]
    csv_rows = pd.read_csv(io.StringIO(cli("show", str(run_dir), "--format", "csv").stdout), dtype={"id": str})
    assert list(csv_rows["i"]) == [1, 3, 4] and list(csv_rows["id"]) == [ids[n] for n in (1, 3, 4)]

    one = cli("show", str(run_dir), "--example", "3")
    assert one.returncode == 0, one.stderr
    assert f"example 3 (position in input order; id {ids[3]})" in one.stdout
    assert one.stdout == cli("show", str(run_dir), "--example", ids[3]).stdout
    pending = cli("show", str(run_dir), "--example", "2")
    said = " ".join(pending.stderr.split())
    assert pending.returncode == 2 and f"id {ids[2]}" in said and "not finished" in said
    assert f"courtroom run --resume {run_dir}" in " ".join(pending.stderr.split())
    beyond = cli("show", str(run_dir), "--example", "6")
    assert beyond.returncode == 2 and "position 0..5" in beyond.stderr

    # The HTML report numbers them the same way.
    assert cli("report", str(run_dir), "--out", str(tmp_path / "r.html")).returncode == 0
    page = (tmp_path / "r.html").read_text()
    numbered = re.findall(r"<summary>#(\d+) ([^ ]+) —", page)
    assert numbered == [(str(n), ids[n]) for n in (1, 3, 4)], numbered


def test_prices_take_the_names_typed_and_warn_about_strays(
    tmp_path: Path, cli: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    # LiteLLM knows gpt-4o-mini's price; the user's table, keyed as typed, wins.
    (tmp_path / "p.json").write_text(json.dumps({"openai/gpt-4o-mini": [1000, 1000], "nope/model": [1, 1]}))
    with FakeServer() as server:
        done = cli(
            "run",
            "zero-shot",
            "--limit",
            "2",
            "--lm",
            "openai/gpt-4o-mini",
            "--api-base",
            server.url,
            "--prices",
            str(tmp_path / "p.json"),
            "--out",
            str(tmp_path / "runs"),
        )
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["cost"] == pytest.approx(summary["tokens"] * 1000 / 1e6)
    assert "no model of this run is named nope/model" in caplog.text


def test_price_for_local_applies_to_the_embedded_model() -> None:
    from courtroom.eval.metrics import price_aliases, user_prices
    from courtroom.models.lms import RoleLMs
    from courtroom.testing import scripted_lm

    lm = scripted_lm({}, model="openai/smollm2-server-alias")
    lm.saved_name = "local"  # as the embedded model's LM class names itself
    prices = price_aliases({"local": [1.0, 2.0]}, RoleLMs({"default": lm}))
    assert user_prices({"openai/smollm2-server-alias": {}}, prices) == {"openai/smollm2-server-alias": (1.0, 2.0)}


def test_the_embedded_model_costs_nothing_unless_priced(tmp_path: Path) -> None:
    # Its run summary once said cost n/a, while its dry run said $0.
    from courtroom.models.lms import RoleLMs
    from courtroom.runner.runs import RunConfig, run

    with FakeServer() as server:
        lm = server.lm("openai/smollm2-server-alias")
        lm.saved_name = "local"  # as the embedded model's LM class names itself
        config = RunConfig("zero-shot", "boolean_expressions", limit=2, out=str(tmp_path))
        free = run(config, lms=RoleLMs({"default": lm}))
        priced = run(
            RunConfig(**{**vars(config), "seed": 1, "prices": {"local": [1000, 1000]}}), lms=RoleLMs({"default": lm})
        )
    assert free.summary["sent"] == 2 and free.summary["cost"] == 0.0
    assert priced.summary["cost"] == pytest.approx(priced.summary["tokens"] * 1000 / 1e6)


def test_offline_hub_task_fails_in_seconds_with_the_fix(tmp_path: Path) -> None:
    env = {"HF_ENDPOINT": "http://127.0.0.1:9", "HF_HOME": str(tmp_path / "hf")}
    done = subprocess_cli("run", "zero-shot", "--task", "rte", "--limit", "2", "--lm", "openai/m", env=env)
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "--data PATH" in line and "--data generate" not in line  # rte has no generator
    # The probe found no Hub, so the Hub libraries went offline: no half-minute of retries per request
    # (this message is only written on that path). Seconds are not asserted: a loaded machine stretches them.
    assert "not reachable" in line


def test_the_calls_line_names_the_requests_that_prepared_the_program(tmp_path: Path, cli: Callable[..., Any]) -> None:
    # CoT bootstraps its demos on the train split: those requests are sent, but they are not the
    # examples' calls, so "3 calls, 6 sent" must say where the other 3 went (run and show alike).
    with FakeServer() as server:
        args = ["--lm", "openai/m", "--api-base", server.url, "--limit", "3", "--out", str(tmp_path / "runs")]
        done = cli("run", "cot", *args)
        assert done.returncode == 0, done.stderr
        summary = json.loads(next((tmp_path / "runs").glob("*/summary.json")).read_text())
        training = summary["training_sent"]
        assert training > 0 and summary["sent"] == summary["calls"] + training == server.counts["requests"]
        shown = cli("show", str(next((tmp_path / "runs").iterdir())))
        examples_tokens = summary["tokens"] - summary["training_tokens"]
        assert summary["training_tokens"] > 0 and examples_tokens > 0
        for out in (done.stdout, shown.stdout):
            # each count says what it counts, and its parts add up to it
            assert f"{summary['calls']} = {summary['calls']} sent + 0 from the cache" in out, out
            assert (
                f"{summary['sent']} = {summary['calls']} for those calls + {training} preparing on train "
                f"({summary['training_tokens']:,} tokens)"
            ) in out, out
            # the tokens row names the examples' part, the figure the progress line shows
            assert f"{summary['tokens']:,} ({examples_tokens:,} on the examples)" in out, out
        assert f"{examples_tokens:,} tokens" in done.stderr, done.stderr


def test_the_summary_counts_and_times_add_up_with_retries(cli: Callable[..., Any], tmp_path: Path) -> None:
    # A flaky server: some calls take retries. "LM calls 4 (7 sent, 0 cached)" said nothing of the 3.
    with FakeServer(faults={"500": 0.3}, seed=3) as server:
        args = ["--lm", "openai/m", "--api-base", server.url, "--limit", "4", "--out", str(tmp_path / "runs")]
        done = cli("run", "jot", "--loops", "1", *args)
        assert done.returncode == 0, done.stderr
        summary = json.loads(next((tmp_path / "runs").glob("*/summary.json")).read_text())
        retries = summary["sent"] - summary["calls"]
        assert summary["sent"] == server.counts["requests"] and retries > 0, summary
        assert f"{summary['sent']} = {summary['calls']} for those calls + {retries} retr" in done.stdout
        timing = summary["timing"]
        assert timing["start_up"] > 0 and timing["setup"] > 0 and timing["examples"] > 0
        parts = [round(timing[k], 1) for k in ("start_up", "setup", "examples")]
        match = re.search(
            r"command time +│ +([\d.]+) s = ([\d.]+) start-up \+ ([\d.]+) set-up \+ ([\d.]+) examples", done.stdout
        )
        assert match, done.stdout
        assert [float(x) for x in match.groups()[1:]] == parts
        assert float(match[1]) == pytest.approx(sum(parts))
    # From Python no command started: no start-up part, and the rest still adds up.
    import courtroom

    with FakeServer() as server:
        outcome = courtroom.run("zero-shot", lm="openai/m", api_base=server.url, limit=2, out=str(tmp_path / "py"))
    assert outcome.summary["timing"]["start_up"] is None
    shown = cli("show", str(outcome.run_dir))
    assert re.search(r"command time +│ +[\d.]+ s = [\d.]+ set-up \+ [\d.]+ examples", shown.stdout), shown.stdout
