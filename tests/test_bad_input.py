"""Bad input and a bad environment: exit 2, one line naming the path (or line, row, example) and the fix;
``--debug`` adds the traceback and keeps the code."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("COLUMNS", "300")

    def call(*args: str) -> SimpleNamespace:
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        errors = [x for x in unwrapped(err) if x.startswith("error:")]  # each error whole, as written
        return SimpleNamespace(returncode=code, stdout=out, stderr=err, errors=errors)

    return call


@pytest.fixture(scope="module")
def server() -> Any:
    with FakeServer() as s:
        yield s


def test_a_model_with_a_provider_and_no_name_is_bad_input(cli: Any) -> None:
    got = cli("run", "jot", "--lm", "openai/", "--limit", "2")
    assert got.returncode == 2 and len(got.errors) == 1 and "'openai/'" in got.errors[0]  # before: exit 1


def test_debug_adds_the_traceback_and_keeps_the_code(cli: Any) -> None:
    got = cli("--debug", "run", "jot", "--lm", "openai/", "--limit", "2")
    assert got.returncode == 2 and "Traceback" in got.stderr and got.errors  # before: raised, exit 1


def test_a_binary_config_file_is_bad_input(cli: Any, tmp_path: Path) -> None:
    config = tmp_path / "options.yaml"
    config.write_bytes(b"\x00\x01\xff\xfe binary")
    got = cli("run", "jot", "--config", str(config))
    assert got.returncode == 2 and "not a text file" in got.stderr and str(config) in got.stderr  # before: exit 1


def test_runs_on_a_missing_folder_is_bad_input(cli: Any, tmp_path: Path) -> None:
    got = cli("runs", str(tmp_path / "nowhere"))
    assert got.returncode == 2 and "no such folder" in got.errors[0]  # before: "no runs in ...", exit 0


def test_a_damaged_run_file_is_named_with_its_fix(cli: Any, server: FakeServer, tmp_path: Path) -> None:
    got = cli(
        "run", "zero-shot", "--limit", "3", "--lm", "openai/fake", "--api-base", server.url, "--out", str(tmp_path)
    )
    assert got.returncode == 0, got.stderr
    (run_dir,) = tmp_path.iterdir()
    (run_dir / "summary.json").write_bytes(b'{"n": 3, \xff')
    got = cli("show", str(run_dir))
    assert got.returncode == 2 and str(run_dir / "summary.json") in got.errors[0]  # before: exit 1, JSONDecodeError
    assert f"courtroom run --resume {run_dir}" in got.errors[0]


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("bad.csv", 'text,label\n"a, b",yes\nc,no,extra\n', "line 3 has 3 field(s), the header has 2"),
        ("bad.jsonl", '{"text": "a", "label": "yes"}\n{"text": "b", "label\n', "line 2 is not JSON"),
        ("object.json", '{"text": "a", "label": "yes"}', "it holds an object, not a list of rows"),
        ("mixed.json", '[{"text": "a", "label": "yes"}, "b"]', "row 1 is a string, not an object"),
    ],
)
def test_a_malformed_data_file_is_named_by_line_or_row(
    cli: Any, server: FakeServer, tmp_path: Path, name: str, content: str, said: str
) -> None:
    path = tmp_path / name
    path.write_text(content)
    got = cli(
        *("run", "zero-shot", "--dataset", str(path), "--text-field", "text", "--label-field", "label"),
        *("--labels", "yes,no", "--lm", "openai/fake", "--api-base", server.url),
    )
    assert got.returncode == 2 and len(got.errors) == 1, got.stderr
    assert said in got.errors[0] and str(path) in got.errors[0]  # before: DatasetGenerationError
    assert "datasets" not in got.stderr.lower().replace(str(path).lower(), "")  # no library log lines


def test_a_case_longer_than_the_models_context_is_refused_before_any_request(
    cli: Any, server: FakeServer, tmp_path: Path
) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [{"text": "short case", "label": "yes"}, {"text": "word " * 200_000, "label": "no"}]  # 1 MB
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = server.counts["requests"]
    got = cli(
        *("run", "zero-shot", "--dataset", str(path), "--text-field", "text", "--label-field", "label"),
        *("--labels", "yes,no", "--split-sizes", "0,0,2", "--lm", "openai/gpt-4o-mini", "--api-base", server.url),
    )
    assert got.returncode == 2, got.stderr
    assert "-1 is" in got.errors[0] and "gpt-4o-mini takes (128,000" in got.errors[0]  # names the example
    assert server.counts["requests"] == before  # before: sent as it is


def test_a_damaged_or_read_only_study_storage_is_named_with_its_fix(
    cli: Any, server: FakeServer, tmp_path: Path
) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    db = tmp_path / "ro.db"
    optuna.create_study(storage=f"sqlite:///{db}", study_name="x")
    args = ("study", "jot", "--trials", "1", "--dev-limit", "2", "--lm", "openai/fake", "--api-base", server.url)
    got = cli(*args, "--storage", f"sqlite:///file:{db}?mode=ro&uri=true", "--study-name", "y")
    assert got.returncode == 2 and "cannot write the study storage" in got.errors[0]  # before: exit 1
    assert "make it writable" in got.errors[0]
    size = db.stat().st_size
    with db.open("r+b") as f:  # pages after the schema overwritten
        f.seek(4096)
        f.write(b"\xde\xad" * ((size - 4096) // 2))
    got = cli(*args, "--storage", f"sqlite:///{db}", "--study-name", "x")
    assert got.returncode == 2 and f"{db} is damaged" in got.errors[0] and "move it aside" in got.errors[0]


@pytest.fixture(scope="module")
def program_file(server: FakeServer, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("predict") / "program.json"
    code = main(
        [
            *("compile", "zero-shot", "--task", "boolean_expressions", "--optimizer", "labeled", "--test-limit", "0"),
            *(
                "--train-limit",
                "3",
                "--dev-limit",
                "2",
                "--lm",
                "openai/fake",
                "--api-base",
                server.url,
                "-o",
                str(out),
            ),
        ]
    )
    assert code == 0
    return out


def test_batch_predict_fails_when_the_cases_fail(cli: Any, program_file: Path, tmp_path: Path) -> None:
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"case": f"True and {i % 2 == 0} is"}) + "\n" for i in range(4)))
    with FakeServer(faults={"garbage": 1.0}) as broken:
        common = ("predict", str(program_file), "--input", str(cases), "--api-base", broken.url)
        failed = cli(*common, "--out", str(tmp_path / "out.jsonl"))
        tolerated = cli(*common, "--fail-on-error", "1")
    assert failed.returncode == 2 and "4 of 4 cases failed" in failed.errors[0]  # before: exit 0
    assert len((tmp_path / "out.jsonl").read_text().splitlines()) == 4  # the verdicts are written first
    assert tolerated.returncode == 0, tolerated.stderr  # before: no --fail-on-error for predict


def _unblock_fifo(fifo: Path, after: float) -> Any:
    """Open ``fifo`` for writing after ``after`` s, so a reader stuck on it (the old code) ends instead of hanging."""
    import os
    import threading

    def release() -> None:
        try:
            fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError:
            pass  # no reader: nothing was stuck

    timer = threading.Timer(after, release)
    timer.daemon = True
    timer.start()
    return timer


def test_input_at_fault_is_exit_2_naming_the_path_or_option(
    cli: Any, server: FakeServer, program_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    latin1 = tmp_path / "cases.jsonl"
    latin1.write_bytes('{"case": "\u00e9t\u00e9"}\n'.encode("latin-1"))
    prices = tmp_path / "prices.json"
    prices.write_bytes('{"openai/fake": [1, 2], "caf\u00e9": [1, 1]}'.encode("latin-1"))
    fifo = tmp_path / "options.yaml"
    os.mkfifo(fifo)
    fifo_input = tmp_path / "cases-fifo.jsonl"
    os.mkfifo(fifo_input)
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    fake = ("--lm", "openai/fake", "--api-base", server.url)
    run = ("run", "zero-shot", "--limit", "1", *fake, "--out", str(tmp_path / "runs"))
    cases: list[tuple[tuple[str, ...], dict[str, str], str]] = [
        (("predict", str(program_file), "--input", str(latin1), *fake), {}, f"--input {latin1} is not UTF-8"),
        ((*run, "--max-cost", "1", "--prices", str(prices)), {}, f"price table {prices} is not UTF-8"),
        (("run", "zero-shot", "--lm", "openai/fake", "--api-base", "http://127.0.0.1:99999/v1"), {}, "65535"),
        (("run", "zero-shot", "--limit", "1", *fake, "--out", str(loop)), {}, f"--out {loop}: cannot follow"),
        (("study", "zero-shot", "--trials", "1", *fake, "--study-name", "s" * 10_000), {}, "use 1 to 200"),
        (run, {"COURTROOM_RETRY_WAIT": "soon"}, "COURTROOM_RETRY_WAIT='soon' is not a number of seconds"),
        (run, {"COURTROOM_STOP_GRACE": "inf"}, "COURTROOM_STOP_GRACE='inf'"),
        (run, {"COURTROOM_BATCH_LINES": "0"}, "COURTROOM_BATCH_LINES='0' is not a whole number >= 1"),
        (run, {"COURTROOM_BATCH_POLL": "abc"}, "COURTROOM_BATCH_POLL='abc' is not a number of seconds"),
        (run, {"COURTROOM_BATCH_WAIT": "inf"}, "COURTROOM_BATCH_WAIT='inf'"),
        (run, {"COURTROOM_BATCH_TURNAROUND": "nan"}, "COURTROOM_BATCH_TURNAROUND='nan'"),
        (run, {"COURTROOM_CACHE_DIR": str(prices)}, "COURTROOM_CACHE_DIR"),
        (("run", "zero-shot", "--config", str(fifo)), {}, f"{fifo} is not a regular file"),
        (
            ("predict", str(program_file), "--input", str(fifo_input), *fake),
            {},
            f"--input {fifo_input} is not a regular",
        ),
    ]
    wrong = []
    for args, env, needle in cases:
        timers = [_unblock_fifo(fifo, 10.0), _unblock_fifo(fifo_input, 10.0)]  # before: blocked for good
        with monkeypatch.context() as m:
            for key, value in env.items():
                m.setenv(key, value)
            got = cli(*args)
        for timer in timers:
            timer.cancel()
        if not (got.returncode == 2 and len(got.errors) == 1 and needle in got.errors[0]):
            wrong.append(f"{' '.join(args)[:200]} {env} -> exit {got.returncode}: {got.stderr.strip()[:300]}")
    assert not wrong, "\n".join(wrong)  # before: each exit 1 with a bare Python error (or a hang)


def test_an_unreadable_input_is_not_reported_as_cannot_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    from courtroom.cli._failures import describe

    secret = tmp_path / "data.csv"
    secret.write_text("text,label\n")
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: False if str(p) == str(secret) else real(p, mode))  # as root
    code, line = describe(PermissionError(errno.EACCES, "Permission denied", str(secret))) or (1, "")
    assert code == 2 and line.startswith(f"error: cannot read {secret}") and "make it readable" in line


def test_a_big_bench_hard_shaped_file_needs_only_its_labels(tmp_path: Path, cli: Any) -> None:
    """``input``/``target`` (BIG-Bench-Hard's) are the case and the label; the example names the file's own."""
    rows = [{"input": f"not ( {v} ) is", "target": str(not v)} for v in (True, False) * 5]
    (tmp_path / "bbh.json").write_text(json.dumps({"examples": rows}))
    dry = ["--dry-run", "--lm", "openai/gpt-4o-mini"]
    refused = cli("run", "zero-shot", "--dataset", str(tmp_path / "bbh.json"), *dry)
    assert refused.returncode == 2
    assert "--dataset needs --labels (its fields: input, target): e.g. --text-field input --label-field target " \
           "--labels False,True" in refused.stderr, refused.stderr  # fmt: skip
    assert "question,passage" not in refused.stderr
    done = cli("run", "zero-shot", "--dataset", str(tmp_path / "bbh.json"), "--labels", "True,False", *dry)
    assert done.returncode == 0, done.stderr
