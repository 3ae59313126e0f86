"""The accuracy-cost frontier of compare (SPEC §10) and CI whiskers with --repeats."""

import time

from courtroom.comparison.compare import compare
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.reporting import plots
from courtroom.reporting.html import write_report
from courtroom.testing import oracle_lm


def _oracle() -> RoleLMs:
    data = load_task("web_of_lies", limit=12, seed=1)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(
        gold, ["Yes", "No"], accuracy={"default": 0.7, "judge": 0.85}, cache=True, model=f"fake/f-{time.time_ns()}"
    )
    return RoleLMs({"default": lm})


def test_pareto_front_and_wilson_interval():
    points = {"cheap": (1.0, 0.6), "dear": (9.0, 0.8), "worse": (9.0, 0.55), "mid": (3.0, 0.7), "tie": (3.0, 0.65)}
    assert plots.pareto(points) == ["cheap", "mid", "dear"]
    low, high = plots.wilson(0.5, 100)
    assert 0.40 < low < 0.41 and 0.59 < high < 0.60


def test_compare_writes_the_frontier_and_the_report_shows_it_first(tmp_path):
    result = compare(
        "web_of_lies", ["jot", "zero-shot"], limit=12, seed=1, knobs={"n_loops": 1}, out=tmp_path, lms=_oracle()
    )
    png = result.out_dir / "frontier.png"
    assert png.is_file() and png.stat().st_size > 5000
    assert result.plots["frontier"] == png
    page = write_report(result.out_dir, tmp_path / "r.html").read_text()
    sections = [page.index(f'<section id="{s}"') for s in ("frontier", "summary", "plots")]
    assert sections == sorted(sections)
    assert page[sections[0] : sections[1]].count("<img") == 1


def test_repeats_put_ci_whiskers_on_every_accuracy_plot(tmp_path, monkeypatch):
    seen = {}
    real_bars, real_frontier = plots.accuracy_bars, plots.frontier

    def bars(accuracy, path, errors=None, title="", **kw):
        seen["bars"] = errors
        return real_bars(accuracy, path, errors, title, **kw)

    def frontier(cost, accuracy, low, high, path, **kw):
        seen["frontier"] = (low, high, accuracy)
        return real_frontier(cost, accuracy, low, high, path, **kw)

    monkeypatch.setattr(plots, "accuracy_bars", bars)
    monkeypatch.setattr(plots, "frontier", frontier)
    result = compare(
        "web_of_lies",
        ["jot", "zero-shot"],
        limit=12,
        seed=1,
        repeats=3,
        knobs={"n_loops": 1},
        out=tmp_path,
        lms=_oracle(),
    )
    below, above = seen["bars"]
    assert (below + above > 0).any()
    low, high, acc = seen["frontier"]
    table = result.table
    assert list(low) == list(table["accuracy_ci_low"]) and list(high) == list(table["accuracy_ci_high"])
