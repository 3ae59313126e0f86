"""One experiment spec for every command: options declared once, the user's CSV everywhere, identity, hints."""

from __future__ import annotations

import ast
import csv
import json
import random
import shlex
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom.errors import ConfigError
from courtroom.spec import Experiment, differences

ROOT = Path(__file__).resolve().parents[1]


def write_reviews(path: Path, n: int = 40) -> Path:
    """A small CSV of the user's own: text and sentiment."""
    rng = random.Random(1)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["text", "sentiment"])
        for i in range(n):
            good = rng.random() < 0.5
            out.writerow([f"review {i}: it was {'great' if good else 'awful'}", "positive" if good else "negative"])
    return path


def data_flags(csv_file: Path) -> list[str]:
    return ["--dataset", str(csv_file), "--text-field", "text", "--label-field", "sentiment",
            "--labels", "positive,negative"]  # fmt: skip


# --- the spec itself ---------------------------------------------------------------------------


def test_python_keywords_and_flags_build_the_same_spec() -> None:
    from courtroom.cli._options import from_flags

    python = Experiment.build("compile", framework="cot", dataset="r.csv", text_field="text", label_field="y",
                              labels="a,b", split_sizes=[24, 8, 8], train_limit=24, lm="openai/m")  # fmt: skip
    flags = from_flags(
        "compile",
        {
            "dataset": "r.csv",
            "text_field": "text",
            "label_field": "y",
            "labels": "a,b",
            "split_sizes": "24,8,8",
            "train_limit": 24,
            "lm": ["openai/m"],
        },  # fmt: skip
        framework="cot",
    )
    assert python.identity() == flags.identity()
    assert python.data.splits() == {"sizes": [24.0, 8.0, 8.0], "files": {}} or python.data.splits() == {
        "sizes": [24, 8, 8],
        "files": {},
    }
    assert python.data.task_name == "custom:r"


@pytest.mark.parametrize(
    ("values", "needle"),
    [
        ({"dataset": "r.csv"}, "--dataset r.csv: no such file"),  # not "needs --text-field": the path is the fix
        ({"text_field": "t"}, "go with --dataset"),
        ({"task": "navigate", "dataset": "r.csv", "text_field": "t", "label_field": "y", "labels": "a,b"}, "not both"),
        ({"split_sizes": [0.7, 0.5, 0.1]}, "sum to 1.3 > 1"),
        ({"split_sizes": [1, 2]}, "three non-negative sizes"),
        ({"fail_on_error": 2.0}, "fraction in [0, 1]"),
        ({"api_base": "localhost:8000"}, "http:// or https://"),
        ({"max_calls": 0}, "--max-calls must be >= 1"),
        ({"no_such_option": 1}, "unknown option no_such_option"),
    ],
)
def test_bad_specs_get_one_line_naming_the_fix(values: dict[str, Any], needle: str) -> None:
    with pytest.raises(ConfigError) as caught:
        Experiment.build("run", **values).validate()
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_identity_names_the_fields_that_differ() -> None:
    first = Experiment.build("study", framework="jot", dev_limit=20, lm="openai/a")
    second = Experiment.build("study", framework="jot", dev_limit=10, lm="openai/b", concurrency=16)
    found = differences(first.identity(), second)
    assert any(d.startswith("--dev-limit (was 20, now 10)") for d in found), found
    assert any(d.startswith("--lm") for d in found), found
    assert not any("concurrency" in d for d in found)  # how calls are made is not identity


def test_the_spec_never_records_the_base_url() -> None:
    spec = Experiment.build("run", framework="cot", api_base="http://user:secret@host:8000/v1")
    assert "secret" not in json.dumps(spec.to_dict()) and "host:8000" not in json.dumps(spec.to_dict())
    assert Experiment.from_dict(spec.to_dict()).identity() == spec.identity()


# --- options declared once ---------------------------------------------------------------------


def test_each_option_is_declared_once_in_cli() -> None:
    """No command module declares a flag of the shared table itself (typer.Option("--x") outside _options)."""
    from courtroom.cli._options import OPTIONS

    shared = {flag for o in OPTIONS for flag in o.flags}
    for path in (ROOT / "courtroom" / "cli").glob("*.py"):
        if path.name == "_options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("Option", "Argument"):
                flags = {a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)}
                assert not flags & shared, f"{path.name} declares {flags & shared} again"


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study", "predict", "score"])
def test_every_command_takes_its_options_from_the_one_table(command: str, cli: Any) -> None:
    from courtroom.cli._options import OPTIONS

    helped = cli(command, "--help")
    assert helped.returncode == 0
    text = " ".join(helped.stdout.split())
    for option in OPTIONS:
        if command in option.commands:
            assert option.flags[-1].split("/")[0] in text, (command, option.flags)
    for old in ("--compile-set", "--report ", "--output ", "--train ", "--dev "):
        assert old not in text, old


def test_api_base_reaches_every_command(tmp_path: Path, cli: Any) -> None:
    """``--api-base`` means one thing everywhere: each command sends its requests there."""
    from courtroom.testing import FakeServer

    csv_file = write_reviews(tmp_path / "reviews.csv")
    common = [*data_flags(csv_file), "--split-sizes", "24,8,8"]
    with FakeServer() as server:
        api = ["--api-base", server.url]
        commands = {
            "run": ["run", "zero-shot", *common, *api, "--limit", "2"],
            "compare": ["compare", "--frameworks", "zero-shot", *common, *api, "--limit", "2",
                        "--no-matched-baselines"],
            "compile": ["compile", "zero-shot", *common, *api, "--optimizer", "labeled", "--opt", "k=1",
                        "--dev-limit", "2", "--test-limit", "0", "-o", "p.json"],
            "study": ["study", "self-consistency", *common, *api, "--trials", "1", "--dev-limit", "2",
                      "--storage", f"sqlite:///{tmp_path}/s.db"],
            "design study": ["study", "--frameworks", "parallel-vote,self-consistency", *common, *api, "--trials",
                             "1", "--dev-limit", "2", "--storage", f"sqlite:///{tmp_path}/s.db"],
        }  # fmt: skip
        for name, args in commands.items():
            args = [*args, "--lm", f"openai/{name.replace(' ', '-')}"]  # a model of its own: no cache hit
            before = server.counts["requests"]
            done = cli(*args)
            assert done.returncode == 0, (name, done.stderr)
            assert server.counts["requests"] > before, name
        sent = server.counts["requests"]
        done = cli("predict", "p.json", "a case", *api, "--no-transcript")
        assert done.returncode == 0, done.stderr
        assert server.counts["requests"] > sent


# --- the user's own CSV, everywhere --------------------------------------------------------------


def test_a_40_row_csv_gives_24_train_and_8_dev_rows_in_compile_and_study(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer

    csv_file = write_reviews(tmp_path / "reviews.csv")
    common = [*data_flags(csv_file), "--split-sizes", "24,8,8", "--lm", "openai/m", "--train-limit", "24",
              "--dev-limit", "8"]  # fmt: skip
    with FakeServer() as server:
        done = cli("compile", "cot", *common, "--api-base", server.url, "--optimizer", "labeled", "--test-limit", "0",
                   "-o", "p.json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        meta = json.loads(Path("p.json").read_text())["metadata"]["courtroom"]
        assert len(meta["task"]["train_ids"]) == 24 and len(meta["task"]["dev_ids"]) == 8
        assert meta["spec"]["data"]["dataset"] == str(csv_file)  # the program records its spec
        done = cli("study", "self-consistency", *common, "--api-base", server.url, "--trials", "1",
                   "--storage", f"sqlite:///{tmp_path}/s.db", "--export-best", "best.json")  # fmt: skip
        assert done.returncode == 0, done.stderr
        study = json.loads(Path("studies/self-consistency-custom-reviews/study.json").read_text())
        assert study["config"]["dev"] == 8 and study["config"]["splits"]["sizes"] == [24, 8, 8]
        assert json.loads(Path("best.json").read_text())["spec"]["data"]["split_sizes"] == [24, 8, 8]
        done = cli("study", "--frameworks", "parallel-vote,self-consistency", *common, "--api-base", server.url,
                   "--trials", "2", "--storage", f"sqlite:///{tmp_path}/s.db")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "designs-custom-reviews" in done.stdout


def test_splits_given_as_their_own_files(tmp_path: Path) -> None:
    from courtroom.data.tasks import load_splits

    train = write_reviews(tmp_path / "train.csv", 30)
    test = write_reviews(tmp_path / "test.csv", 12)
    spec = Experiment.build("run", dataset=str(train), text_field="text", label_field="sentiment",
                            labels="positive,negative", test_data=str(test))  # fmt: skip
    _, parts, source = load_splits("x", dataset=spec.data.custom(), splits=spec.data.splits())
    assert len(parts["test"]) == 12 and all(ex.id.startswith("test-") for ex in parts["test"])
    assert len(parts["train"]) + len(parts["dev"]) == 30 and len(parts["train"]) == 15
    assert "test: file" in source


def test_a_task_file_names_the_fields(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer

    write_reviews(tmp_path / "reviews.csv")
    (tmp_path / "reviews.yaml").write_text(
        "dataset: reviews.csv\ntext_field: text\nlabel_field: sentiment\nlabels: [positive, negative]\n"
    )
    with FakeServer() as server:
        done = cli("run", "zero-shot", "--dataset", str(tmp_path / "reviews.yaml"), "--split-sizes", "0.5,0.25,0.25",
                   "--lm", "openai/m", "--api-base", server.url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = json.loads(next(Path("runs").glob("*/meta.json")).read_text())
    assert len(meta["example_ids"]) == 10 and meta["spec"]["data"]["split_sizes"] == [0.5, 0.25, 0.25]


def test_yes_no_labels_in_yaml_stay_text(tmp_path: Path, cli: Any) -> None:
    # YAML 1.1 reads Yes/No (and on/off) as booleans: the labels became True/False and every row
    # ("Yes", "No") was refused. A task file is read as text; a --config file keeps only true/false.
    from courtroom.data.custom import read_task_file
    from courtroom.testing import FakeServer

    with (tmp_path / "answers.csv").open("w") as f:
        f.write("question,answer\n" + "".join(f"q{i},{'Yes' if i % 2 else 'No'}\n" for i in range(12)))
    (tmp_path / "answers.yaml").write_text(
        "dataset: answers.csv\ntext_field: question\nlabel_field: answer\nlabels: [Yes, No]\npositions: null\n"
    )
    data = read_task_file(tmp_path / "answers.yaml")
    assert data["labels"] == ["Yes", "No"] and data["positions"] is None
    (tmp_path / "options.yaml").write_text(
        f"dataset: {tmp_path / 'answers.csv'}\ntext-field: question\nlabel-field: answer\nlabels: [Yes, No]\nlimit: 4\n"
    )
    with FakeServer() as server:
        for source in (["--dataset", str(tmp_path / "answers.yaml")], ["--config", str(tmp_path / "options.yaml")]):
            done = cli("run", "zero-shot", *source, "--limit", "4", "--lm", "openai/m", "--api-base", server.url)
            assert done.returncode == 0, done.stderr


# --- identity: studies, resumes ----------------------------------------------------------------


def test_a_study_continued_under_another_spec_is_refused_naming_what_differs(
    tmp_path: Path, cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from courtroom.testing import FakeServer

    storage = f"sqlite:///{tmp_path}/s.db"
    base = ["study", "self-consistency", "--trials", "1", "--storage", storage, "--space", "k_samples=1:2",
            "--lm", "openai/m"]  # fmt: skip
    with FakeServer() as server:
        api = ["--api-base", server.url]
        assert cli(*base, *api, "--dev-limit", "4", "--study-name", "mine").returncode == 0
        refused = cli(*base, *api, "--dev-limit", "2", "--study-name", "mine")
        assert refused.returncode == 2
        assert (
            "--dev-limit 4 (you asked --dev-limit 2)" in refused.stderr and len(unwrapped(refused.stderr.strip())) == 1
        )
        other_model = cli(*base[:-1], "openai/other", *api, "--dev-limit", "4", "--study-name", "mine")
        assert other_model.returncode == 2 and "--lm openai/m (you asked --lm openai/other)" in other_model.stderr
        # Same spec: the study continues (2 trials now).
        assert cli(*base, *api, "--dev-limit", "4", "--study-name", "mine").returncode == 0
        # Without --study-name, another spec gets a study of its own; the first is left alone.
        assert cli(*base, *api, "--dev-limit", "4").returncode == 0
        other = cli(*base, *api, "--dev-limit", "2")
        assert other.returncode == 0, other.stderr
        assert "exists with another spec" in caplog.text
    names = {r[0] for r in sqlite3.connect(f"{tmp_path}/s.db").execute("select study_name from studies")}
    first = "self-consistency-boolean_expressions"
    assert first in names and any(n.startswith(first + "-") for n in names)


def test_the_design_study_honours_fail_on_error(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer

    args = ["study", "--frameworks", "parallel-vote,self-consistency", "--trials", "2", "--dev-limit", "4",
            "--lm", "openai/m", "--storage", f"sqlite:///{tmp_path}/s.db"]  # fmt: skip
    with FakeServer(faults={"garbage": 1.0}) as server:
        stopped = cli(*args, "--api-base", server.url, "--fail-on-error", "0.5", "--study-name", "a")
        assert stopped.returncode != 0 and "failed" in stopped.stderr, stopped.stderr
        tolerant = cli(*args, "--api-base", server.url, "--fail-on-error", "1", "--study-name", "b")
        assert tolerant.returncode == 0, tolerant.stderr


def test_hints_carry_the_api_base_and_run_as_printed(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer, fault_prompts

    with FakeServer(fault_for=fault_prompts(0.5, "garbage", seed=3)) as server:
        done = cli("run", "zero-shot", "--limit", "8", "--lm", "openai/m", "--api-base", server.url,
                   "--fail-on-error", "1")  # fmt: skip
        assert done.returncode == 0, done.stderr
        line = next(x for x in done.stdout.splitlines() if x.startswith("to run them again: "))
        hint = line.removeprefix("to run them again: ")
        assert f"--api-base {server.url}" in hint, hint
        again = cli(*shlex.split(hint)[1:])
        assert again.returncode == 0, again.stderr  # the printed command is complete and runnable


def test_every_artefact_records_its_spec(tmp_path: Path, cli: Any) -> None:
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        api = ["--lm", "openai/m", "--api-base", server.url, "--limit", "2"]
        assert cli("run", "cot", *api).returncode == 0
        assert cli("compare", "--frameworks", "zero-shot,cot", "--no-matched-baselines", *api).returncode == 0
    meta = json.loads(next(Path("runs").glob("*/meta.json")).read_text())
    assert meta["spec"]["design"]["framework"] == "cot" and meta["spec"]["models"]["lm"] == ["openai/m"]
    folder = next(Path("comparisons").iterdir())
    for name in ("plan.json", "comparison.json"):
        spec = json.loads((folder / name).read_text())["spec"]
        assert spec["design"]["frameworks"] == ["zero-shot", "cot"] and spec["data"]["limit"] == 2
    row = json.loads((folder / "cot" / "meta.json").read_text())
    assert row["spec"]["command"] == "compare"
    assert server.url not in json.dumps(meta) + (folder / "plan.json").read_text()


def test_a_missing_key_is_found_before_the_first_example(cli: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    done = cli("run", "zero-shot", "--limit", "3", "--lm", "openai/gpt-4o-mini")
    assert done.returncode == 2
    assert "OPENAI_API_KEY" in done.stderr and len(unwrapped(done.stderr.strip())) == 1
    assert not Path("runs").exists() or not any(Path("runs").glob("*/results.jsonl"))


def test_predict_takes_strings_and_dicts(tmp_path: Path) -> None:
    import courtroom
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        courtroom.compile("zero-shot", optimizer="labeled", settings={"k": 1}, train_limit=2, dev_limit=2,
                          test_limit=0, lm="openai/m", api_base=server.url, out=str(tmp_path / "p.json"),
                          progress=False)  # fmt: skip
        verdicts = courtroom.predict(
            tmp_path / "p.json", ["True and False", {"case": "not False", "id": "b"}], api_base=server.url
        )
    assert [v.id for v in verdicts] == ["1", "b"]
    assert all(v.label in ("True", "False") and v.transcript for v in verdicts)
    with pytest.raises(ConfigError, match="case 1 is empty"):
        courtroom.predict(tmp_path / "p.json", [" "])


def test_a_hint_never_prints_a_password() -> None:
    spec = Experiment.build("run", framework="cot", api_base="http://user:s3cret@host:8000/v1", timeout=5.0)
    flags = spec.runtime_flags()
    assert flags == ["--api-base", "http://user:PASSWORD@host:8000/v1", "--timeout", "5"]
    assert "s3cret" not in spec.command_line("--resume", "runs/x")
