"""One study, two worker processes, a real PostgreSQL server on loopback (the session's, tests/conftest.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import warm

pytest.importorskip("psycopg2", reason="pip install 'courtroom[postgres]'")


WORKER = textwrap.dedent("""
    import sys
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study import StudyConfig, run_study
    from courtroom.testing import oracle_lm

    storage, name, trials = sys.argv[1], sys.argv[2], int(sys.argv[3])
    train = load_task("boolean_expressions", split="train", limit=4).examples
    dev = load_task("boolean_expressions", split="dev", limit=6).examples
    labels = ["True", "False"]
    gold = {e.case: e.label for e in train + dev}
    lm = oracle_lm(gold, labels, accuracy={"judge": 0.8, "default": 0.7}, cache=True)
    config = StudyConfig("jot", trials=trials, storage=storage, study_name=name, space={"n_loops": "1:3"},
                         concurrency=2)
    out = run_study(config, lms=RoleLMs({"default": lm}), trainset=train, devset=dev, labels=labels)
    best = out.best[0]
    print(f"best {best.number} {best.value}")
""")


def test_two_workers_share_one_postgres_study(postgres: str, tmp_path: Path) -> None:
    from courtroom.optimize.study import StudyConfig, run_study

    name, per_worker = "distributed-jot", 4
    config = StudyConfig("jot", storage=postgres, study_name=name, trials=0, space={"n_loops": "1:3"})
    run_study(config)  # create the study once, before the workers start
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    workers = [
        warm.Popen(  # forked warm: the two start at once, the closest race
            [sys.executable, str(script), postgres, name, str(2 * per_worker)],  # --trials: what the study holds
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [w.communicate(timeout=900) for w in workers]  # a hang guard, not a speed test
    for w, (_, err) in zip(workers, outputs, strict=True):
        assert w.returncode == 0, err[-2000:]

    final = run_study(config)
    trials = final.study.trials
    # the workers share the count; each may finish the trial it started when the other reached it
    assert 2 * per_worker <= len([t for t in trials if "duplicate_of" not in t.user_attrs]) <= 2 * per_worker + 1
    assert sorted(t.number for t in trials) == list(range(len(trials))), "every trial recorded exactly once"
    assert len({t._trial_id for t in trials}) == len(trials)
    assert all(t.state.name in ("COMPLETE", "PRUNED") for t in trials)
    assert sum(bool(t.user_attrs.get("paper_default")) for t in trials) == 1
    assert len({t.user_attrs["worker"] for t in trials}) == 2, "both workers ran trials"
    done = [t for t in trials if t.state.name == "COMPLETE"]
    best = final.best[0]
    assert best.value == max(t.value for t in done)
    reported = [line.split() for out, _ in outputs for line in out.splitlines() if line.startswith("best ")]
    assert len(reported) == 2 and all(float(v) <= best.value for _, _, v in reported)
