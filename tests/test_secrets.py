"""No secret reaches disk or a traceback: every folder and file the CLI writes, and ``--debug`` output.

The base URL carries a user and password (``http://user:s3cret@host/v1``), as some proxies need.
Run folders, repeat groups, comparison folders, HTML reports, study reports and study databases
(SQLite file bytes) are all scanned. No base URL is written at all: a resume asks for it again.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import warm
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer

SECRET = "s3cret"


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def _url(server: FakeServer) -> str:
    return server.url.replace("http://", f"http://user:{SECRET}@")


def _folder(out: str, label: str) -> Path:
    line = [x for x in out.splitlines() if x.startswith(label)][-1]
    return Path(line.split(":", 1)[1].strip())


def _assert_clean(root: Path, server: FakeServer) -> int:
    """No file under ``root`` holds the password, and none holds the base URL in any form."""
    host = server.url.split("//", 1)[1]  # 127.0.0.1:PORT/v1
    files = [p for p in root.rglob("*") if p.is_file()]
    for path in files:
        data = path.read_bytes()  # SQLite and PNG files too: bytes, not text
        assert SECRET.encode() not in data, path
        assert b"user:" not in data, path
        assert host.encode() not in data, f"{path} holds the base URL"
    return len(files)


def test_no_secret_or_base_url_in_any_written_folder(
    server: FakeServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    common = ["--lm", "openai/fake-secrets", "--api-base", _url(server), "--limit", "2"]

    assert main(["run", "jot", "--set", "n_loops=1", "--repeats", "2", "--out", "runs", *common]) == 0
    capsys.readouterr()
    group = next((tmp_path / "runs").glob("*_x2_*"))
    assert (group / "group.json").is_file()

    assert main(["compare", "--frameworks", "zero-shot,cot", "--out", "comparisons", *common]) == 0
    capsys.readouterr()
    comparison = next((tmp_path / "comparisons").iterdir())
    assert (comparison / "comparison.json").is_file()

    assert main(["report", str(comparison), "-o", "report.html"]) == 0
    capsys.readouterr()

    study = [
        "study", "jot", "--trials", "2", "--dev-limit", "2", "--train-limit", "2", "--space", "n_loops=1:2",
        "--storage", f"sqlite:///{tmp_path}/study.db", "--out", "study-report",
        "--lm", "openai/fake-secrets", "--api-base", _url(server),
    ]  # fmt: skip
    assert main(study) == 0, capsys.readouterr()
    capsys.readouterr()
    assert (tmp_path / "study.db").stat().st_size > 0 and (tmp_path / "study-report").is_dir()

    assert _assert_clean(tmp_path, server) > 10
    meta = json.loads(next(group.glob("repeat-0/meta.json")).read_text())
    assert meta["config"]["api_base"] is None and meta["config"]["api_base_given"] is True


def test_resume_asks_for_the_base_url_again(server: FakeServer, tmp_path: Path, capsys) -> None:
    args = ["run", "zero-shot", "--lm", "openai/fake-resume", "--limit", "2", "--out", str(tmp_path)]
    assert main([*args, "--api-base", _url(server)]) == 0
    run_dir = _folder(capsys.readouterr().out, "run folder:")
    (run_dir / "results.jsonl").write_text("")  # as if interrupted before any example finished
    assert main(["run", "--resume", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert "--api-base" in err and len(unwrapped(err.strip())) == 1
    assert main(["run", "--resume", str(run_dir), "--api-base", _url(server)]) == 0, capsys.readouterr().err


def test_debug_logs_and_traceback_redact_credentials(tmp_path: Path) -> None:
    """HTTP clients log each request URL at DEBUG, and their errors name it; neither shows the password."""
    with FakeServer(faults={"500": 1.0}) as failing:
        proc = warm.run(
            [sys.executable, "-m", "courtroom.cli", "--debug", "run", "zero-shot", "--limit", "1"]
            + ["--lm", "openai/fake-debug", "--api-base", _url(failing), "--out", str(tmp_path)],
            env={**os.environ, "COURTROOM_CACHE_DIR": str(tmp_path / "cache")},
            capture_output=True,
            text=True,
            timeout=180,
        )
    assert proc.returncode != 0
    assert "Traceback" in proc.stderr  # --debug still shows the traceback
    # ... and the debug logs (the request's URL, as LiteLLM and the OpenAI client log it), redacted.
    assert "POST" in proc.stderr and f"http://{failing.url.split('//', 1)[1]}" in proc.stderr
    assert SECRET not in proc.stderr and SECRET not in proc.stdout


def test_the_ambiguity_hearing_after_a_run_reaches_the_same_server(server: FakeServer, tmp_path: Path) -> None:
    """The hearing rebuilds the program after the run; the base URL is not on disk, so it is passed on."""
    args = ["run", "courtroom-llm", "--set", "k_precedents=0", "--limit", "2", "--ambiguity-k", "3"]
    before = server.counts["requests"]
    assert main([*args, "--lm", "openai/fake-amb", "--api-base", _url(server), "--out", str(tmp_path)]) == 0
    votes = json.loads(next(tmp_path.glob("*/ambiguity.json")).read_text())["votes"]
    assert all(v is not None for sample in votes.values() for v in sample), votes  # every hearing answered
    assert server.counts["requests"] - before > 2 * 4  # the run's calls, then the extra hearings
