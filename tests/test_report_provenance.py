"""Reports and plots say what ran (issue 11): header block, subtitles, readable numbers, chance lines, repeats."""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import matplotlib.figure
import pandas as pd
import pytest

from courtroom.comparison.compare import compare
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.reporting import plots
from courtroom.reporting.html import write_report
from courtroom.runner.repeats import run_repeats
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import oracle_lm

TASK, N = "web_of_lies", 6


class Figures:
    """Every matplotlib figure saved while recording, with the path it was saved to."""

    def __init__(self) -> None:
        self.saved: list[tuple[Path, Any]] = []

    def under(self, folder: Path) -> dict[str, Any]:
        return {p.name: f for p, f in self.saved if folder in p.parents}


def _record(monkeypatch: pytest.MonkeyPatch) -> Figures:
    figures, real = Figures(), matplotlib.figure.Figure.savefig

    def savefig(self: Any, fname: Any, *args: Any, **kwargs: Any) -> Any:
        figures.saved.append((Path(fname), self))
        return real(self, fname, *args, **kwargs)

    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", savefig)
    return figures


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A run, a repeat group and a comparison with repeats, their reports, and every figure drawn."""
    mp = pytest.MonkeyPatch()
    figures = _record(mp)
    tmp = tmp_path_factory.mktemp("prov")
    data = load_task(TASK, limit=N, seed=3)
    gold = {ex.case: ex.label for ex in data.examples}
    model = f"fake/prov-{time.time_ns()}"
    lm = oracle_lm(gold, ["Yes", "No"], accuracy={"default": 0.6, "judge": 0.8}, cache=True, model=model)
    lms = RoleLMs({"default": lm})
    one = run(RunConfig("courtroom-llm", TASK, limit=N, seed=3, knobs={"k_precedents": 0}, out=str(tmp)), lms=lms)
    group = run_repeats(RunConfig("cot", TASK, limit=N, seed=3, out=str(tmp / "groups")), 3, lms=lms)
    comp = compare(
        TASK,
        ["zero-shot", "courtroom-llm"],
        limit=N,
        seed=3,
        repeats=2,
        knobs={"k_precedents": 0},
        out=tmp / "cmp",
        lms=lms,
        ambiguity_k=2,
        matched_baselines=False,
    )
    pages = {
        "run": write_report(one.run_dir, tmp / "run.html").read_text(),
        "group": write_report(group.group_dir, tmp / "group.html").read_text(),
        "comparison": write_report(comp.out_dir, tmp / "cmp.html").read_text(),
    }
    majority = Counter(ex.label for ex in data.examples).most_common(1)[0][1] / N
    yield {
        "majority": majority,
        "model": model,
        "run": one,
        "group": group,
        "comparison": comp,
        "pages": pages,
        "figures": figures,
    }
    mp.undo()


def _provenance_block(page: str) -> str:
    match = re.search(r'<section id="provenance".*?</section>', page, re.S)
    assert match, "no header block"
    return match.group(0)


@pytest.mark.parametrize("kind", ["run", "group", "comparison"])
def test_every_report_opens_with_what_ran(built: dict[str, Any], kind: str) -> None:
    page = built["pages"][kind]
    block = _provenance_block(page)
    assert page.index(block) < page.index("<h2>")  # at the top, before any section
    meta, _, _ = load_run(built["run"].run_dir)
    for what in ("models per role", "seed", "date", "data source", "n", "versions"):
        assert f"<th>{what}</th>" in block
    assert built["model"] in block and "<th>seed</th><td>3</td>" in block
    assert meta["task"]["source"] in block and f"<td>{N} examples</td>" in block
    assert re.search(r"<td>\d{4}-\d\d-\d\d \d\d:\d\d</td>", block)
    assert f"dspy {meta['versions']['dspy']}" in block and f"courtroom {meta['versions']['courtroom']}" in block


def test_every_plot_has_a_subtitle_naming_what_ran(built: dict[str, Any]) -> None:
    figures = built["figures"].saved
    assert len(figures) >= 8
    for path, fig in figures:
        notes = [t.get_text() for t in fig.texts if t.get_gid() == "provenance"]
        assert len(notes) == 1, f"{path.name} has no subtitle"
        note = notes[0]
        assert built["model"] in note and "seed 3" in note and f"n={N}" in note, path.name
        assert "dspy " in note and re.search(r"\d{4}-\d\d-\d\d", note), path.name


def test_accuracy_reads_with_its_95_ci(built: dict[str, Any]) -> None:
    summary = built["run"].summary
    low, high = plots.wilson(summary["accuracy"], summary["n"])
    shown = f"{summary['accuracy']:.2f} [{low:.2f}, {high:.2f}]"
    assert f"<td>{shown}</td>" in built["pages"]["run"]  # Wilson over examples: no repeats
    table = built["comparison"].table
    row = table.loc["courtroom-llm"]
    shown = f"{row['accuracy']:.2f} [{row['accuracy_ci_low']:.2f}, {row['accuracy_ci_high']:.2f}]"
    assert f"<td>{shown}</td>" in built["pages"]["comparison"]  # the repeats' CI
    assert "Accuracy: mean and 95% CI over the repeats." in built["pages"]["comparison"]
    md = (built["comparison"].out_dir / "table.md").read_text()
    assert shown in md and "| framework | accuracy (95% CI) | macro-F1 |" in md


def test_counts_have_thousands_separators_and_headers_are_words(built: dict[str, Any]) -> None:
    tokens = built["run"].summary["tokens"]
    assert tokens >= 1000
    page = built["pages"]["run"]
    assert f"<td>{tokens:,}</td>" in page and f"<td>{tokens}</td>" not in page
    summary_html = built["pages"]["comparison"].split('<section id="summary">')[1].split("</section>")[0]
    assert "calls per example" in summary_html and "calls_per_example" not in summary_html
    assert "accuracy_ci_low" not in summary_html and "wall_seconds" not in summary_html
    assert '<details class="more">' in summary_html  # the rest of the columns, collapsed
    # The machine-readable files keep raw numbers and column names.
    csv = pd.read_csv(built["comparison"].out_dir / "table.csv", index_col="framework")
    assert {"calls_per_example", "accuracy_ci_low", "tokens"} <= set(csv.columns)
    assert csv["tokens"].dtype.kind in "if"


def test_accuracy_plots_draw_chance_n_and_labelled_error_bars(built: dict[str, Any]) -> None:
    drawn = built["figures"].under(built["comparison"].out_dir)
    for name in ("accuracy.png", "repeats.png", "frontier.png"):
        ax = drawn[name].axes[0]
        chance = [line for line in ax.get_lines() if line.get_gid() == "chance"]
        assert chance and chance[0].get_ydata()[0] == pytest.approx(built["majority"]), name
        legend = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("majority class") for t in legend), (name, legend)
    bars = drawn["accuracy.png"].axes[0]
    assert "95% CI over 2 repeats (t)" in [t.get_text() for t in bars.get_legend().get_texts()]
    assert sum(t.get_text() == f"n={N}" for t in bars.texts) == 2
    frontier = drawn["frontier.png"].axes[0]
    assert any("95% CI" in t.get_text() for t in frontier.get_legend().get_texts())
    assert f"n={N}" in frontier.get_ylabel()


def test_the_box_plot_has_a_legend(built: dict[str, Any]) -> None:
    for folder in (built["comparison"].out_dir, None):
        drawn = built["figures"].under(folder) if folder else {p.name: f for p, f in built["figures"].saved}
        legend = drawn["repeats.png"].axes[0].get_legend()
        assert legend is not None
        texts = [t.get_text() for t in legend.get_texts()]
        assert {"median", "mean"} <= set(texts)


def test_plot_titles_differ_and_agreement_names_what_agreed(built: dict[str, Any]) -> None:
    drawn = built["figures"].under(built["comparison"].out_dir)
    titles = {name: fig.axes[0].get_title() for name, fig in drawn.items()}
    assert len(titles) >= 6 and len(set(titles.values())) == len(titles), titles
    assert "judge" in titles["agreement.png"] and "verdict" in titles["agreement.png"]
    assert "hearing samples" in titles["ambiguity-courtroom-llm.png"]
    assert "judge position" in drawn["agreement.png"].axes[0].get_xlabel()


def test_repeats_report_names_the_shown_repeat_and_holds_the_others(built: dict[str, Any]) -> None:
    page = built["pages"]["group"]
    assert "Shown: the transcripts of repeat-0 (of 3 repeats)" in page
    assert 'data-repeat="repeat-1"' in page and 'data-repeat="repeat-2"' in page
    assert page.count('<details class="example') == 3 * N
    page = built["pages"]["comparison"]
    assert page.count("Shown: the transcripts of repeat-0 (of 2 repeats)") == 2
    assert page.count('data-repeat="repeat-1"') == 2 and page.count('<details class="example') == 2 * 2 * N


def test_study_plots_have_integer_trial_ticks_subtitles_and_distinct_titles(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from courtroom.optimize.study import StudyConfig, run_study, study_config_dict
    from courtroom.optimize.study.report import write_report as write_study_report

    labels = ["True", "False"]
    train = load_task("boolean_expressions", split="train", limit=2).examples
    dev = load_task("boolean_expressions", split="dev", limit=4).examples
    gold = {e.case: e.label for e in train + dev}
    lm = oracle_lm(gold, labels, 0.7, cache=True, model=f"fake/st-{uuid.uuid4().hex[:8]}")
    config = StudyConfig(
        "jot", trials=3, chunks=1, seed=5, space={"n_loops": "1:2"}, storage=f"sqlite:///{tmp_path}/s.db"
    )
    out = run_study(config, lms=RoleLMs({"default": lm}), trainset=train, devset=dev, labels=labels)
    figures = _record(monkeypatch)
    written = write_study_report(out.study, tmp_path / "report", study_config_dict(config), out.models)
    drawn = figures.under(tmp_path / "report")
    assert "history.png" in drawn
    ticks = [t for t in drawn["history.png"].axes[0].get_xticks() if 0 <= t <= 2]
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
    titles = [fig.axes[0].get_title() for fig in drawn.values()]
    assert len(set(titles)) == len(titles)
    for fig in drawn.values():
        note = next(t.get_text() for t in fig.texts if t.get_gid() == "provenance")
        assert lm.model in note and "seed 5" in note and "n=4" in note and "optuna " in note
    saved = json.loads(written["summary"].read_text())["provenance"]
    assert saved["seed"] == 5 and saved["n"] == 4 and saved["models"]
