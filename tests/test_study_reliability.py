"""Studies: failed trials are shown with their error, configuration errors stop the study, the
median pruner prunes, and workers that start together on a fresh SQLite file both finish."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import warm
from _output import unwrapped

from courtroom.cli import main
from courtroom.errors import ConfigError
from courtroom.optimize.study import StudyConfig, run_study
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]


def _data(n: int) -> list[Any]:
    import dspy

    return [
        dspy.Example(case=f"case {i}: True and {v}", label=str(v), id=f"c{i}").with_inputs("case")
        for i, v in zip(range(n), [True, False] * n, strict=False)
    ]


def test_two_workers_on_a_fresh_sqlite_file_both_finish(tmp_path):
    with FakeServer(latency=0.05) as server:
        for round_ in range(2):
            db = tmp_path / f"fresh-{round_}.db"
            args = [
                "study",
                "jot",
                "--trials",
                "4",
                "--dev-limit",
                "2",
                "--train-limit",
                "2",
                "--storage",
                f"sqlite:///{db}",
                "--lm",
                "openai/fake-study",
                "--api-base",
                server.url,
                "--seed",
                str(round_),
                "--out",
                str(tmp_path / f"report-{round_}"),
            ]
            # Forked warm, the two start within a millisecond of each other: the creation race, in each
            # one's first steps on the storage, is closer than between cold processes (their imports
            # stagger them by up to seconds).
            procs = [
                warm.Popen(
                    [sys.executable, "-m", "courtroom.cli", *args],
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(2)
            ]
            outs = [p.communicate(timeout=300) for p in procs]
            for p, (_out, err) in zip(procs, outs, strict=True):
                assert p.returncode == 0, err
            import optuna

            study = optuna.load_study(study_name="jot-boolean_expressions", storage=f"sqlite:///{db}")
            # The two workers share --trials 4 (each may finish the trial it started: one over at most);
            # a trial that drew a configuration already run took its value instead, uncounted.
            ran = [t for t in study.trials if "duplicate_of" not in t.user_attrs]
            states = [t.state.name for t in ran]
            assert 4 <= len(states) <= 5 and set(states) <= {"COMPLETE", "PRUNED"}, states
            assert len({t.user_attrs["config_key"] for t in ran}) == len(ran), "no configuration evaluated twice"


def _config(tmp_path: Path, **kw: Any) -> StudyConfig:
    return StudyConfig(framework="jot", storage=f"sqlite:///{tmp_path / 's.db'}", dev=8, chunks=4, **kw)


def test_failed_trials_are_counted_and_shown_with_their_error(tmp_path, capsys, monkeypatch):
    from courtroom.optimize.study import _trials as trials_mod

    real = trials_mod.build_program
    calls = {"n": 0}

    def flaky(*a: Any, **k: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("the model server went away")
        return real(*a, **k)

    monkeypatch.setattr(trials_mod, "build_program", flaky)
    with FakeServer() as server:
        code = main(
            [
                "study",
                "jot",
                "--trials",
                "3",
                "--dev-limit",
                "2",
                "--train-limit",
                "2",
                "--storage",
                f"sqlite:///{tmp_path / 'f.db'}",
                "--lm",
                "openai/fake-fail",
                "--api-base",
                server.url,
                "--out",
                str(tmp_path / "rep"),
            ]
        )
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "RuntimeError: the model server went away" in out
    assert "1 trial(s) failed" in out
    assert "Traceback" not in err


def test_a_configuration_error_stops_the_study_command_in_one_line(tmp_path, capsys, monkeypatch):
    from courtroom.optimize.study import _trials as trials_mod

    def broken(*a: Any, **k: Any) -> Any:
        raise ConfigError("jot: n_loops must be >= 1")

    monkeypatch.setattr(trials_mod, "build_program", broken)
    with FakeServer() as server:
        code = main(
            [
                "study",
                "jot",
                "--trials",
                "3",
                "--dev-limit",
                "2",
                "--train-limit",
                "2",
                "--storage",
                f"sqlite:///{tmp_path / 'c.db'}",
                "--lm",
                "openai/fake-conf",
                "--api-base",
                server.url,
            ]
        )
    _, err = capsys.readouterr()
    assert code != 0 and "n_loops must be >= 1" in err and "trial 0" in err
    assert len(unwrapped(err.strip())) == 1 and "Traceback" not in err


def test_a_configuration_error_stops_the_study(tmp_path, monkeypatch):
    from courtroom.optimize.study import _trials as trials_mod

    def broken(*a: Any, **k: Any) -> Any:
        raise ConfigError("jot: n_loops must be >= 1")

    monkeypatch.setattr(trials_mod, "build_program", broken)
    from courtroom.models.lms import resolve_roles

    lm = oracle_lm({}, LABELS)
    with pytest.raises(ConfigError, match="n_loops must be >= 1"):
        run_study(_config(tmp_path, trials=3), lms=resolve_roles(lm), trainset=_data(2), devset=_data(8), labels=LABELS)
    import optuna

    study = optuna.load_study(study_name="jot-boolean_expressions", storage=f"sqlite:///{tmp_path / 's.db'}")
    assert len(study.trials) == 1 and study.trials[0].state.name == "FAIL"  # stopped at the first


def test_the_median_pruner_prunes_a_bad_trial(tmp_path):
    import optuna

    dev = _data(8)
    gold = {e.case: e.label for e in dev}
    good, bad = oracle_lm(gold, LABELS, accuracy=1.0), oracle_lm(gold, LABELS, accuracy=0.0, model="fake/bad")
    from courtroom.models.lms import resolve_roles

    config = _config(tmp_path, trials=0, models=["good", "bad"], pruner="median")  # the race: test_study_race
    outcome = run_study(
        config,
        lms=resolve_roles(good),
        model_objects={"good": good, "bad": bad},
        trainset=_data(2),
        devset=dev,
        labels=LABELS,
    )
    study = outcome.study
    from courtroom.optimize.study.spaces import default_params

    default = default_params("jot", outcome.space)
    everyone = {k: "good" for k in default if k.startswith("model")}
    for _ in range(3):
        study.enqueue_trial(default | everyone)
    study.enqueue_trial(default | {k: "bad" for k in everyone})
    config.trials = 5
    run_study(
        config,
        lms=resolve_roles(good),
        model_objects={"good": good, "bad": bad},
        trainset=_data(2),
        devset=dev,
        labels=LABELS,
    )
    study = optuna.load_study(study_name=config.name, storage=config.storage)
    states = [t.state.name for t in study.trials]
    assert states[:4] == ["COMPLETE"] * 4, states
    last = study.trials[4]
    assert last.state.name == "PRUNED" and last.user_attrs["examples"] < len(dev), (states, last.user_attrs)


def test_a_trial_with_too_many_failed_examples_stops_the_study(tmp_path):
    from courtroom.eval.status import TooManyFailures
    from courtroom.models.lms import resolve_roles

    with FakeServer(faults={"garbage": 1.0}) as server:
        with pytest.raises(TooManyFailures, match=r"trial 0: 4 of 4 examples failed \(100% > --fail-on-error 0.1\)"):
            run_study(
                StudyConfig(
                    framework="parallel-vote",  # no demos to make first: the trial itself fails
                    storage=f"sqlite:///{tmp_path / 'g.db'}",
                    dev=4,
                    trials=3,
                    prune=False,
                    fail_on_error=0.1,
                ),
                lms=resolve_roles(server.lm("openai/garbage-study")),
                trainset=_data(2),
                devset=_data(4),
                labels=LABELS,
            )


def _open_after(url: str, barrier: Any, out: Any) -> None:
    from courtroom.optimize.study._storage import open_storage

    barrier.wait()
    try:
        open_storage(url)
        out.put("ok")
    except Exception as exc:  # noqa: BLE001 - the message is the result
        out.put(str(exc))


def test_processes_opening_one_fresh_sqlite_file_together_all_open_it(tmp_path: Path) -> None:
    # A worker and a reader (`courtroom studies`, a test's poll) open a fresh file at the same moment:
    # Optuna inserts the schema's version row in each, and the loser's insert broke its key. Before:
    # "cannot reach storage ...: UNIQUE constraint failed: alembic_version.version_num" in about
    # one open of five.
    import multiprocessing

    context = multiprocessing.get_context("fork")
    results = []
    for round_ in range(4):
        url = f"sqlite:///{tmp_path}/fresh-{round_}.db"
        barrier, out = context.Barrier(4), context.Queue()
        procs = [context.Process(target=_open_after, args=(url, barrier, out)) for _ in range(4)]
        for p in procs:
            p.start()
        results += [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
    assert [r for r in results if r != "ok"] == []
