"""A study's storage under faults: a torn journal, a full disk, passwords, the PostgreSQL driver.

* A journal whose last line was cut off (a full disk, a kill mid-append) is repaired as run files
  are: the fragment goes to ``FILE.torn-N``, one line says so, and the study goes on, then and later.
* A full disk under a SQLite study: exit 2, one line naming the storage, "disk full" and the resume.
* A storage URL's password is never written or printed: every writer goes through one redaction.
* ``postgresql://`` as documented works with the driver the ``[postgres]`` extra installs.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
import warm
from _output import unwrapped

LABELS = ["True", "False"]


def _study(storage: str, trials: int = 1, **kw: Any) -> Any:
    """``trials`` trials of a small JoT study on ``storage``, in this process, on an oracle model."""
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import RoleLMs
    from courtroom.optimize.study import StudyConfig, run_study
    from courtroom.testing import oracle_lm

    train = load_task("boolean_expressions", split="train", limit=2).examples
    dev = load_task("boolean_expressions", split="dev", limit=2).examples
    gold = {e.case: e.label for e in train + dev}
    lm = oracle_lm(gold, LABELS, accuracy=0.7, model=f"fake/storage-{time.time_ns()}")
    config = StudyConfig("jot", storage=storage, study_name="s", trials=trials, space={"n_loops": "1:2"}, **kw)
    return run_study(config, lms=RoleLMs({"default": lm}), trainset=train, devset=dev, labels=LABELS)


def test_a_torn_journal_line_is_set_aside_and_the_study_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    journal = tmp_path / "study.journal"
    storage = f"journal:{journal}"
    _study(storage)
    whole = journal.read_bytes()
    journal.write_bytes(whole + whole[-40:-1])  # a record cut off mid-append: no newline
    caplog.clear()
    # before: the next record glued onto the fragment, and this run and every later one died
    # with JSONDecodeError
    _study(storage, trials=2)  # --trials counts the study's trials: one more
    said = [r.getMessage() for r in caplog.records if "cut-off line" in r.getMessage()]
    assert len(said) == 1 and str(journal) in said[0] and "study.journal.torn-1" in said[0], said
    assert "\n" not in said[0] and "the study goes on" in said[0]
    assert (tmp_path / "study.journal.torn-1").read_bytes() == whole[-40:-1]
    caplog.clear()
    trials = _study(storage, trials=3).study.trials  # a third run: nothing to repair, the study goes on
    assert not [r for r in caplog.records if "cut-off line" in r.getMessage()]
    ran = [t for t in trials if "duplicate_of" not in t.user_attrs]  # a repeated configuration is not run again
    assert [t.state.name for t in ran] == ["COMPLETE"] * 3
    for line in journal.read_bytes().splitlines(keepends=True):
        assert line.endswith(b"\n")
        json.loads(line)  # every record whole


def test_a_journal_damaged_inside_is_named_with_the_fix(tmp_path: Path) -> None:
    from courtroom.errors import ConfigError
    from courtroom.optimize.study._storage import open_storage

    journal = tmp_path / "x.journal"
    _study(f"journal:{journal}", trials=0)
    first, rest = journal.read_bytes().split(b"\n", 1)
    journal.write_bytes(first + b"\n" + b'{"op_co' + rest)  # glued by an old version: damaged inside
    with pytest.raises(ConfigError, match=r"study journal .*x\.journal is damaged.*move it aside"):
        open_storage(f"journal:{journal}")


# -- the PostgreSQL driver ------------------------------------------------------------------------------


def test_the_documented_postgresql_url_works_with_the_extras_driver(postgres: str) -> None:
    # The session's server is reached as postgresql+psycopg2://; the docs write postgresql://, which
    # SQLAlchemy 2.1 reads as psycopg 3 (not installed by the [postgres] extra): before, "cannot reach".
    import optuna

    from courtroom.optimize.study._storage import open_storage

    documented = postgres.replace("postgresql+psycopg2://", "postgresql://")
    assert documented.startswith("postgresql://")
    study = optuna.create_study(storage=open_storage(documented), study_name=f"bare-{time.time_ns()}")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=1)
    assert len(study.trials) == 1


def test_a_missing_postgresql_driver_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from courtroom.errors import ConfigError
    from courtroom.optimize.study._storage import open_storage

    for module in ("psycopg2", "psycopg", "pg8000"):
        monkeypatch.setitem(sys.modules, module, None)  # as if not installed
    with pytest.raises(ConfigError) as none:
        open_storage("postgresql://me:s3cret@db.example/studies")
    assert str(none.value) == (
        "a PostgreSQL storage needs a driver (psycopg2 or psycopg) and none is installed: "
        "pip install 'courtroom[postgres]'"
    )
    with pytest.raises(ConfigError) as named:
        open_storage("postgresql+psycopg://me:s3cret@db.example/studies")
    line = str(named.value)
    assert "'psycopg'" in line and "pip install 'psycopg[binary]'" in line and "s3cret" not in line
    assert "\n" not in line


# -- passwords --------------------------------------------------------------------------------------------

PASSWORD = "pgS3cretPW"


def _database_text(url: str) -> str:
    """Every row of every table of the study database, as text."""
    import psycopg2

    with psycopg2.connect(url.replace("postgresql+psycopg2://", "postgresql://")) as conn, conn.cursor() as cur:
        cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        text = []
        for (table,) in cur.fetchall():
            cur.execute(f'SELECT CAST(t AS text) FROM "{table}" t')
            text += [row[0] for row in cur.fetchall()]
    return "\n".join(text)


def test_no_storage_password_in_any_file_database_or_line_a_study_writes(
    postgres: str, tmp_path: Path, courtroom_cli: Any
) -> None:
    from courtroom.testing import FakeServer

    # The session's server trusts loopback, so any password gets in: it only has to be kept secret.
    storage = postgres.replace("postgres@", f"postgres:{PASSWORD}@").replace("postgresql+psycopg2://", "postgresql://")
    name = f"secret-{time.time_ns()}"
    study = [
        "study", "jot", "--task", "boolean_expressions", "--dev-limit", "2", "--train-limit", "2", "--no-prune",
        "--space", "n_loops=1:2", "--lm", "openai/storage-secret", "--storage", storage, "--study-name", name,
    ]  # fmt: skip
    with FakeServer() as server:
        study += ["--api-base", server.url]
        done = courtroom_cli(
            *study, "--trials", "1", "--out", str(tmp_path / "report"), "--export-best", str(tmp_path / "best.json"),
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        # One trial costs up to 12 calls: of the two owed, the first fits, the budget stops the second.
        stopped = courtroom_cli(*study, "--trials", "3", "--max-calls", "12", cwd=tmp_path)
    assert stopped.returncode == 3, stopped.stderr
    budget_line = unwrapped(stopped.stderr.strip())[-1]
    assert "--storage " in budget_line and f"postgres:PASSWORD@{postgres.split('@', 1)[1]}" in budget_line
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert {"study.json", "best.json"} <= {p.name for p in files}
    for path in files:
        assert PASSWORD.encode() not in path.read_bytes(), path  # before: study.json and best.json
    for out in (done, stopped):
        assert PASSWORD not in out.stdout + out.stderr  # before: the budget line's resume command
    database = _database_text(postgres)
    assert name in database and PASSWORD not in database  # before: three copies in the study's attributes


def test_every_writer_of_a_storage_url_redacts_it_with_the_one_function() -> None:
    from courtroom._secrets import without_password
    from courtroom.cost.budget import Budget
    from courtroom.cost.study_budget import stopped_study
    from courtroom.errors import ConfigError
    from courtroom.optimize.study import StudyConfig, study_config_dict
    from courtroom.optimize.study._storage import open_storage, storage_failure
    from courtroom.spec import Experiment

    url = f"postgresql://me:{PASSWORD}@db.example:5432/studies?sslmode=require"
    assert without_password(url) == "postgresql://me:PASSWORD@db.example:5432/studies?sslmode=require"
    assert without_password(f"postgresql://db.example/s?user=me&password={PASSWORD}") == (
        "postgresql://db.example/s?user=me&password=PASSWORD"
    )
    for plain in ("sqlite:///studies.db", "journal:/tmp/x.journal", "x.journal", "postgresql://me@db/s"):
        assert without_password(plain) == plain

    spec = Experiment.build("study", framework="jot", task="boolean_expressions", storage=url)
    config = StudyConfig("jot", storage=url, spec=spec.to_dict())
    written = {
        "spec (study.json, the study's attributes, the recipe)": json.dumps(spec.to_dict()),
        "study.json's config": json.dumps(study_config_dict(config)),
        "the budget line": str(stopped_study(Budget(max_calls=1), config, 0)),
        "a storage failure": storage_failure(url, OSError("connection refused")),
    }
    for what, text in written.items():
        assert PASSWORD not in text and "me:PASSWORD@db.example" in text, what
    with pytest.raises(ConfigError) as unsupported:
        open_storage(url.replace("postgresql", "redis"))
    assert PASSWORD not in str(unsupported.value)


# -- a full disk --------------------------------------------------------------------------------------------

FULL_DISK_WORKER = """
import resource, sys

from courtroom.models.cache import configure_cache

configure_cache()  # the LM cache is open before the disk fills: only the study's storage is refused
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from courtroom.cli import main


sys.exit(main(sys.argv[2:]))
"""


def test_a_full_disk_under_a_sqlite_study_names_the_storage_and_the_resume(tmp_path: Path, courtroom_cli: Any) -> None:
    import os
    import shlex
    import sys

    from courtroom.testing import FakeServer

    db = tmp_path / "s.db"
    env = os.environ | {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    script = tmp_path / "full.py"
    script.write_text(FULL_DISK_WORKER)
    with FakeServer() as server:
        args = [
            "study", "jot", "--task", "boolean_expressions", "--dev-limit", "2", "--train-limit", "1",
            "--space", "n_loops=1", "--lm", "openai/full-disk", "--api-base", server.url, "--no-prune",
            "--storage", f"sqlite:///{db}", "--study-name", "s", "--out", str(tmp_path / "report"),
        ]  # fmt: skip
        assert courtroom_cli(*args, "--trials", "0").returncode == 0  # the study exists; the disk fills next
        # Past 8 KB no file may grow: every page of the study's database lies beyond.
        full = warm.run(
            [sys.executable, str(script), "8192", *args, "--trials", "2"],
            capture_output=True, text=True, env=env, timeout=300,
        )  # fmt: skip
        lines = [x for x in unwrapped(full.stderr) if x.startswith("error:")]
        # before: exit 1, "AssertionError: Should not reach." (the cause only under --debug)
        assert full.returncode == 2, full.stderr[-3000:]
        assert len(lines) == 1 and "Traceback" not in full.stderr, full.stderr[-3000:]
        line = lines[0]
        print(f"full disk under a SQLite study: {line}")
        assert f"the study storage {db}" in line and "the disk is full" in line, line
        resume = shlex.split(line.split("resume with: ", 1)[1])
        assert resume == ["courtroom", *args, "--trials", "2"], resume  # the same command continues the study
        resumed = courtroom_cli(*resume[1:])
    assert resumed.returncode == 0, resumed.stderr
    import optuna

    from courtroom.optimize.study._storage import open_storage

    trials = optuna.load_study(study_name="s", storage=open_storage(f"sqlite:///{db}")).trials
    states = [t.state.name for t in trials if "duplicate_of" not in t.user_attrs]  # a repeat is not run again
    assert states.count("COMPLETE") == 2 and "RUNNING" not in states, states


def test_a_storage_that_fails_as_a_trial_is_told_is_named_not_an_assertion(tmp_path: Path) -> None:
    # Optuna's tell failing (the disk filled as the trial finished) surfaced as its own
    # "AssertionError: Should not reach.", the database's error hidden behind it (exit 1).
    import sqlite3

    import optuna
    from optuna.exceptions import StorageInternalError

    from courtroom import _stop
    from courtroom.errors import ConfigError
    from courtroom.optimize.study import StudyConfig
    from courtroom.optimize.study._workers import optimize_owed

    class FullDisk(optuna.storages.InMemoryStorage):
        def set_trial_state_values(self, trial_id: int, state: Any, values: Any = None) -> bool:
            if state.is_finished():
                try:
                    raise sqlite3.OperationalError("database or disk is full")
                except sqlite3.OperationalError as exc:
                    raise StorageInternalError("An exception is raised during the commit.") from exc
            return super().set_trial_state_values(trial_id, state, values)

    db = tmp_path / "s.db"
    study = optuna.create_study(storage=FullDisk())
    config = StudyConfig("jot", storage=f"sqlite:///{db}", trials=2)
    _stop.note_command(["study", "jot", "--storage", f"sqlite:///{db}", "--trials", "2"])
    try:
        with pytest.raises(ConfigError) as err:
            optimize_owed(study, lambda t: t.suggest_float("x", 0, 1), config, 2, 1)
    finally:
        _stop.reset()
    assert str(err.value) == (
        f"cannot write the study storage {db} (database or disk is full): the disk is full; free some space, "
        f"then resume with: courtroom study jot --storage sqlite:///{db} --trials 2"
    )


def test_a_journal_write_that_did_not_land_is_one_line_naming_the_journal(
    tmp_path: Path, courtroom_cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A full disk under a journal study: Optuna reads back no trace of its write (before: AssertionError, exit 1)."""
    from optuna.storages.journal import JournalFileBackend

    from courtroom.testing import FakeServer

    monkeypatch.setattr(JournalFileBackend, "append_logs", lambda self, logs: None)  # the write never lands
    journal = tmp_path / "s.journal"
    with FakeServer() as server:
        args = ["study", "jot", "--trials", "1", "--dev-limit", "2", "--space", "n_loops=1", "--lm", "openai/fake",
                "--api-base", server.url, "--storage", f"journal:{journal}",
                "--out", str(tmp_path / "report")]  # fmt: skip
        done = courtroom_cli(*args)
        assert server.counts["requests"] == 0
    assert done.returncode == 2, done.stderr
    lines = unwrapped(done.stderr.strip())  # one message, wrapped at the terminal's width
    assert len(lines) == 1 and f"cannot write the study journal {journal}" in lines[0], done.stderr


@pytest.mark.parametrize("storage", ["journal:", "journal:  "])
def test_a_journal_storage_with_no_file_is_refused(storage: str, courtroom_cli: Any) -> None:
    done = courtroom_cli("study", "jot", "--trials", "1", "--lm", "openai/x", "--storage", storage)
    assert done.returncode == 2 and "names no journal file" in done.stderr, done.stderr
    assert len(unwrapped(done.stderr.strip())) == 1


def test_a_study_out_onto_its_own_storage_is_refused_before_any_trial(tmp_path: Path, courtroom_cli: Any) -> None:
    """Before: the trial ran, then FileExistsError (exit 1) writing the report folder onto the database."""
    from courtroom.testing import FakeServer

    db = tmp_path / "s.db"
    with FakeServer() as server:
        args = ["study", "jot", "--trials", "1", "--dev-limit", "2", "--space", "n_loops=1", "--lm", "openai/fake",
                "--api-base", server.url]  # fmt: skip
        done = courtroom_cli(*args, "--storage", f"sqlite:///{db}", "--out", str(db))
        assert server.counts["requests"] == 0
    assert done.returncode == 2 and "is the study's storage" in done.stderr, done.stderr
    assert len(unwrapped(done.stderr.strip())) == 1 and not db.exists()
