"""Durable run files: a torn tail is repaired before appending, bad lines are skipped and counted,
state files are written whole, and damaged ones are named with their fix."""

from __future__ import annotations

import json
import logging
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom._files import JsonLines, read_jsonl, write_json
from courtroom.errors import DataError
from courtroom.models.lms import RoleLMs
from courtroom.runner.resume import resume
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer

N = 16


def _config(out: Path) -> RunConfig:
    return RunConfig("jot", "web_of_lies", limit=N, seed=5, knobs={"n_loops": 1}, concurrency=2, out=str(out))


def _interrupted(server: FakeServer, tmp_path: Path, after: int = 10) -> tuple[Path, RoleLMs]:
    lms = RoleLMs({"default": server.lm(f"openai/torn-{time.time_ns()}")})
    seen: list[str] = []

    def stop(res: Any) -> None:
        seen.append(res.id)
        if len(seen) == after:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(_config(tmp_path), lms=lms, progress=stop)
    (run_dir,) = tmp_path.iterdir()
    return run_dir, lms


def test_a_torn_last_line_is_set_aside_and_the_resume_keeps_every_example(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeServer(latency=0.005) as server:
        run_dir, lms = _interrupted(server, tmp_path / "runs")
        results = run_dir / "results.jsonl"
        data = results.read_bytes()
        assert data.count(b"\n") >= 10
        last = data.rstrip(b"\n").rfind(b"\n") + 1
        torn = data[: last + (len(data) - last) // 2]  # the last result cut in half, no newline
        results.write_bytes(torn)
        with caplog.at_level(logging.WARNING):
            outcome = resume(run_dir, lms=lms)
    _, rows, summary = load_run(run_dir)
    assert summary is not None and summary["n"] == outcome.summary["n"] == N
    assert len(rows) == N  # before: the summary said N while the file held N - 1
    lines, bad = read_jsonl(results)
    assert not bad  # every line of the file decodes: nothing was glued to the fragment
    assert sorted(r["id"] for r in rows) == sorted({x["id"] for x in lines})
    assert not [p for p, c in Counter(server.served).items() if c > 1]  # no answered call re-sent
    assert any("cut-off line" in r.message and "torn-1" in r.message for r in caplog.records)
    assert (run_dir / "results.jsonl.torn-1").read_bytes() == torn[last:]


def test_lines_that_are_not_utf8_json_are_skipped_counted_and_said(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with FakeServer(latency=0.0) as server:
        run_dir, _ = _interrupted(server, tmp_path / "runs", after=4)
    results = run_dir / "results.jsonl"
    lines = results.read_bytes().splitlines(keepends=True)
    results.write_bytes(lines[0] + b'{"id": "\xff\xfe broken"}\n' + b"not json at all\n" + b"".join(lines[1:]))
    with caplog.at_level(logging.WARNING):
        _, rows, _ = load_run(run_dir)
    assert len(rows) == 4
    warned = [r.message for r in caplog.records if "skipped 2 damaged line(s) (2, 3)" in r.message]
    assert warned and str(results) in warned[0]


@pytest.mark.parametrize("name", ["meta.json", "summary.json"])
def test_a_damaged_state_file_is_named_with_its_fix(tmp_path: Path, name: str) -> None:
    with FakeServer() as server:
        run_dir, _ = _interrupted(server, tmp_path / "runs", after=2)
    (run_dir / name).write_bytes(b'{"config": {"framework": "jot", \x00\xff')
    with pytest.raises(DataError) as err:
        load_run(run_dir)
    assert str(run_dir / name) in str(err.value) and "damaged" in str(err.value)
    assert ("start a new run" if name == "meta.json" else f"courtroom run --resume {run_dir}") in str(err.value)


def test_a_failed_append_leaves_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    with JsonLines(path) as log:
        log.append({"id": "1"})
        with pytest.raises(UnicodeEncodeError):
            log.append({"id": "\ud800"})  # cannot be encoded: nothing of it is written
        log.append({"id": "2"})
    assert read_jsonl(path) == ([{"id": "1"}, {"id": "2"}], [])


def test_state_files_are_replaced_whole(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    write_json(path, {"n": 1})
    with pytest.raises(UnicodeEncodeError):
        write_json(path, {"n": "\ud800"}, ensure_ascii=False)  # fails while writing
    assert json.loads(path.read_text()) == {"n": 1}  # the old file, not half of the new one
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]  # no temporary file left


def test_a_damaged_sessions_line_does_not_stop_a_resume(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with FakeServer() as server:
        run_dir, lms = _interrupted(server, tmp_path / "runs", after=3)
        sessions = run_dir / "sessions.jsonl"
        sessions.write_bytes(sessions.read_bytes() + b'{"start": \xff\xfe}\n')
        outcome = resume(run_dir, lms=lms)  # before: UnicodeDecodeError reading the sessions
    assert outcome.summary["n"] == N


def test_valid_json_of_the_wrong_shape_is_skipped_named_and_the_run_finishes(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, courtroom_cli: Any
) -> None:
    with FakeServer() as server:
        run_dir, lms = _interrupted(server, tmp_path / "runs", after=3)
        results, sessions = run_dir / "results.jsonl", run_dir / "sessions.jsonl"
        good = results.read_bytes().count(b"\n")
        first = json.loads(results.read_bytes().splitlines()[0])
        wrong = [{"id": "x"}, [1, 2], {**first, "gold": 5}, {**first, "usage": "lots"}]
        results.write_bytes(results.read_bytes() + b"".join(json.dumps(w).encode() + b"\n" for w in wrong))
        sessions.write_bytes(sessions.read_bytes() + b'{"start": "noon", "line": "x"}\n[3]\n')
        shown = courtroom_cli("show", str(run_dir))
        assert shown.returncode == 0, shown.stderr  # before: KeyError: 'gold', exit 1
        with caplog.at_level(logging.WARNING):
            _, rows, _ = load_run(run_dir)
            outcome = resume(run_dir, lms=lms)  # before: TypeError, a run that could never be finished
    assert len(rows) == good
    bad = ", ".join(str(good + i) for i in range(1, len(wrong) + 1))
    said = [r.message for r in caplog.records]
    assert any(f"{results}: skipped {len(wrong)} damaged line(s) ({bad})" in m for m in said), said
    assert any(str(sessions) in m and "skipped 2 damaged line(s)" in m for m in said), said
    assert outcome.summary["n"] == N and len(load_run(run_dir)[1]) == N


@pytest.mark.parametrize(
    ("name", "content", "said"),
    [
        ("meta.json", '{"example_ids": 5, "config": {}}', "example_ids is not a list of ids"),
        ("meta.json", '{"framework": 1}', "config is not an object"),
        ("meta.json", "[1]", "not a JSON object"),
        ("meta.json", '{"config": {"framework": "jot", "limit": "lots"}}', "config.limit is a string, not int or None"),
        ("meta.json", '{"config": {"framework": "jot", "roles": []}}', "config.roles is a list, not dict[str,str]"),
        ("meta.json", '{"config": {"framework": "jot", "batch": 1}}', "config.batch is a number, not bool"),
    ],
)
def test_a_meta_json_of_the_wrong_shape_is_named(tmp_path: Path, name: str, content: str, said: str) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / name).write_text(content)
    with pytest.raises(DataError) as err:  # before: KeyError or TypeError, exit 1
        load_run(run_dir)
    assert f"{run_dir / name} is damaged ({said})" in str(err.value)


def test_a_usage_map_of_the_wrong_shape_is_skipped_and_the_run_finishes(tmp_path: Path) -> None:
    """A result whose usage.by_model is a list (before: AttributeError on every resume, no summary ever)."""
    with FakeServer() as server:
        run_dir, lms = _interrupted(server, tmp_path / "runs", after=3)
        results, sessions = run_dir / "results.jsonl", run_dir / "sessions.jsonl"
        first = json.loads(results.read_bytes().splitlines()[0])
        results.write_text(json.dumps({**first, "usage": {**first["usage"], "by_model": [1, 2]}}) + "\n")
        sessions.write_bytes(sessions.read_bytes() + b'{"end": 1, "usage": {"by_model": [3]}}\n')
        outcome = resume(run_dir, lms=lms)
    assert outcome.summary["n"] == N and len(load_run(run_dir)[1]) == N


def test_report_names_a_meta_json_that_is_a_list(tmp_path: Path, courtroom_cli: Any) -> None:
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "meta.json").write_text("[1, 2]")
    done = courtroom_cli("report", str(run_dir), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2, done.stderr  # before: AttributeError, exit 1
    assert f"{run_dir / 'meta.json'} is damaged (not a JSON object)" in done.stderr
    assert len(unwrapped(done.stderr.strip())) == 1


def test_a_comparison_json_of_the_wrong_shape_is_named(tmp_path: Path, courtroom_cli: Any) -> None:
    folder = tmp_path / "comparison"
    folder.mkdir()
    (folder / "comparison.json").write_text('{"task": "t", "frameworks": "jot", "runs": {}}')
    done = courtroom_cli("report", str(folder), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 2 and f"{folder / 'comparison.json'} is damaged" in done.stderr  # before: exit 1
    said = unwrapped(done.stderr.strip())
    assert "frameworks is not a list of names" in said[0] and len(said) == 1


def test_a_run_folder_deleted_mid_run_stops_at_the_first_lost_write(tmp_path: Path) -> None:
    import shutil

    from courtroom.cli._failures import describe

    seen: list[str] = []
    with FakeServer(latency=0.01) as server:
        lms = RoleLMs({"default": server.lm(f"openai/gone-{time.time_ns()}")})

        def delete(res: Any) -> None:
            seen.append(res.id)
            if len(seen) == 2:
                (run_dir,) = (tmp_path / "runs").iterdir()
                shutil.rmtree(run_dir)

        with pytest.raises(DataError) as err:
            run(_config(tmp_path / "runs"), lms=lms, progress=delete)
        sent = server.counts["requests"]
    full = N * 3  # jot with one loop: at least three calls an example
    print(f"folder deleted after 2 results: {sent} request(s) sent, {len(seen)} results seen")
    assert "was deleted while courtroom wrote results.jsonl" in str(err.value)
    assert str(tmp_path / "runs") in str(err.value)
    assert sent < full and len(seen) <= 3  # before: every example ran, then exit 1 at the summary
    assert describe(err.value) == (2, f"error: {err.value}")
