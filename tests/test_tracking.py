"""``--track URI``: compare, compile and a study logged to MLflow, read back through ``MlflowClient``.

A SQLite tracking store (what ``mlflow server --backend-store-uri`` serves) is written by the real
commands against the fake server; the runs, params, metrics (equal to the folders' figures),
artifacts and child runs are read back, and the store's bytes and artifact files hold no API key,
password or base URL. A tracking server that cannot be reached costs one warning; a resumed run
finds its MLflow run again instead of logging a second one.
"""

from __future__ import annotations

import contextlib
import csv
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.testing import FakeServer

mlflow = pytest.importorskip("mlflow")

SECRET = "s3cret-pw"
API_KEY = "sk-test-key-0123456789"


@pytest.fixture(scope="module")
def tracked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """compare, compile and a 3-trial study, each with --track into one SQLite store (run once)."""
    root = tmp_path_factory.mktemp("tracked")
    store = f"sqlite:///{root}/mlflow.db"
    with pytest.MonkeyPatch.context() as mp, FakeServer() as server:
        mp.chdir(root)
        mp.setenv("OPENAI_API_KEY", API_KEY)
        url = server.url.replace("http://", f"http://user:{SECRET}@")
        common = ["--lm", "openai/fake-track", "--api-base", url, "--track", store]
        assert main(["compare", "--frameworks", "zero-shot,cot", "--limit", "3", "--out", "comparisons", *common]) == 0
        assert main(["compile", "zero-shot", "--optimizer", "labeled", "--train-limit", "3", "--dev-limit", "3",
                     "--test-limit", "3", "-o", "prog.json", *common]) == 0  # fmt: skip
        assert main(["score", "prog.json", "--limit", "3", "--out", "scores", *common]) == 0
        assert main(["run", "zero-shot", "--repeats", "2", "--limit", "2", "--out", "runs", *common]) == 0
        assert main(["study", "jot", "--trials", "3", "--dev-limit", "2", "--train-limit", "2", "--space",
                     "n_loops=1:2", "--storage", f"sqlite:///{root}/study.db", "--out", "study-report",
                     *common]) == 0  # fmt: skip
        host = server.url.split("//", 1)[1]
    client = mlflow.MlflowClient(store)
    experiment = client.get_experiment_by_name("courtroom")
    runs = client.search_runs([experiment.experiment_id], max_results=200)
    return {"root": root, "client": client, "runs": runs, "host": host, "experiment": experiment, "store": store}


def _command(tracked: dict[str, Any], command: str) -> list[Any]:
    return [r for r in tracked["runs"] if r.data.tags.get("courtroom.command") == command]


def _children(tracked: dict[str, Any], parent: Any) -> list[Any]:
    return [r for r in tracked["runs"] if r.data.tags.get("mlflow.parentRunId") == parent.info.run_id]


def _artifacts(client: Any, run: Any, path: str | None = None) -> set[str]:
    return {a.path for a in client.list_artifacts(run.info.run_id, path)}


def test_a_comparison_is_a_parent_run_with_a_child_per_row(tracked: dict[str, Any]) -> None:
    client = tracked["client"]
    (folder,) = (tracked["root"] / "comparisons").iterdir()
    [parent] = [r for r in _command(tracked, "compare") if "mlflow.parentRunId" not in r.data.tags]
    assert parent.data.tags["courtroom.id"] == folder.name
    assert parent.data.params["design.frameworks"] == '["zero-shot", "cot"]'
    assert parent.data.params["data.limit"] == "3"
    assert {"table.csv", "comparison.json", "report.html", "plots"} <= _artifacts(client, parent)
    rows = {row["framework"]: row for row in csv.DictReader((folder / "table.csv").open())}
    children = {c.data.tags["courtroom.row"]: c for c in _children(tracked, parent)}
    assert set(children) == set(rows) and {"zero-shot", "cot"} < set(children)  # and the matched vote's row
    for name, child in children.items():
        for metric in ("accuracy", "macro_f1", "calls", "tokens", "n", "failures"):
            assert child.data.metrics[metric] == pytest.approx(float(rows[name][metric])), (name, metric)
        low, high = child.data.metrics["accuracy_ci_low"], child.data.metrics["accuracy_ci_high"]
        assert low <= child.data.metrics["accuracy"] <= high and high - low > 0
        assert {"results.jsonl", "summary.json", "meta.json"} <= _artifacts(client, child)
    vote = rows["zero-shot"]["matched_vote"]
    assert children["zero-shot"].data.tags["courtroom.matched_vote"] == vote
    assert children["zero-shot"].data.metrics["matched_vote_accuracy"] == pytest.approx(float(rows[vote]["accuracy"]))
    assert children["zero-shot"].data.metrics["mcnemar_p"] == pytest.approx(float(rows["zero-shot"]["mcnemar_p"]))


def test_a_compile_logs_its_scores_settings_and_program(tracked: dict[str, Any]) -> None:
    [run] = _command(tracked, "compile")
    root = tracked["root"]
    for split in ("dev", "test"):
        proof = json.loads((root / f"prog-{split}-before" / "meta.json").read_text())["compile_proof"]
        for when in ("before", "after"):
            for key in ("accuracy", "ci_low", "ci_high", "n", "calls"):
                assert run.data.metrics[f"{split}_{when}_{key}"] == pytest.approx(proof[when][key]), (split, when, key)
        assert run.data.metrics[f"{split}_gain_p_value"] == pytest.approx(proof["p_value"])
    assert run.data.params["optimizer.name"] == "labeled"
    assert run.data.params["design.optimizer"] == "labeled" and run.data.params["data.dev_limit"] == "3"
    assert {"prog.json", "dev-before", "test-after"} <= _artifacts(tracked["client"], run)


def test_a_study_is_a_parent_run_with_a_child_per_trial(tracked: dict[str, Any]) -> None:
    client = tracked["client"]
    [parent] = [r for r in _command(tracked, "study") if "mlflow.parentRunId" not in r.data.tags]
    trials = {
        int(row["number"]): row for row in csv.DictReader((tracked["root"] / "study-report" / "trials.csv").open())
    }
    children = {int(c.data.tags["courtroom.trial"]): c for c in _children(tracked, parent)}
    assert set(children) == set(trials) and len(trials) >= 3
    for number, child in children.items():
        row = trials[number]
        assert child.data.tags["state"] == row["state"]
        assert child.data.params["n_loops"] == row["n_loops"]
        assert child.data.metrics["value"] == pytest.approx(float(row["value"]))
        if row["calls"]:
            assert child.data.metrics["calls"] == pytest.approx(float(row["calls"]))
    assert parent.data.metrics["trials"] == len(trials)
    assert {"best.json", "trials.csv", "study.json"} <= _artifacts(client, parent)
    best = json.loads(Path(client.download_artifacts(parent.info.run_id, "best.json")).read_text())
    assert parent.data.metrics["best_value"] == pytest.approx(best["value"])
    assert float(trials[best["number"]]["value"]) == pytest.approx(best["value"])
    # The chosen trial's held-out test score (test.csv), on the parent and on its trial's run.
    [test] = list(csv.DictReader((tracked["root"] / "study-report" / "test.csv").open()))
    assert int(test["trial"]) == best["number"]
    for run in (parent, children[best["number"]]):
        assert run.data.metrics["test_accuracy"] == pytest.approx(float(test["test accuracy"]))
        assert run.data.metrics["test_n"] == float(test["test n"])
        assert "test_ci_low" in run.data.metrics and "test_ci_high" in run.data.metrics


def test_a_score_is_the_programs_row_beside_its_matched_vote(tracked: dict[str, Any]) -> None:
    (folder,) = (tracked["root"] / "scores").iterdir()
    [parent] = [r for r in _command(tracked, "score") if "mlflow.parentRunId" not in r.data.tags]
    assert parent.data.tags["courtroom.id"] == folder.name
    rows = {row["framework"]: row for row in csv.DictReader((folder / "table.csv").open())}
    children = {c.data.tags["courtroom.row"]: c for c in _children(tracked, parent)}
    assert set(children) == set(rows) and len(rows) == 2  # the program and the vote at its calls
    for name, child in children.items():
        assert child.data.metrics["accuracy"] == pytest.approx(float(rows[name]["accuracy"]))
        assert child.data.metrics["calls"] == pytest.approx(float(rows[name]["calls"]))


def test_a_repeat_group_is_a_parent_run_with_a_child_per_repeat(tracked: dict[str, Any]) -> None:
    (group,) = (tracked["root"] / "runs").iterdir()
    [parent] = [r for r in tracked["runs"] if r.data.tags.get("courtroom.id") == group.name]
    stats = json.loads((group / "repeats.json").read_text())["stats"]
    for key in ("mean", "ci_low", "ci_high", "sd"):
        name = "accuracy" if key == "mean" else f"accuracy_{key}"
        assert parent.data.metrics[name] == pytest.approx(stats["accuracy"][key]), key
    assert parent.data.params["execution.repeats"] == "2"
    children = _children(tracked, parent)
    assert sorted(c.data.tags["courtroom.id"] for c in children) == sorted(
        f"{group.name}/{p.name}" for p in group.iterdir() if (p / "meta.json").is_file()
    )
    assert len(children) == 2 and all(c.data.metrics["n"] == 2 for c in children)


def test_no_key_password_or_base_url_in_the_store(tracked: dict[str, Any]) -> None:
    root = tracked["root"]
    files = [root / "mlflow.db", *(p for p in (root / "mlruns").rglob("*") if p.is_file())]
    assert len(files) > 20
    for path in files:
        data = path.read_bytes()
        for secret in (SECRET, API_KEY, tracked["host"], "user:"):
            assert secret.encode() not in data, (path, secret)


@contextlib.contextmanager
def _failing_tracker() -> Iterator[str]:
    """A tracking server that answers every request with 500."""

    class Failing(BaseHTTPRequestHandler):
        def _fail(self) -> None:
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST = _fail

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize("tracker", ["down", "failing", "down, with --trace"])
def test_a_tracking_server_down_or_failing_is_one_warning_and_the_run_finishes(
    tracker: str, tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with FakeServer() as server, _failing_tracker() as failing:
        where = failing if tracker == "failing" else "127.0.0.1:1"
        args = ["run", "zero-shot", "--limit", "2", "--lm", "openai/fake-down", "--api-base", server.url]
        started = time.monotonic()
        trace = ["--trace"] if "trace" in tracker else []
        assert main([*args, "--track", f"http://user:pw@{where}", *trace, "--out", "runs"]) == 0
        assert time.monotonic() - started < 60  # MLflow's own retries would take minutes
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warned) == 1 and f"tracking to http://user:PASSWORD@{where} failed" in warned[0], warned
    assert "\n" not in warned[0] and "pw@" not in warned[0]
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert len((run_dir / "results.jsonl").read_text().splitlines()) == 2 and (run_dir / "summary.json").is_file()


def test_a_resumed_run_finds_its_mlflow_run_again(
    tracked: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tracked["store"]  # the store made already: a new one costs seconds of schema set-up
    with FakeServer() as server:
        args = ["run", "zero-shot", "--limit", "3", "--lm", "openai/fake-resume", "--out", str(tmp_path / "runs")]
        assert main([*args, "--api-base", server.url, "--track", store]) == 0
        (run_dir,) = (tmp_path / "runs").iterdir()
        lines = (run_dir / "results.jsonl").read_text().splitlines()
        (run_dir / "results.jsonl").write_text(lines[0] + "\n")  # as if stopped after one example
        assert main(["run", "--resume", str(run_dir), "--api-base", server.url, "--track", store]) == 0
    capsys.readouterr()
    client = tracked["client"]
    runs = client.search_runs([tracked["experiment"].experiment_id], f"tags.`courtroom.id` = '{run_dir.name}'")
    assert len(runs) == 1 and runs[0].data.tags["courtroom.command"] == "run"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert runs[0].data.metrics["n"] == summary["n"] == 3
    assert runs[0].data.metrics["accuracy"] == pytest.approx(summary["accuracy"])
    assert {"results.jsonl", "report.html"} <= _artifacts(client, runs[0])


@pytest.mark.parametrize(
    ("flags", "says"),
    [(["--track", "env"], "MLFLOW_TRACKING_URI"), (["--trace"], "--trace goes with --track")],
)
def test_track_bad_input_is_one_line(
    flags: list[str], says: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    assert main(["run", "zero-shot", "--limit", "1", *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert says in " ".join(err.split()) and len(unwrapped(err)) == 1, err


def test_trace_records_each_case_with_each_roles_prompt(tracked: dict[str, Any], tmp_path: Path) -> None:
    """--trace: DSPy's autolog sends a trace per case to the store; its spans hold each role's prompt."""
    client, experiment = tracked["client"], tracked["experiment"]
    before = {t.info.trace_id for t in client.search_traces(locations=[experiment.experiment_id])}
    with FakeServer() as server:
        url = server.url.replace("http://", f"http://user:{SECRET}@")
        args = ["run", "jot", "--set", "n_loops=1", "--limit", "2", "--lm", "openai/fake-trace", "--api-base", url]
        assert main([*args, "--out", str(tmp_path), "--track", tracked["store"], "--trace"]) == 0
        host = server.url.split("//", 1)[1]
    traces = [t for t in client.search_traces(locations=[experiment.experiment_id]) if t.info.trace_id not in before]
    (run_dir,) = (p for p in tmp_path.iterdir() if p.is_dir())
    cases = [json.loads(line)["input"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert len(traces) == len(cases) == 2
    for trace in traces:
        text = " ".join(str(span.inputs) for span in trace.data.spans)
        assert "Lawyer(" in text and "Prosecutor(" in text and "Judge" in text
        assert any(case in text for case in cases)
        assert any(span.span_type == "CHAT_MODEL" for span in trace.data.spans)
    data = (tracked["root"] / "mlflow.db").read_bytes()
    assert SECRET.encode() not in data and host.encode() not in data


def test_a_tracking_uri_that_names_no_store_is_refused_before_the_first_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each one line, exit 2, nothing sent and no folder (before: the whole run, then MLflow's warning)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "folder").mkdir()
    (tmp_path / "notes.txt").write_text("not a database\n")
    uris = {
        f"sqlite:///{tmp_path / 'folder'}": "is a folder",
        "nosuch://x": "unknown scheme nosuch://",
        "ftp://example.org/runs": "unknown scheme ftp://",
        "/etc/passwd": "is a file, not a folder",
        "http://127.0.0.1:99999": "0 to 65535",
        "htp://127.0.0.1:5000": "unknown scheme htp://",
        "mlflow.db": "sqlite:///mlflow.db",
        f"sqlite:///{tmp_path / 'notes.txt'}": "is not a SQLite database",
        f"sqlite:///{tmp_path / 'missing' / 'mlflow.db'}": "does not exist",
        "http://user:pw@:5000": "names no host",
    }
    wrong = []
    with FakeServer() as server:
        for uri, says in uris.items():
            args = ["run", "zero-shot", "--limit", "1", "--lm", "openai/fake-uri", "--api-base", server.url]
            code = main([*args, "--track", uri, "--out", str(tmp_path / "runs")])
            err = capsys.readouterr().err.strip()
            if code != 2 or says not in " ".join(err.split()) or len(unwrapped(err)) != 1 or "pw@" in err:
                wrong.append(f"{uri}: exit {code}: {err[:300]}")
        assert server.counts["requests"] == 0
    assert not wrong, "\n".join(wrong)
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "mlflow.db").exists()


def test_a_stop_while_logging_to_a_slow_tracker_names_the_folder_written(tmp_path: Path) -> None:
    """SIGTERM while the tracker holds the request: the run folder is named (before: "no run folder was written")."""
    import signal
    import subprocess
    import sys

    import warm

    arrived = threading.Event()
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def _hold(self) -> None:
            arrived.set()
            release.wait(30)
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST = _hold

        def log_message(self, *args: Any) -> None:
            pass

    tracker = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=tracker.serve_forever, daemon=True).start()
    try:
        with FakeServer() as server:
            args = ["run", "zero-shot", "--limit", "2", "--lm", "openai/fake-slow", "--api-base", server.url,
                    "--track", f"http://127.0.0.1:{tracker.server_port}", "--out", str(tmp_path / "runs")]  # fmt: skip
            env = {**os.environ, "COURTROOM_STOP_GRACE": "0.2"}
            proc = warm.Popen([sys.executable, "-m", "courtroom.cli", *args], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env)  # fmt: skip
            assert arrived.wait(60), proc.communicate()
            proc.send_signal(signal.SIGTERM)
            _, err = proc.communicate(timeout=60)
    finally:
        release.set()
        tracker.shutdown()
        tracker.server_close()
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert (run_dir / "summary.json").is_file()
    assert proc.returncode == 143, err
    assert "no run folder was written" not in err and f"saved in {run_dir}" in " ".join(err.split()), err


def test_track_keeps_mlflows_view_run_lines_off_stdout(
    tracked: dict[str, Any], tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """MLflow prints `View run ... at: URL` on stdout for a tracking server: `--format csv` must still parse."""
    import io

    import pandas as pd
    from mlflow.tracking._tracking_service import client as service

    # The SQLite store taken for a server (RestStore), so MLflow's own URL lines run as they do over http.
    monkeypatch.setattr(service, "RestStore", object)
    monkeypatch.setattr(service, "get_workspace_url", lambda: "http://mlflow.test:5000")
    with FakeServer() as server:
        done = cli("compare", "--frameworks", "zero-shot,cot", "--limit", "2", "--lm", "openai/fake-csv",
                   "--api-base", server.url, "--track", tracked["store"], "--format", "csv",
                   "--out", str(tmp_path))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "View run" not in done.stdout and "View experiment" not in done.stdout, done.stdout
    table = pd.read_csv(io.StringIO(done.stdout))
    assert len(table) >= 2 and "accuracy" in table.columns


def test_track_says_on_stderr_which_mlflow_run_holds_the_results(
    tracked: dict[str, Any], tmp_path: Path, cli: Any
) -> None:
    """One line on stderr names the MLflow run (and the store it is in); stdout stays the command's own."""
    with FakeServer() as server:
        done = cli("run", "zero-shot", "--limit", "2", "--lm", "openai/fake-said", "--api-base", server.url,
                   "--track", tracked["store"], "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    [line] = [x for x in done.stderr.splitlines() if x.startswith("tracked: MLflow run ")]
    run_id = line.split()[3]
    found = tracked["client"].get_run(run_id)
    assert found.data.tags["courtroom.id"] == run_dir.name
    assert line == f"tracked: MLflow run {run_id} in {tracked['store']}"
    assert "tracked:" not in done.stdout
