"""The command line, in process, against a fake OpenAI-compatible server on loopback."""

import json
from pathlib import Path

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def _run(args, capsys):
    code = main(args)
    out, err = capsys.readouterr()
    return code, out, err


def _run_dir(out: str) -> Path:
    line = [x for x in out.splitlines() if x.startswith("run folder:")][-1]
    return Path(line.split(":", 1)[1].strip())


def test_run_writes_a_complete_run_folder(server, capsys):
    args = [
        "run",
        "jot",
        "--task",
        "boolean_expressions",
        "--limit",
        "3",
        "--loops",
        "2",
        "--seed",
        "5",
        "--lm",
        "openai/fake-cli",
        "--api-base",
        server.url,
        "--role",
        "judge=openai/fake-judge",
    ]
    before = server.counts["requests"]
    code, out, err = _run(args, capsys)
    assert code == 0, err
    assert "accuracy" in out and "macro-F1" in out and "LM calls" in out and "command time" in out
    assert "18 = 18 sent + 0 from the cache" in out and "18 = 18 for those calls" in out
    assert server.counts["requests"] - before == 18
    run_dir = _run_dir(out)
    assert run_dir.name.split("_")[1:3] == ["jot", "boolean"]
    meta = json.loads((run_dir / "meta.json").read_text())
    assert meta["seed"] == 5 and len(meta["example_ids"]) == 3
    assert meta["models"] == {
        "lawyer": "openai/fake-cli",
        "prosecutor": "openai/fake-cli",
        "judge": "openai/fake-judge",
    }
    assert meta["framework_config"]["n_loops"] == 2
    assert {"dspy", "litellm", "python"} <= set(meta["versions"])
    rows = [json.loads(x) for x in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == sorted(meta["example_ids"])  # completion order
    for r in rows:
        assert {"input", "gold", "prediction", "transcript", "usage", "error"} <= set(r)
        assert len(r["transcript"]) == 6
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["n"] == 3 and summary["calls"] == 18

    # The same run again is served from the cache.
    code, out, _ = _run(args, capsys)
    assert code == 0 and "18 = 0 sent + 18 from the cache" in out and "0 = 0 for those calls" in out
    assert server.counts["requests"] - before == 18

    code, out, _ = _run(["show", str(run_dir), "--example", "1"], capsys)
    assert code == 0
    assert "LAWYER" in out and "PROSECUTOR" in out and "JUDGE" in out and "decision:" in out
    code, out, _ = _run(["show", str(run_dir)], capsys)
    assert code == 0 and meta["example_ids"][0] in out


def test_frameworks_lists_knobs(capsys):
    code, out, _ = _run(["frameworks"], capsys)
    assert code == 0 and "jot" in out and "n_loops=3" in out


def test_help_works(capsys):
    code, out, _ = _run(["--help"], capsys)
    assert code == 0 and "run" in out and "show" in out


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["run", "nope", "--task", "boolean_expressions"], "valid frameworks are"),
        (["run", "jot", "--task", "nope"], "valid tasks are"),
        (["run", "jot", "--role", "judge"], "write ROLE=MODEL"),
        (["run", "jot", "--role", "jury=openai/x"], "valid roles are judge, lawyer, prosecutor"),
        (
            ["run", "jot", "--lm", "openai/x", "--api-base", "http://127.0.0.1:9/v1", "--limit", "1"],
            "cannot reach the model server",
        ),
        (["run", "jot", "--set", "n_judges=3", "--lm", "openai/x"], "jot has no knob n_judges"),
        (["show", "/nonexistent/run"], "not a run folder"),
    ],
)
def test_bad_input_is_one_line_with_the_fix(args, needle, capsys):
    code, out, err = _run(args, capsys)
    assert code != 0
    assert needle in err
    assert "Traceback" not in err and len(unwrapped(err.strip())) == 1


def test_task_file_with_missing_fields(tmp_path, capsys):
    path = tmp_path / "bbh.json"
    path.write_text(json.dumps({"examples": [{"question": "True is", "target": "True"}]}))
    code, _, err = _run(["run", "jot", "--data", str(path), "--split", "test", "--lm", "openai/x"], capsys)
    assert code != 0
    err = " ".join(err.split())  # wrapped at the terminal's width
    assert "missing field 'input'" in err and "available fields: question, target" in err
    assert len(unwrapped(err.strip())) == 1


def test_bbh_json_file_loads_through_datasets(tmp_path, server, capsys):
    rows = [{"input": f"True and {v} {i} is", "target": str(v)} for i, v in enumerate([True, False] * 5)]
    path = tmp_path / "bbh.json"
    path.write_text(json.dumps({"examples": rows}))
    code, out, err = _run(
        ["run", "jot", "--data", str(path), "--loops", "1", "--lm", "openai/fake", "--api-base", server.url], capsys
    )
    assert code == 0, err
    meta = json.loads((_run_dir(out) / "meta.json").read_text())
    assert meta["task"]["source"] == f"file {path}" and len(meta["example_ids"]) == 6  # the 60% test split


def test_debug_shows_the_traceback_and_keeps_the_exit_code(capsys):
    assert main(["--debug", "run", "nope"]) == 2  # the code of the same bad input without --debug
    err = capsys.readouterr().err
    assert "Traceback" in err and "ConfigError" in err and unwrapped(err.strip())[-1].startswith("error: ")


def test_missing_weights_from_the_command_line(tmp_path, courtroom_cli):
    env = {"COURTROOM_LOCAL_MODEL": str(tmp_path / "missing.gguf")}
    proc = courtroom_cli("run", "jot", "--limit", "1", env=env)
    assert proc.returncode != 0
    assert "COURTROOM_LOCAL_MODEL" in proc.stderr and "Traceback" not in proc.stderr


def test_credentials_in_api_base_are_not_written(server, capsys):
    url = server.url.replace("http://", "http://user:s3cret@") + "?token=abc"
    code, out, err = _run(
        ["run", "jot", "--limit", "1", "--loops", "1", "--lm", "openai/fake", "--api-base", url], capsys
    )
    run_dir = _run_dir(out)
    for path in run_dir.iterdir():
        text = path.read_text()
        assert "s3cret" not in text and "token=abc" not in text, path


def test_every_example_failing_is_an_error(server, capsys):
    from courtroom.testing import FakeServer

    with FakeServer(faults={"garbage": 1.0}) as bad:
        code, out, err = _run(
            [
                "run",
                "jot",
                "--limit",
                "2",
                "--loops",
                "1",
                "--lm",
                "openai/garbage",
                "--api-base",
                bad.url,
                "--seed",
                "99",
            ],
            capsys,
        )
    assert code != 0 and "2 of 2 examples failed" in err and "run folder:" in out


@pytest.mark.parametrize("name", sorted(__import__("courtroom.programs", fromlist=["FRAMEWORKS"]).FRAMEWORKS))
def test_every_framework_runs_from_the_command_line(name, server, capsys, tmp_path):
    code, out, err = _run(
        [
            "run",
            name,
            "--task",
            "boolean_expressions",
            "--limit",
            "2",
            "--train-limit",
            "4",
            "--lm",
            "openai/fake",
            "--api-base",
            server.url,
        ],
        capsys,
    )
    assert code == 0, err
    rows = [json.loads(x) for x in (_run_dir(out) / "results.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and all(r["prediction"] in ("True", "False") for r in rows), rows


EMOTIONS = ["sadness", "joy", "love", "anger", "fear", "surprise"]


@pytest.mark.parametrize("name", ["courtroom-llm", "debate-feedback", "zero-shot", "khan-debate", "jot"])
def test_multiclass_dataset_from_the_command_line(name, server, capsys, tmp_path):
    path = tmp_path / "emotion.jsonl"
    path.write_text("\n".join(json.dumps({"text": f"i feel thing number {i}", "label": i % 6}) for i in range(30)))
    code, out, err = _run(
        [
            "run",
            name,
            "--dataset",
            str(path),
            "--text-field",
            "text",
            "--label-field",
            "label",
            "--labels",
            ",".join(EMOTIONS),
            "--limit",
            "2",
            "--train-limit",
            "6",
            "--lm",
            "openai/fake",
            "--api-base",
            server.url,
        ],
        capsys,
    )
    if name == "jot":
        assert code != 0 and "binary" in err and len(unwrapped(err.strip())) == 1
        return
    assert code == 0, err
    rows = [json.loads(x) for x in (_run_dir(out) / "results.jsonl").read_text().splitlines()]
    assert all(r["prediction"] in EMOTIONS for r in rows), rows
