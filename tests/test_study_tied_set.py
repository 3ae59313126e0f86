"""A tied set that reads on its own: each member's configuration (its design and searched values) in
the terminal at 80 columns, ``study.json``, the recipe and the HTML; its dev cases; the excluded
configurations with their p; one accuracy per trial; the raw p beside the corrected one; "tested"
only when tested; and a panel that asked only its first model counted as that model (SPEC §17)."""

from __future__ import annotations

import contextlib
import io
import json
import re
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.optimize.study import StudyConfig, run_study
from courtroom.optimize.study.race import EXTENDED, marks
from courtroom.optimize.study.tied import tied_set
from courtroom.testing import FakeServer, oracle_lm

LABELS = ["True", "False"]


@contextlib.contextmanager
def _isolated(tmp: Path, columns: int = 80) -> Iterator[pytest.MonkeyPatch]:
    """A module fixture's own cache, working folder and terminal width (the autouse fixtures are per test)."""
    from courtroom import _stop
    from courtroom.models.cache import configure_cache

    with pytest.MonkeyPatch.context() as m:
        m.setenv("COURTROOM_CACHE_DIR", str(tmp / "cache"))
        m.setenv("COLUMNS", str(columns))
        m.chdir(tmp)
        configure_cache(tmp / "cache")
        _stop.reset()
        yield m


def _cli(*args: str) -> Any:
    """``courtroom ARGS`` in this process: returncode and stdout."""
    from courtroom.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return types.SimpleNamespace(returncode=code, stdout=out.getvalue(), stderr=err.getvalue())


def _wide(text: str) -> list[str]:
    """Lines wider than 80 columns, but for a path, which may overflow."""
    return [line for line in text.splitlines() if len(line) > 80 and not any(w.startswith("/") for w in line.split())]


# -- a study of oracles: stopped ones, extended ones ----------------------------------------------------


@pytest.fixture(scope="module")
def raced(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two close models and two weak ones on 40 dev cases and 60 more: the race stops the weak, extends the close."""
    tmp = tmp_path_factory.mktemp("raced")
    pool = load_task("boolean_expressions", data="generate", split="dev", limit=100).examples
    dev, reserve = pool[:40], pool[40:]
    train = load_task("boolean_expressions", data="generate", split="train", limit=4).examples
    gold = {e.case: e.label for e in [*pool, *train]}
    tag = uuid.uuid4().hex[:6]
    objects = {
        f"fake/m{round(a * 100)}-{i}-{tag}": oracle_lm(
            gold, LABELS, accuracy=a, seed=i, cache=True, model=f"fake/m{round(a * 100)}-{i}-{tag}"
        )  # fmt: skip
        for i, a in enumerate([0.8, 0.1, 0.1, 0.8])
    }
    config = StudyConfig(
        "parallel-vote", trials=4, dev=40, train=4, storage=f"sqlite:///{tmp}/s.db", study_name="s",
        space={"n_models": "1", "model:classifier": ",".join(objects)}, models=list(objects), concurrency=1,
    )  # fmt: skip
    with _isolated(tmp):
        outcome = run_study(config, lms=RoleLMs({"default": next(iter(objects.values()))}), model_objects=objects,
                            trainset=train, devset=dev, labels=LABELS, reserve=reserve)  # fmt: skip
    assert outcome.study.user_attrs.get(EXTENDED), "the race extended the close ones"
    assert _stopped(outcome.study), "the race stopped the weak ones"
    return outcome


def _stopped(study: Any) -> list[Any]:
    return [t for t in study.trials if t.state.name == "PRUNED" and (t.user_attrs.get("race") or {}).get("stop")]


def _printed(outcome: Any, **kw: Any) -> str:
    from courtroom.cli.study import _print_tied

    out = io.StringIO()
    _print_tied(outcome, Console(file=out, width=80, highlight=False), **kw)
    return out.getvalue()


def test_the_excluded_configurations_are_listed_with_their_p(raced: Any, tmp_path: Path) -> None:
    from courtroom.optimize.study.race import OUTCOMES, discordant, one_sided_p
    from courtroom.optimize.study.report import write_report

    study = raced.study
    found = tied_set(study)
    best = next(t for t in study.trials if t.number == found.best)
    shown = _printed(raced)
    assert not _wide(shown), _wide(shown)
    for t in _stopped(study):
        p = one_sided_p(*discordant(t.user_attrs[OUTCOMES], marks(study, best)))  # worse than the best?
        row = next((line for line in shown.splitlines() if re.match(rf"\s*{t.number}\s+stopped\b", line)), "")
        assert f"{p:.3g}" in row and _model(t) in shown, (t.number, p, shown)
    summary = json.loads((write_report(study, tmp_path / "rep")["summary"]).read_text())
    listed = {s["trial"]: s for s in summary["tied"].get("stopped", [])}
    assert set(listed) == {t.number for t in _stopped(study)}
    assert all(s["dev_cases"] < 40 and 0 <= s["p"] <= 1 and s["config"] for s in listed.values())


def _model(trial: Any) -> str:
    return str(trial.user_attrs["config"]["model:classifier"])


def test_each_member_shows_its_dev_cases_and_the_header_claims_no_more(raced: Any) -> None:
    found = tied_set(raced.study)
    shown = _printed(raced)
    assert "scored on all of them" not in shown
    for m in found.members:
        row = next(line for line in shown.splitlines() if re.match(rf"\s*{m.number}\s+(best|yes|no)\b", line))
        assert re.search(rf"\b{m.cases}\b", row), (row, m.cases)
    assert {m.cases for m in found.members} != {40}, "the race extended the close ones past --dev-limit"


def test_one_accuracy_per_trial_the_one_the_set_reads(raced: Any) -> None:
    from courtroom.cli.study import best_line
    from courtroom.optimize.study.report import best_trial, trials_table

    study = raced.study
    best = best_trial(study)
    member = next(m for m in tied_set(study).members if m.number == best.number)
    assert member.cases > 40
    assert f"accuracy {member.accuracy:.3f} on {member.cases} dev cases" in best_line(raced, best)
    row = trials_table(study).set_index("number").loc[best.number]
    assert row["accuracy"] == pytest.approx(member.accuracy) and row["examples"] == member.cases
    from courtroom.optimize.study.holdout import _dev

    assert (_dev(study, best)["dev_accuracy"], _dev(study, best)["dev_n"]) == (pytest.approx(member.accuracy),
                                                                             member.cases)  # fmt: skip


def test_the_raw_p_against_the_best_stands_beside_the_corrected_one(raced: Any) -> None:
    found = tied_set(raced.study)
    shown = _printed(raced)
    assert "p vs best" in shown and "p (Holm)" in shown
    other = next(m for m in found.members if m.number != found.best)
    row = next(line for line in shown.splitlines() if re.match(rf"\s*{other.number}\s+(yes|no)\b", line))
    assert f"{other.p:.3g}" in row and f"{other.p_holm:.3g}" in row, row


# -- the CLI on the fake server: configurations at 80 columns, panels, designs, "tested" ----------------


@pytest.fixture(scope="module")
def panel(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """Two models and their panel for one voter, at 80 columns, exported, not tested (``--test-limit 0``)."""
    tmp = tmp_path_factory.mktemp("panel")
    tag = uuid.uuid4().hex[:6]
    p, q = f"openai/p-{tag}", f"openai/q-{tag}"
    with _isolated(tmp), FakeServer() as server:
        done = _cli("study", "parallel-vote", "--trials", "3", "--dev-limit", "4", "--space", "n_models=1",
                    "--lm", p, "--lm", q, "--api-base", server.url, "--storage", f"sqlite:///{tmp}/s.db",
                    "--out", str(tmp / "rep"), "--export-best", str(tmp / "best.json"),
                    "--test-limit", "0")  # fmt: skip
        assert done.returncode == 0, done.stderr
        page = _cli("report", str(tmp / "rep"), "-o", str(tmp / "study.html"))
        assert page.returncode == 0, page.stderr
    return types.SimpleNamespace(
        models=(p, q), stdout=done.stdout, tied=done.stdout[done.stdout.index("tied with the best") :],
        summary=json.loads((tmp / "rep" / "study.json").read_text()), html=(tmp / "study.html").read_text(),
    )  # fmt: skip


def test_the_terminal_names_every_configuration_at_80_columns(panel: Any) -> None:
    assert not _wide(panel.stdout), _wide(panel.stdout)
    p, q = panel.models
    assert p in panel.tied and q in panel.tied, "each member's searched model is shown, not dropped"
    assert "every configuration: n_models=1" in " ".join(panel.tied.split()), "a value all share is said once"


def test_a_panel_that_asked_only_its_first_model_is_that_model(panel: Any) -> None:
    # Three trials ran (p, q and the panel p,q with one voter), two configurations: the panel asked only p.
    p, q = panel.models
    members = panel.summary["tied"]["members"]
    assert len(members) == 2, members
    assert sorted(m["config"]["model:classifier"] for m in members) == [p, q]
    assert sum(len(m.get("same", [])) for m in members) == 1
    assert "2 of 2 configuration(s)" in " ".join(panel.tied.split())
    assert re.search(r"trial \d+: model:classifier=\S+ \(also trial \d+\)", panel.tied), panel.tied


def test_tested_is_said_only_when_the_test_split_scored_it(panel: Any) -> None:
    assert re.search(r"chosen and exported: trial \d+", panel.tied) and "tested" not in panel.tied, panel.tied
    section = panel.html.split("Tied with the best", 1)[1].split("<section", 1)[0]
    assert "Chosen: trial" in section and "tested" not in section, section
    assert "p vs best" in panel.html and "dev cases" in panel.html


def test_a_design_study_records_the_design_of_every_member(tmp_path: Path, cli: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    with FakeServer() as server:
        done = cli("study", "--frameworks", "parallel-vote,self-consistency", "--trials", "3", "--dev-limit", "3",
                   "--train-limit", "4", "--space", "parallel-vote.n_models=1:2", "--space",
                   "self-consistency.k_samples=2", "--lm", f"openai/d-{uuid.uuid4().hex[:6]}", "--api-base",
                   server.url, "--storage", f"sqlite:///{tmp_path}/s.db", "--study-name", "d",
                   "--out", str(tmp_path / "rep"), "--export-best", str(tmp_path / "best.json"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert not _wide(done.stdout), _wide(done.stdout)
    members = json.loads((tmp_path / "rep" / "study.json").read_text())["tied"]["members"]
    assert len(members) == 3 and {m["design"] for m in members} == {"parallel-vote", "self-consistency"}
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert all(m.get("design") for m in recipe["tied"]["members"]), recipe["tied"]
    tied = " ".join(done.stdout[done.stdout.index("tied with the best") :].split())
    assert "design=parallel-vote" in tied and "design=self-consistency" in tied
    assert re.search(r"chosen, exported and tested: trial \d+", tied), tied
    page = cli("report", str(tmp_path / "rep"), "-o", str(tmp_path / "study.html"))
    assert page.returncode == 0, page.stderr
    html = (tmp_path / "study.html").read_text()
    assert "design=parallel-vote" in html and "design=self-consistency" in html
    assert "Chosen and tested: trial" in html
