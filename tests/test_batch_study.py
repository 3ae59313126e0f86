"""``--batch`` beyond run and compare: a study's trial scoring, its held-out test scoring, ``score``, compile.

Against the fake server's OpenAI Files and Batches endpoints: the fake counts live chat requests
(``counts["requests"]``) apart from batch lines (``counts["batch_lines"]``), so "scored through
batches" is the server's word, and a live study at the same seed is the reference for the results.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest
from _oracle import oracle
from _output import unwrapped

from courtroom.testing import FakeServer
from courtroom.testing._fakes import answer_for_schema


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")


def test_study_scores_its_trials_and_the_winner_in_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every trial's dev cases and the winner's test cases go out as batches; the study equals a live one."""
    from courtroom.api import study

    outcomes = {}
    for mode in ("live", "batch"):
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
        with FakeServer(oracle(), turnaround=0.02) as server:
            outcome = study(
                "self-consistency",
                lm="openai/m",
                api_base=server.url,
                trials=1,  # a second trial (k_samples=1) reads the first's samples from the cache
                dev_limit=6,
                train_limit=3,
                test_limit=4,
                storage=f"sqlite:///{tmp_path}/{mode}.db",
                out=str(tmp_path / mode),
                batch=mode == "batch",
                progress=False,
            )
        outcomes[mode] = SimpleNamespace(outcome=outcome, server=server)
    live, batch = outcomes["live"], outcomes["batch"]
    assert batch.server.counts["requests"] == 0  # nothing went out live
    assert live.server.counts["batch_lines"] == 0 and live.server.counts["requests"] > 0
    assert batch.server.sent == live.server.sent  # the same requests, each as often as live
    # One batch for the preparation on train, one per chunk of dev cases (3 of 2), one for the test cases.
    assert len(batch.server.batches.created) == 4 + 1
    trials = {
        mode: [(t.params, t.values, t.user_attrs.get("sent")) for t in o.outcome.study.trials]
        for mode, o in outcomes.items()
    }
    assert trials["batch"] == trials["live"]
    assert batch.outcome.test == live.outcome.test and batch.outcome.test  # the held-out scoring too
    assert batch.outcome.study.trials[0].user_attrs["examples"] == 6


def test_study_batch_refusals(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """A model without a batch API, or worker threads, are refused in one line before anything is sent."""
    storage = f"sqlite:///{tmp_path}/s.db"
    done = cli("study", "self-consistency", "--lm", "local", "--trials", "1", "--batch", "--storage", storage)
    assert done.returncode == 2 and "--batch: local has no batch API" in done.stderr
    assert len(unwrapped(done.stderr.strip())) == 1
    with FakeServer(oracle()) as server:
        done = cli("study", "self-consistency", "--lm", "openai/m", "--api-base", server.url, "--trials", "2",
                   "--workers", "2", "--batch", "--storage", storage)  # fmt: skip
    assert done.returncode == 2 and "--batch runs one trial at a time" in done.stderr
    assert server.counts["requests"] == server.counts["batch_lines"] == 0


FIELDS = ["--text-field", "text", "--label-field", "label", "--labels", "yes,no"]


def _lean(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    leans = re.findall(r"leans (yes|no)", prompt)
    values = {n: leans[-1] for n, p in (schema.get("properties") or {}).items() if leans and p.get("enum")}
    return answer_for_schema(schema, values, "reasoning")


def _csv(path: Path, n: int, word: str) -> Path:
    rows = [{"text": f"{word} {i}: the evidence leans {'yes' if i % 3 else 'no'}", "label": "yes" if i % 2 else "no"}
            for i in range(n)]  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_compile_stays_live_and_score_goes_in_batches(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``compile --batch`` says in one line that it runs live; ``score PROGRAM --batch`` scores in batches."""
    train, fresh = _csv(tmp_path / "train.csv", 12, "claim"), _csv(tmp_path / "fresh.csv", 6, "new claim")
    program = tmp_path / "program.json"
    with FakeServer(responder=_lean, turnaround=0.02) as server:
        done = cli("compile", "zero-shot", "--dataset", str(train), *FIELDS, "--optimizer", "labeled", "--opt",
                   "k=2", "--train-limit", "4", "--dev-limit", "3", "--lm", "openai/m", "--api-base", server.url,
                   "-o", str(program), "--batch")  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "--batch: compile's optimizers stay live (they are interactive)" in done.stderr
        assert server.counts["batch_lines"] == 0 and server.counts["requests"] > 0
        scored = {}
        for mode in ("live", "batch"):
            monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
            before = dict(server.counts)
            extra = ["--batch"] if mode == "batch" else []
            done = cli("score", str(program), "--dataset", str(fresh), *FIELDS, "--api-base", server.url,
                       "--out", str(tmp_path / mode), "--no-matched-baselines", *extra)  # fmt: skip
            assert done.returncode == 0, done.stderr
            scored[mode] = (
                done.stdout.split("accuracy", 1)[1].split("\n", 1)[0],
                {k: server.counts[k] - before.get(k, 0) for k in ("requests", "batch_lines")},
            )
    assert scored["batch"][1] == {"requests": 0, "batch_lines": 6}
    assert scored["live"][1] == {"requests": 6, "batch_lines": 0}
    assert scored["batch"][0] == scored["live"][0]


def test_dry_run_counts_batch_rounds_and_wall_time(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--dry-run --batch``: the rounds each design sends (what a batch run then records) and rounds x turnaround."""
    monkeypatch.setenv("COURTROOM_BATCH_TURNAROUND", "120")
    shared = ["--lm", "openai/m", "--limit", "4", "--train-limit", "3"]
    common = ["compare", "--no-matched-baselines", *shared, "--batch"]
    with FakeServer(oracle(), turnaround=0.01) as server:
        dry = cli(*common, "--frameworks", "jot,self-consistency,settle", "--api-base", server.url, "--dry-run")
        assert dry.returncode == 0, dry.stderr
        lines = dry.stdout.splitlines()
        rounds = next(x for x in lines if x.startswith("batch rounds"))
        wall = next(x for x in lines if x.startswith("expected wall time"))
        planned = dict(re.findall(r"(jot|self-consistency) (\d+)\b", rounds.split(": ", 1)[1]))
        assert re.search(r"settle \d+ \.\. \d+", rounds)  # panel only .. panel and trial
        assert f"jot {int(planned['jot']) * 2} min" in wall and "rounds x 2 min per batch" in wall
        assert server.counts["requests"] == server.counts["batch_lines"] == 0
        for design in planned:  # a run of each design records as many batches as the dry run said
            done = cli("run", design, *shared, "--batch", "--api-base", server.url, "--out", str(tmp_path / design))
            assert done.returncode == 0, done.stderr
    from courtroom.models.batch import recorded

    made = {design: str(len(recorded(next((tmp_path / design).iterdir())))) for design in planned}
    assert made == planned and set(planned) == {"jot", "self-consistency"}
    live = cli(*common[:-1], "--frameworks", "jot", "--api-base", "http://127.0.0.1:9/v1", "--dry-run")
    assert live.returncode == 0 and "batch rounds" not in live.stdout


def test_each_batch_has_one_progress_line(tmp_path: Path, cli: Callable[..., Any]) -> None:
    """In a pipe: a line per batch each time its status changes (never per poll); on a terminal: a bar per batch."""
    with FakeServer(oracle(), turnaround=0.1) as server:
        done = cli("run", "jot", "--lm", "openai/m", "--limit", "4", "--loops", "1", "--batch", "--api-base",
                   server.url, "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    seen: dict[str, list[tuple[str, str, str]]] = {}
    for rnd, batch_id, n, status, finished, total in re.findall(
        r"batch r(\d+) (\S+): (\d+) requests, (\w+), (\d+)/(\d+) done", done.stderr
    ):
        assert n == total
        seen.setdefault(batch_id, []).append((rnd, status, finished))
    assert list(seen) == [b for b, _ in server.batches.created]  # every batch, in the order submitted
    sizes = dict(server.batches.created)
    for batch_id, states in seen.items():
        statuses = [s for _, s, _ in states]
        assert len(statuses) == len(set(statuses))  # only changes are printed, though it was polled many times
        assert statuses[0] == "validating" and statuses[-1] == "completed"
        assert states[-1][2] == str(sizes[batch_id])
    assert [states[0][0] for states in seen.values()] == [str(r) for r in range(1, len(seen) + 1)]

    from io import StringIO

    from rich.console import Console

    from courtroom.models.batch import Batch
    from courtroom.reporting.progress import ProgressDisplay

    with ProgressDisplay(console=Console(file=StringIO(), force_terminal=True), interactive=True) as display:
        batch = Batch("batch_1", None, "m", 2, {}, {"a": "k1", "b": "k2"})  # type: ignore[arg-type]
        display.batch(batch)
        batch.status, batch.done = "in_progress", 1
        display.batch(batch)
        assert display._bar is not None
        (task,) = [t for t in display._bar.tasks if t.description == "batch r2"]  # one line, updated
        assert (task.completed, task.total, task.fields["status"]) == (1, 2, "2 requests, in_progress")


def test_a_case_waiting_on_another_cases_precedent_counts_as_waiting(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Courtroom-LLM cases that cite a precedent another case is explaining wait for it as waiting requests.

    Uncounted, they held a batch back until the collector's deadline (30 s by default: 36 s for this
    run, 7 s now); here the deadline is 300 s, so a stall would show.
    """
    import time

    monkeypatch.setenv("COURTROOM_BATCH_WAIT", "300")

    from courtroom.models.batch import recorded

    start = time.monotonic()
    with FakeServer(oracle(), turnaround=0.01) as server:
        done = cli("run", "courtroom-llm", "--lm", "openai/m", "--limit", "8", "--train-limit", "3", "--batch",
                   "--api-base", server.url, "--out", str(tmp_path / "runs"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - start < 150
    rounds = [r["round"] for r in recorded(next((tmp_path / "runs").iterdir()))]
    assert len(set(rounds)) == 3 and server.counts["requests"] == 0
