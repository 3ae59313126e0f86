"""Exit status: more failed examples than --fail-on-error allows is a failure of the command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer


def _responder(prompt: str, schema: dict) -> object:
    from courtroom.testing._fakes import answer_for_schema

    if "BROKEN" in prompt:
        return "no JSON here at all"  # unparseable: the example fails
    return answer_for_schema(schema, {}, "fake server reply")


@pytest.fixture(scope="module")
def server():
    with FakeServer(_responder) as s:
        yield s


def _data(tmp_path: Path, broken: int, total: int = 20) -> Path:
    rows = [
        {"input": f"{'BROKEN ' if i < broken else ''}True and {v} case {i} is", "target": str(v)}
        for i, v in zip(range(total), [True, False] * total, strict=False)
    ]
    path = tmp_path / "cases.json"
    path.write_text(json.dumps({"examples": rows}))
    return path


def _run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    out, err = capsys.readouterr()
    # Off a terminal, progress is printed as plain "[  1s] ..." lines; the error is the rest.
    err = "\n".join(line for line in unwrapped(err) if not re.match(r"\[\s*\d+s\] ", line))
    return code, out, err


def _folder(out: str, prefix: str) -> Path:
    return Path([x for x in out.splitlines() if x.startswith(prefix)][-1].split(":", 1)[1].strip())


def _common(server: FakeServer, path: Path) -> list[str]:
    return ["--data", str(path), "--lm", "openai/fake-status", "--api-base", server.url]


def test_run_above_the_threshold_exits_non_zero_and_records_the_status(server, tmp_path, capsys):
    # 20 cases, the test split holds 12; sorted so the broken ones land in every split.
    path = _data(tmp_path, broken=20)
    code, out, err = _run(["run", "zero-shot", *_common(server, path), "--seed", "1"], capsys)
    assert code != 0
    assert len(unwrapped(err.strip())) == 1 and "Traceback" not in err
    assert "examples failed" in err and "--fail-on-error 0.1" in err and "--retry-failed" in err
    summary = json.loads((_folder(out, "run folder") / "summary.json").read_text())
    assert summary["status"] == "failed" and "examples failed" in summary["status_reason"]


def test_a_few_failures_within_the_threshold_exit_zero(server, tmp_path, capsys):
    path = _data(tmp_path, broken=1)
    code, out, err = _run(["run", "zero-shot", *_common(server, path), "--seed", "2", "--fail-on-error", "0.5"], capsys)
    assert code == 0, err
    summary = json.loads((_folder(out, "run folder") / "summary.json").read_text())
    assert summary["status"] == "ok" and summary["status_reason"] is None


def test_fail_on_error_one_turns_the_check_off(server, tmp_path, capsys):
    path = _data(tmp_path, broken=20)
    code, out, err = _run(["run", "zero-shot", *_common(server, path), "--seed", "3", "--fail-on-error", "1"], capsys)
    assert code == 0, err
    assert json.loads((_folder(out, "run folder") / "summary.json").read_text())["status"] == "ok"


def test_most_failed_but_not_all_is_no_longer_exit_zero(server, tmp_path, capsys):
    # The case: 38 of 40 failed exited 0 (only "every example failed" was an error).
    path = _data(tmp_path, broken=17)
    code, out, err = _run(["run", "zero-shot", *_common(server, path), "--seed", "4"], capsys)
    summary = json.loads((_folder(out, "run folder") / "summary.json").read_text())
    assert 0 < summary["failures"] < summary["n"]
    assert code != 0 and "examples failed" in err


def test_compare_fails_when_a_framework_fails(server, tmp_path, capsys):
    path = _data(tmp_path, broken=20)
    # cot without demos: its demos would be generated on the broken training cases first.
    args = ["compare", "--frameworks", "zero-shot,cot", "--set", "cot.k_shots=0", "--no-matched-baselines"]
    args += [*_common(server, path), "--seed", "5"]
    code, out, err = _run(args, capsys)
    assert code != 0 and "zero-shot:" in err and "examples failed" in err
    assert len(unwrapped(err.strip())) == 1
    assert "comparison folder:" in out  # everything is written first


def test_compile_stops_before_spending_when_the_dev_score_fails(server, tmp_path, capsys):
    path = _data(tmp_path, broken=20)
    program = tmp_path / "p.json"
    code, _, err = _run(
        [
            "compile",
            "zero-shot",
            *_common(server, path),
            "--optimizer",
            "labeled",
            "--train-limit",
            "3",
            "--dev-limit",
            "3",
            "-o",
            str(program),
        ],
        capsys,
    )
    assert code != 0 and "before compiling" in err and "examples failed" in err
    assert not program.exists()


def test_fail_on_error_out_of_range(capsys):
    code, _, err = _run(["run", "zero-shot", "--fail-on-error", "2", "--lm", "openai/x"], capsys)
    assert code != 0 and "[0, 1]" in err and len(unwrapped(err.strip())) == 1
