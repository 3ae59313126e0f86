"""A user's own CSV end to end: compile, score the program on another labelled CSV, continue a study as printed.

In process, against the loopback fake server. Its answers follow each case's text ("the evidence
leans yes"), so a case is right exactly when its lean matches its label: the accuracy every
command reports is computed from the CSV itself.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.eval.metrics import wilson
from courtroom.testing import FakeServer
from courtroom.testing._fakes import answer_for_schema

FIELDS = ["--text-field", "text", "--label-field", "label", "--labels", "yes,no"]


def _lean(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Answer every label field with the lean the case states (the last one: the case itself, not a demo)."""
    leans = re.findall(r"leans (yes|no)", prompt)
    values = {}
    for name, prop in (schema.get("properties") or {}).items():
        if leans and set(prop.get("enum") or ()) == {"yes", "no"}:
            values[name] = leans[-1]
    return answer_for_schema(schema, values, "reasoning")


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer(responder=_lean) as s:
        yield s


def _csv(path: Path, n: int, word: str, wrong: int) -> Path:
    """``n`` cases; every ``wrong``-th one leans against its label."""
    rows = []
    for i in range(n):
        label = "yes" if i % 2 else "no"
        lean = ("no" if label == "yes" else "yes") if i % wrong == 0 else label
        rows.append({"text": f"{word} {i}: the evidence leans {lean}", "label": label})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _line(out: str, head: str) -> str:
    return next(x for x in out.splitlines() if x.startswith(head)).split(":", 1)[1].strip()


@pytest.fixture(scope="module")
def compiled(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    tmp = tmp_path_factory.mktemp("score")
    train = _csv(tmp / "claims.csv", 30, "claim", wrong=4)
    program = tmp / "program.json"
    code = main(
        ["compile", "zero-shot", "--dataset", str(train), *FIELDS, "--optimizer", "labeled", "--opt", "k=2",
         "--train-limit", "4", "--dev-limit", "3", "--lm", "openai/fake-m", "--api-base", server.url, "-o",
         str(program)]
    )  # fmt: skip
    assert code == 0
    return train, program


def test_score_a_compiled_program_on_a_separate_csv(
    compiled: tuple[Path, Path], server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, program = compiled
    fresh = _csv(tmp_path / "fresh.csv", 10, "new claim", wrong=3)
    capsys.readouterr()
    code = main(["score", str(program), "--dataset", str(fresh), *FIELDS, "--api-base", server.url, "--out",
                 str(tmp_path / "runs")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    right = sum(1 for i in range(10) if i % 3 != 0)  # every row of the file, the leaning-wrong ones missed
    low, high = wilson(right / 10, 10)
    assert f"program: accuracy {right / 10:.3f} [{low:.3f}, {high:.3f}] (95% Wilson interval, 10 cases)" in out
    assert "self-consistency k=1 at the same calls" in out and "McNemar" in out

    folder, run_dir = Path(_line(out, "score folder")), Path(_line(out, "run folder").split(" (")[0])
    table = pd.read_csv(folder / "table.csv", index_col=0)
    assert list(table.index) == ["program", "self-consistency k=1"]
    assert table.at["program", "matched_vote"] == "self-consistency k=1" and table.at["program", "n"] == 10
    assert table.at["program", "accuracy"] == right / 10 and table.at["program", "calls_per_example"] == 1.0
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["config"]["program"]["path"] == str(program.resolve()) and meta["task"]["split"] == "test"
    assert len(meta["example_ids"]) == 10
    # The saved program ran: its two labelled demos (training claims) are in every prompt it sent.
    served = [json.loads(m) for m in server.served]
    for_fresh = [json.dumps(m) for m in served if "new claim" in m[-1]["content"]]
    demos = [len(re.findall(r"(?<!new )claim \d+:", m)) for m in for_fresh]  # the vote row's prompts have none
    assert demos.count(2) == 10 and set(demos) <= {0, 2}

    assert main(["show", str(run_dir)]) == 0
    shown = capsys.readouterr().out
    assert "accuracy" in shown and "new-claim" not in shown
    assert main(["show", str(folder)]) == 0  # the score folder: both rows, and the show line of each
    shown = capsys.readouterr().out
    words = " ".join(shown.split())  # the line wraps at the terminal's width
    assert "self-consistency k=1" in shown and f"courtroom show {folder}/ROW, ROW one of: {run_dir.name}," in words
    report = tmp_path / "report.html"
    assert main(["report", str(folder), "-o", str(report)]) == 0
    assert "self-consistency k=1" in report.read_text()
    before = server.counts["requests"]
    assert main(["compare", "--resume", str(folder), "--api-base", server.url]) == 0  # finished: nothing is sent
    assert server.counts["requests"] == before


def test_score_without_data_takes_the_programs_held_out_split(
    compiled: tuple[Path, Path], server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, program = compiled
    capsys.readouterr()
    code = main(["score", str(program), "--limit", "4", "--no-matched-baselines", "--api-base", server.url,
                 "--out", str(tmp_path)])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    meta = json.loads((Path(_line(out, "run folder").split(" (")[0]) / "meta.json").read_text())
    dev = json.loads((program.with_name("program-dev-before") / "meta.json").read_text())["example_ids"]
    assert meta["task"]["name"] == "custom:claims" and meta["task"]["split"] == "test"
    assert len(meta["example_ids"]) == 4 and not set(meta["example_ids"]) & set(dev)


def test_predict_input_takes_the_field_options(
    compiled: tuple[Path, Path], server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, program = compiled
    fresh = _csv(tmp_path / "fresh.csv", 6, "other claim", wrong=3)
    capsys.readouterr()
    code = main(["predict", str(program), "--input", str(fresh), "--text-field", "text", "--label-field", "label",
                 "--api-base", server.url])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = [json.loads(x) for x in out.splitlines()]
    assert [x["gold"] for x in lines] == ["no", "yes"] * 3
    assert [x["correct"] for x in lines] == [i % 3 != 0 for i in range(6)]
    assert "6 case(s), 0 failed; 4 right" in err


def test_a_study_on_a_csv_continues_and_compiles_as_printed(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _csv(tmp_path / "causal.csv", 30, "cause", wrong=4)
    args = ["study", "self-consistency", "--dataset", "causal.csv", *FIELDS, "--lm", "openai/fake-m", "--api-base",
            server.url, "--trials", "2", "--dev-limit", "3", "--train-limit", "3", "--space", "k_samples=1:2",
            "--storage", "sqlite:///studies.db", "--export-best", "best.json"]  # fmt: skip
    capsys.readouterr()
    assert main([*args, "--max-calls", "12"]) != 0  # one trial fits (3 demo calls + up to 6), the second does not
    err = "\n".join(unwrapped(capsys.readouterr().err))  # the hint whole, as a user pastes it
    hint = shlex.split(err[err.index("continue with: ") + len("continue with: ") :].splitlines()[0])
    assert hint[:3] == ["courtroom", "study", "self-consistency"] and "--task" not in hint
    assert hint[hint.index("--dataset") + 1] == "causal.csv" and hint[hint.index("--labels") + 1] == "yes,no"

    assert main(hint[1:]) == 0  # as printed: the same study, continued (not refused, not a new one)
    out = capsys.readouterr().out
    compile_hint = shlex.split(out[out.index("(use: ") + len("(use: ") :].split(")")[0])
    assert compile_hint[:4] == ["courtroom", "compile", "--config", "best.json"]
    assert main(compile_hint[1:]) == 0  # no --dataset: the recipe carries the data section whole
    meta = json.loads((tmp_path / "program.json").read_text())["metadata"]["courtroom"]
    assert meta["framework"] == "self-consistency" and meta["task"]["name"] == "custom:causal"


def test_a_run_on_a_csv_stopped_by_its_budget_resumes_as_printed(
    server: FakeServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    _csv(tmp_path / "claims.csv", 20, "claim", wrong=4)
    capsys.readouterr()
    code = main(["run", "zero-shot", "--dataset", "claims.csv", *FIELDS, "--limit", "4", "--lm", "openai/fake-m",
                 "--api-base", server.url, "--max-calls", "2"])  # fmt: skip
    err = "\n".join(unwrapped(capsys.readouterr().err))
    assert code != 0 and "finish with: " in err
    hint = shlex.split(err[err.index("finish with: ") + len("finish with: ") :].splitlines()[0])
    assert hint[:3] == ["courtroom", "run", "--resume"]
    assert main(hint[1:]) == 0
    summary = json.loads((Path(hint[3]) / "summary.json").read_text())
    rows = [json.loads(x) for x in (Path(hint[3]) / "results.jsonl").read_text().splitlines()]
    assert summary["n"] == 4 and summary["accuracy"] == sum(f"leans {r['gold']}" in r["input"] for r in rows) / 4


def _parsed(command: str, argv: list[str]) -> Any:
    """The spec a command line gives, parsed as the CLI parses it (nothing runs)."""
    import typer

    from courtroom.cli._app import app
    from courtroom.cli._main import _register
    from courtroom.cli._options import OPTIONS, from_flags

    _register()
    cmd = typer.main.get_command(app).commands[command]  # type: ignore[attr-defined]
    ctx = cmd.make_context(command, list(argv))
    names = [o.name for o in OPTIONS if command in o.commands]
    given = {n for n in names if getattr(ctx.get_parameter_source(n), "name", None) == "COMMANDLINE"}
    return from_flags(command, {n: ctx.params[n] for n in names}, given, framework=ctx.params.get("framework"))


def test_the_rendered_command_describes_the_same_experiment(tmp_path: Path) -> None:
    data = _csv(tmp_path / "c.csv", 4, "claim", wrong=2)
    argv = ["jot", "--dataset", str(data), "--text-field", "text,label", "--label-field", "label", "--labels",
            "yes,no", "--split-sizes", "0.5,0.25,0.25", "--seed", "3", "--dev-limit", "5", "--lm", "openai/a",
            "--lm", "openai/b", "--role", "judge=openai/c", "--set", "n_loops=2", "--space", "temperature=0:1",
            "--preset", "jot-paper", "--compile", "labeled", "--opt", "k=2", "--cost-objective", "--objective", "f1",
            "--temperature", "0.5", "--search-temperature"]  # fmt: skip
    spec = _parsed("study", argv)
    line = spec.command_line("jot", identity=True)
    assert "--task" not in line and "custom:" not in line
    again = _parsed("study", shlex.split(line)[2:])
    assert again.identity() == spec.identity()


def test_score_from_python_on_the_in_process_fakes(compiled: tuple[Path, Path], tmp_path: Path) -> None:
    import courtroom
    from courtroom.testing import scripted_lm

    _, program = compiled
    fresh = _csv(tmp_path / "fresh.csv", 6, "py claim", wrong=3)
    lm = scripted_lm({"classifier": lambda role, turn, text: {"answer": "yes"}})  # always yes
    outcome = courtroom.score(program, dataset=str(fresh), text_field="text", label_field="label",
                              labels=["yes", "no"], out=str(tmp_path), lms=courtroom.resolve_roles(lm),
                              progress=False)  # fmt: skip
    assert isinstance(outcome, courtroom.ScoreOutcome)
    assert outcome.accuracy == 3 / 6 and outcome.interval == wilson(0.5, 6)  # the odd rows are "yes"
    assert outcome.matched_vote == "self-consistency k=1" and outcome.run_dir.parent == outcome.out_dir
    assert set(lm.engine_impl.turns) == {"classifier"}


def test_runs_lists_a_score_folder_at_the_programs_own_row(compiled: tuple[Path, Path], tmp_path: Path) -> None:
    import courtroom

    _, program = compiled

    def yes_unless_reasoning(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        # The program (no reasoning field) says yes to every case; the vote (it reasons) follows the lean.
        if "reasoning" in (schema.get("properties") or {}):
            return _lean(prompt, schema)
        return answer_for_schema(schema, {"answer": "yes"}, "yes")

    fresh = _csv(tmp_path / "fresh.csv", 10, "listed claim", wrong=3)
    with FakeServer(responder=yes_unless_reasoning) as biased:
        code = main(["score", str(program), "--dataset", str(fresh), *FIELDS, "--api-base", biased.url, "--out",
                     str(tmp_path / "runs")])  # fmt: skip
    assert code == 0
    folder = next((tmp_path / "runs").iterdir())
    table = pd.read_csv(folder / "table.csv", index_col=0)
    assert table.at["program", "accuracy"] == 0.5 and table.at["self-consistency k=1", "accuracy"] == 0.6
    listed = courtroom.runs(tmp_path / "runs")
    assert len(listed) == 1
    row = listed.iloc[0]
    assert row["kind"] == "score" and row["accuracy"] == 0.5 and row["n"] == 10  # not the vote's 0.6
    assert row["framework"] == "zero-shot (program)"


def test_a_repeated_case_text_is_scored_once(
    compiled: tuple[Path, Path],
    server: FakeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    _, program = compiled
    rows = pd.read_csv(_csv(tmp_path / "half.csv", 12, "twice claim", wrong=3))
    pd.concat([rows, rows]).to_csv(tmp_path / "doubled.csv", index=False)  # 24 rows, 12 texts
    capsys.readouterr()
    code = main(["score", str(program), "--dataset", str(tmp_path / "doubled.csv"), *FIELDS, "--no-matched-baselines",
                 "--api-base", server.url, "--out", str(tmp_path / "runs")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    said = [r.getMessage() for r in caplog.records if "repeat the text" in r.getMessage()]
    assert said == ["the test split of custom:doubled: 12 case(s) repeat the text of an earlier one: each text is "
                    "kept once (its first row), 12 case(s) used"]  # fmt: skip
    right = sum(1 for i in range(12) if i % 3 != 0)
    assert f"program: accuracy {right / 12:.3f}" in out and "12 cases)" in out
    code = main(["run", "zero-shot", "--dataset", str(tmp_path / "doubled.csv"), *FIELDS, "--split-sizes", "0,0,1",
                 "--lm", "openai/fake-m", "--api-base", server.url, "--out", str(tmp_path / "runs")])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    summary = json.loads((next(p for p in (tmp_path / "runs").iterdir() if "_score_" not in p.name) / "summary.json")
                         .read_text())  # fmt: skip
    assert summary["n"] == 12
    # predict answers every line, and its right count takes each text once.
    code = main(["predict", str(program), "--input", str(tmp_path / "doubled.csv"), "--text-field", "text",
                 "--label-field", "label", "--api-base", server.url])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    assert len(out.splitlines()) == 24
    assert (f"24 case(s), 0 failed; {right} right ({right / 12:.3f} of 12 distinct cases: 12 line(s) repeat an "
            "earlier case text;") in " ".join(err.split())  # fmt: skip


def test_score_warns_and_records_the_cases_the_program_saw(
    compiled: tuple[Path, Path],
    server: FakeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    data, program = compiled
    again = tmp_path / "again.csv"  # the program's own file under another name: scored whole, train and dev too
    again.write_bytes(data.read_bytes())
    argv = ["score", str(program), "--dataset", str(again), *FIELDS, "--api-base", server.url, "--out"]
    capsys.readouterr()
    assert main([*argv, str(tmp_path / "kept"), "--no-matched-baselines"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    said = [r.getMessage() for r in caplog.records if "program's train split" in r.getMessage()]
    assert said == [
        "the test split of custom:again: 4 case(s) are also in the program's train split and 3 in its dev split: "
        "its score on them is not a held-out score (--exclude-seen leaves them out)"
    ]
    assert "7 of the cases were seen while compiling (train 4, dev 3): not a held-out score" in out
    (folder,) = (tmp_path / "kept").iterdir()
    summary = json.loads((folder / "program" / "summary.json").read_text())
    assert summary["n"] == 30 and summary["seen"] == {"train": 4, "dev": 3, "left_out": 0}
    assert json.loads((folder / "program" / "meta.json").read_text())["task"]["seen"] == summary["seen"]

    assert main([*argv, str(tmp_path / "left"), "--exclude-seen"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "7 case(s) seen while compiling left out" in out
    (folder,) = (tmp_path / "left").iterdir()
    table = pd.read_csv(folder / "table.csv", index_col=0)
    assert list(table["n"]) == [23, 23]  # the program's row and its vote's: the same 23 unseen cases
    summary = json.loads((folder / "program" / "summary.json").read_text())
    assert summary["seen"] == {"train": 0, "dev": 0, "left_out": 7}


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--max-cost", "1"], "needs a price"),
        (["--batch", "--lm", "local"], "has no batch API"),
        (["--labels", "a,b"], "labels outside"),
    ],
)
def test_a_refused_score_leaves_no_folder(
    compiled: tuple[Path, Path],
    server: FakeServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    says: str,
) -> None:
    """Before: each left a comparison folder holding only plan.json (nothing to resume)."""
    train, program = compiled
    data = ["--dataset", str(train), "--text-field", "text", "--label-field", "label"]
    args = ["score", str(program), *data, "--api-base", server.url, "--out", str(tmp_path / "scores"), *extra]
    if "--labels" not in extra:
        args += ["--labels", "yes,no"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in err, err
    assert not (tmp_path / "scores").exists() or not any((tmp_path / "scores").iterdir())


def test_a_vote_that_failed_on_every_case_gets_no_mcnemar_line(capsys: pytest.CaptureFixture[str]) -> None:
    """score --batch whose vote's lines all failed: not "paired exact McNemar p=..." against nothing."""
    from types import SimpleNamespace

    import pandas as pd

    from courtroom.cli.score import _print_verdict
    from courtroom.comparison.significance import add_mcnemar
    from courtroom.spec import Experiment

    def results(predictions: list[str | None]) -> list[Any]:
        return [SimpleNamespace(id=str(i), prediction=p, gold="yes") for i, p in enumerate(predictions)]

    ran = {"jot": results(["yes", "yes", "no", "yes"]), "vote": results([None] * 4)}
    table = pd.DataFrame({"accuracy": [0.75, 0.0], "n": [4, 4], "calls_per_example": [3.0, 3.0]},
                         index=pd.Index(["jot", "vote"], name="framework"))  # fmt: skip
    table = add_mcnemar(table, ran, {"vote": ["jot"]})
    assert table.at["jot", "matched_vote"] == "vote" and pd.isna(table.at["jot", "mcnemar_p"])
    outcome = SimpleNamespace(table=table, row="jot", interval=(0.3, 0.95), accuracy=0.75, summary={"n": 4},
                              matched_vote="vote", run_dir="runs/x", seen=None)  # fmt: skip
    _print_verdict(outcome, Experiment.build("score"))
    out = " ".join(capsys.readouterr().out.split())
    assert "vote at the same calls failed on every case (4): no paired test against it" in out, out
    assert "McNemar" not in out


def test_a_rows_sent_and_training_sent_add_up_to_its_folders_sent(tmp_path: Path, cli: Any) -> None:
    # Issue 42: under faults the matched row said sent 42 where its summary.json said 45: the
    # training requests were left out of the row (by design) without a word of how many.
    import json

    with FakeServer() as server:
        c = ["--lm", "openai/m", "--api-base", server.url]
        compiled = cli("compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=1", "--train-limit", "2",
                       "--dev-limit", "2", "--test-limit", "0", *c, "-o", str(tmp_path / "p.json"))  # fmt: skip
        assert compiled.returncode == 0, compiled.stderr
    with FakeServer(faults={"500": 0.2}) as server:
        done = cli("score", str(tmp_path / "p.json"), "--limit", "20", "--format", "json", "--out",
                   str(tmp_path / "sc"), "--lm", "openai/m", "--api-base", server.url)  # fmt: skip
        answered = server.counts["requests"]
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    folders = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "sc").glob("*/*/summary.json")}
    assert len(rows) == len(folders) == 2
    for row in rows:
        summary = folders[row["framework"].replace(" ", "_").replace("=", "")]
        assert row["sent"] + row["training_sent"] == summary["sent"]
    assert sum(s["sent"] for s in folders.values()) == answered
    assert any(row["training_sent"] for row in rows)  # the matched vote prepared on train
