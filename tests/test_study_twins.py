"""Two worker processes of one study never run the same configuration at once (one waits, then reuses)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest
import warm

from courtroom.testing import FakeServer

WORKER = textwrap.dedent("""
    import sys
    from courtroom.data.tasks import load_task
    from courtroom.models._server_engine import server_engines
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study import StudyConfig, run_study
    from courtroom.testing._fakes import FakeLM

    url, storage, name, loops, trials = sys.argv[1:6]
    train = load_task("boolean_expressions", data="generate", split="train", limit=3).examples
    dev = load_task("boolean_expressions", data="generate", split="dev", limit=6).examples
    lm = FakeLM("openai/fake", **server_engines(url, "sk-fake", 30), num_retries=0)
    lm.api_base = url
    space = {"n_loops": loops, "use_lawyer": "true", "use_prosecutor": "true", "use_feedback": "true"}
    config = StudyConfig(
        "jot", trials=int(trials), storage=storage, study_name=name, space=space, concurrency=2, prune=False
    )
    run_study(config, lms=RoleLMs({"default": lm}), trainset=train, devset=dev, labels=["True", "False"])
""")


def _alone(tmp_path: Path, script: Path, loops: str) -> set[str]:
    """The prompts one configuration sends, run alone (its own study, cache and server)."""
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / f"cache-{loops}")}
    with FakeServer() as server:
        args = [sys.executable, str(script), server.url, f"journal:{tmp_path}/{loops}.journal", "alone", loops, "1"]
        done = warm.run(args, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return set(server.served)


@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_two_workers_never_send_one_configuration_twice(kind: str, tmp_path: Path) -> None:
    from courtroom.optimize.study import StudyConfig, run_study

    storage = f"journal:{tmp_path}/s.journal" if kind == "journal" else f"sqlite:///{tmp_path}/s.db"
    space = {"n_loops": "1:2", "use_lawyer": "true", "use_prosecutor": "true", "use_feedback": "true"}
    run_study(StudyConfig("jot", trials=0, storage=storage, study_name="twins", space=space))  # created once
    script = tmp_path / "worker.py"
    script.write_text(WORKER)
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer(latency=0.03) as server:
        workers = [
            warm.Popen(  # forked warm: the two start at once, the closest race
                [sys.executable, str(script), server.url, storage, "twins", "1:2", "2"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        outputs = [w.communicate(timeout=600) for w in workers]  # a hang guard, not a speed test
        for w, (_, err) in zip(workers, outputs, strict=True):
            assert w.returncode == 0, err[-2000:]
        served = list(server.served)
    # The two configurations share their first round's advocate prompts: while both run, a prompt
    # neither has cached yet may go out from each (there is no lock across processes for one
    # request). A configuration run twice at once would send its own prompts twice too.
    shared = _alone(tmp_path, script, "1") & _alone(tmp_path, script, "2")
    twice = {p for p, n in Counter(served).items() if n > 1}
    assert shared and twice <= shared, f"{len(twice - shared)} prompt(s) of one configuration sent twice"
    final = run_study(StudyConfig("jot", trials=0, storage=storage, study_name="twins", space=space)).study
    ran = [t for t in final.trials if "duplicate_of" not in t.user_attrs]
    assert sorted(t.params["n_loops"] for t in ran) == [1, 2], "each configuration ran once"
    assert all(t.state.name == "COMPLETE" for t in final.trials)
