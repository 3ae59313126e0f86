"""What the Python functions return: typed records; one way to point a program at a server; no stray output."""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import pytest

import courtroom
from courtroom.testing import FakeServer


def test_predict_points_a_path_and_a_loaded_program_at_a_server_alike(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    with FakeServer() as first:
        courtroom.compile("zero-shot", optimizer="labeled", settings={"k": 1}, train_limit=2, dev_limit=2,
                          lm="openai/m", api_base=first.url, out=path, progress=False)  # fmt: skip
        program = courtroom.load(path, api_base=first.url)
    with FakeServer() as second:
        loaded = courtroom.predict(program, ["True and False"], api_base=second.url)
        by_path = courtroom.predict(path, ["not False"], api_base=second.url)
    assert second.models["m"] == 2  # each case's one call reached the server named here, under the saved model
    for verdicts in (loaded, by_path):
        assert [v.id for v in verdicts] == ["1"] and verdicts[0].label in ("True", "False"), verdicts
        assert verdicts[0].error is None and verdicts[0].transcript
    assert program.lms["default"].api_base == first.url  # the loaded program itself is not changed
    verdict = loaded[0]
    assert isinstance(verdict, courtroom.Verdict) and verdict.to_dict()["id"] == "1"
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.label = "False"  # type: ignore[misc]


def test_a_repeat_group_reads_as_a_run(tmp_path: Path) -> None:
    from courtroom.runner.repeats import RepeatOutcome, repeat_stats
    from courtroom.runner.runs import RunOutcome

    summaries = [{"n": 4, "accuracy": 0.5, "macro_f1": 0.4}, {"n": 4, "accuracy": 1.0, "macro_f1": 0.8}]
    runs = [RunOutcome(tmp_path / str(i), s, []) for i, s in enumerate(summaries)]
    group = RepeatOutcome(tmp_path, runs, repeat_stats(summaries))
    outcome: courtroom.RunOutcome | courtroom.RepeatOutcome = group
    assert outcome.run_dir == tmp_path
    assert outcome.summary["accuracy"] == 0.75 and outcome.summary["n"] == 4 and outcome.summary["repeats"] == 2
    assert outcome.summary["macro_f1"] == pytest.approx(group.stats["macro_f1"]["mean"])


def test_a_library_call_prints_nothing_unless_asked(
    tmp_path: Path, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As in a script: no logging set up (pytest's own capture handlers removed), so a record without
    # a handler would reach Python's last-resort handler on stderr.
    monkeypatch.setattr(logging.getLogger(), "handlers", [])
    with FakeServer() as server:
        outcome = courtroom.study("jot", trials=2, dev_limit=2, train_limit=2, space={"n_loops": "1"},
                                  lm="openai/m", api_base=server.url, storage=f"sqlite:///{tmp_path}/s.db",
                                  out=tmp_path / "report", progress=False)  # fmt: skip
    ran = outcome.table[outcome.table["duplicate_of"].isna()] if "duplicate_of" in outcome.table else outcome.table
    assert len(ran) == 2 and (tmp_path / "report" / "trials.csv").is_file()
    assert capfd.readouterr() == ("", "")


def test_predict_help_names_the_programs_models_as_the_default(courtroom_cli: Any) -> None:
    lines = courtroom_cli("predict", "--help").stdout.split("--lm", 1)[1].split("--role", 1)[0]
    assert "(the program's models)" in lines and "(local)" not in lines
    run = courtroom_cli("run", "--help").stdout.split("--lm", 1)[1].split("--role", 1)[0]
    assert "(local)" in run
