"""A study over designs on every storage (SQLite, journal file, PostgreSQL): two worker processes
share it, then a third run resumes it; every trial is recorded once and every design's paper
default runs exactly once."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import warm

DESIGNS = "jot,self-consistency,courtroom-llm"
WORKER = textwrap.dedent("""
    import sys
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study.designs import DesignStudyConfig, run_design_study
    from courtroom.testing import oracle_lm

    storage, trials = sys.argv[1], int(sys.argv[2])
    train = load_task("boolean_expressions", split="train", limit=4).examples
    dev = load_task("boolean_expressions", split="dev", limit=4).examples
    labels = ["True", "False"]
    gold = {e.case: e.label for e in train + dev}
    lm = oracle_lm(gold, labels, accuracy=0.7, cache=True)
    config = DesignStudyConfig(frameworks=sys.argv[3].split(","), trials=trials, storage=storage,
                               study_name="designs", cost_objective=True, cost="calls", concurrency=2,
                               space={"courtroom-llm.k_precedents": "0", "jot.n_loops": "1:2"})
    out = run_design_study(config, lms=RoleLMs({"default": lm}), trainset=train, devset=dev, labels=labels)
    print("trials", len(out.study.trials))
""")


@pytest.fixture(params=["sqlite", "journal", "postgresql"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/designs.db"
    if request.param == "journal":
        return f"journal:{tmp_path}/designs.journal"
    return str(request.getfixturevalue("postgres"))  # the session's server (tests/conftest.py)


def _worker(script: Path, storage: str, trials: int, env: dict[str, str]) -> Any:
    return warm.Popen(  # forked warm: the workers start at once, the closest race
        [sys.executable, str(script), storage, str(trials), DESIGNS],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _run(storage: str, trials: int) -> Any:
    """The worker's study, run in this process."""
    namespace: dict[str, Any] = {}
    exec(compile(WORKER.replace("sys.argv[1]", repr(storage)).replace("int(sys.argv[2])", str(trials))
                 .replace("sys.argv[3]", repr(DESIGNS)), "worker", "exec"), namespace)  # fmt: skip
    return namespace["out"].study


def test_two_workers_and_a_resume_share_one_design_study(storage: str, tmp_path: Path) -> None:
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    _run(storage, 0)  # create the study once, before the workers start
    shared = 8  # --trials: what the study holds; the two workers share it
    workers = [_worker(script, storage, shared, env) for _ in range(2)]
    for w in workers:
        _, err = w.communicate(timeout=240)
        assert w.returncode == 0, err[-3000:]
    held = len([t for t in _run(storage, 0).trials if "duplicate_of" not in t.user_attrs])
    assert shared <= held <= shared + 1, "each worker may finish the trial it started when the other reached 8"
    study = _run(storage, held + 2)  # continued: two more trials in this process
    trials = study.trials
    assert sorted(t.number for t in trials) == list(range(len(trials))), "every trial recorded exactly once"
    assert len([t for t in trials if "duplicate_of" not in t.user_attrs]) == held + 2, "a repeat is not counted"
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials), [t.state.name for t in trials]
    defaults = sorted(t.user_attrs["design"] for t in trials if t.user_attrs.get("paper_default"))
    assert defaults == sorted(DESIGNS.split(",")), "each design's paper default ran once"
    workers_seen = {t.user_attrs["worker"] for t in trials}
    assert len(workers_seen) == 3, "both workers and the resumed run ran trials"
    assert all(t.user_attrs["design"] == t.params["design"] for t in trials)
