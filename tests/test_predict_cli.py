"""``courtroom compile`` and ``courtroom predict`` end to end over HTTP, on the loopback fake server."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer() as s:
        yield s


@pytest.fixture(scope="module")
def program_file(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("predict") / "program.json"
    code = main(
        [
            "compile",
            "jot",
            "--task",
            "boolean_expressions",
            "--optimizer",
            "labeled",
            "--opt",
            "k=2",
            "--train-limit",
            "3",
            "--dev-limit",
            "2",
            "--test-limit",
            "0",
            "--loops",
            "1",
            "--lm",
            "openai/fake-model",
            "--api-base",
            server.url,
            "-o",
            str(out),
        ]
    )
    assert code == 0
    return out


def test_compile_writes_scores_and_config(program_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    meta = json.loads(program_file.read_text())["metadata"]["courtroom"]
    assert meta["framework"] == "jot" and meta["config"]["n_loops"] == 1
    assert meta["optimizer"] == meta["optimizer"] | {"name": "labeled", "settings": {"k": 2}}
    assert meta["scores"]["dev"]["before"]["n"] == 2 and meta["task"]["name"] == "boolean_expressions"


def test_predict_one_case(program_file: Path, server: FakeServer, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    code = main(["predict", str(program_file), "True and False is", "--api-base", server.url])
    out = capsys.readouterr().out
    assert code == 0
    assert "label: True" in out  # the fake server picks the first allowed value
    assert "LAWYER" in out and "PROSECUTOR" in out and "JUDGE" in out


def test_predict_jsonl(program_file: Path, server: FakeServer, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text('{"id": "a", "case": "True or False is"}\n"not True is"\n\n')
    out = tmp_path / "out.jsonl"
    code = main(["predict", str(program_file), "--input", str(cases), "--out", str(out), "--api-base", server.url])
    assert code == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["a", "2"]
    assert all(r["label"] == "True" and r["error"] is None and r["transcript"] for r in rows)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "exactly one of a case text or --input"),
        (["--input", "missing.jsonl"], "cannot read --input missing.jsonl"),
        (["x", "--role", "bailiff=openai/x"], "unknown role 'bailiff'"),
    ],
)
def test_predict_errors(program_file: Path, args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["predict", str(program_file), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in " ".join(err.split()) and len(unwrapped(err.strip())) == 1


def test_predict_refuses_a_tampered_file(
    program_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = json.loads(program_file.read_text())
    doc["judge"]["demos"] = []
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    code = main(["predict", str(bad), "True is"])
    err = capsys.readouterr().err
    assert code == 2 and "modified after it was saved" in " ".join(err.split())


def test_bad_compile_input_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    for args, message in (
        (["compile", "jot", "--optimizer", "simba"], "one model"),
        (["compile", "jot", "--optimizer", "nope"], "unknown optimizer 'nope'"),
        (
            ["compile", "jot", "--optimizer", "knn", "--opt", "k=9", "--train-limit", "3"],
            "needs at least 9 training",
        ),
    ):
        code = main(args)
        err = capsys.readouterr().err
        assert code == 2 and message in err, err


def test_predict_on_the_local_model(
    program_file: Path, server: FakeServer, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``predict --lm local``: a compiled file on the embedded model's LM, the fake server in llama.cpp's place.

    What is sent is checked here (llama.cpp's request shape, --max-tokens, the judge's demos); that
    the real model answers a compiled program (its judge's demo before the case) is
    tests/test_local.py::test_jot_end_to_end_over_http.
    """
    from types import SimpleNamespace

    from courtroom.models.local import _lm

    monkeypatch.setattr(_lm, "shared_server", lambda: SimpleNamespace(alias="smollm2", api_base=server.url))
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL", raising=False)
    options, served = len(server.options), len(server.served)
    done = cli("predict", str(program_file), "not ( True ) and ( True ) is", "--lm", "local", "--max-tokens", "64")
    assert done.returncode == 0, done.stderr
    assert "label: True" in done.stdout and all(r in done.stdout for r in ("LAWYER", "PROSECUTOR", "JUDGE"))
    sent = server.options[options:]
    assert len(sent) == 3 and all(o["model"] == "smollm2" and o["max_tokens"] == 64 for o in sent)
    assert all(o["response_format"]["type"] == "json_object" for o in sent)
    turns = sorted([m["role"] for m in json.loads(m)] for m in server.served[served:])
    # The advocates' prompts, then the judge's with the labeled optimizer's two demos before the case.
    assert turns == [["system", "user"]] * 2 + [["system", *["user", "assistant"] * 2, "user"]]


def test_predict_on_a_csv_without_text_field_names_the_flag(
    program_file: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not "line 1: not JSON ...; write one {"case": ...} per line": the fix is --text-field."""
    cases = tmp_path / "cases.csv"
    cases.write_text("question,answer\nTrue and False,False\nnot False,True\n")
    code = main(["predict", str(program_file), "--input", str(cases)])
    err = capsys.readouterr().err
    assert code == 2 and len(unwrapped(err.strip())) == 1, err
    err = " ".join(err.split())
    assert "--text-field" in err and "its fields: question, answer" in err and "not JSON" not in err, err
