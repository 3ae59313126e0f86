"""The HTML report, opened in a real headless Chromium: tables, transcripts, filters, screenshot."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from courtroom.cli import main
from courtroom.comparison.compare import compare
from courtroom.data.tasks import load_task
from courtroom.models.lms import RoleLMs
from courtroom.runner.runs import RunConfig, run
from courtroom.testing import FakeServer, fault_prompts, oracle_lm


def _browse(chromium: str, url: str, profile: Path, *action: str) -> subprocess.CompletedProcess[str]:
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--window-size=1200,1400",
        *action,
        url,
    ]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


@pytest.fixture(scope="module")
def courtroom_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data = load_task("navigate", limit=10, seed=4)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], accuracy={"default": 0.6, "judge": 0.7}, model=f"fake/rep-{time.time_ns()}")
    config = RunConfig(
        "courtroom-llm",
        "navigate",
        limit=10,
        seed=4,
        knobs={"k_precedents": 1},
        out=str(tmp_path_factory.mktemp("runs")),
    )
    return run(config, lms=RoleLMs({"default": lm})).run_dir


def test_run_report_renders_in_chromium(chromium: str, courtroom_run: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    assert main(["report", str(courtroom_run), "-o", str(out)]) == 0
    page = out.read_text()
    assert "http://" not in page.replace("http://www.w3.org", "") and "https://" not in page  # self-contained
    assert page.count("data:image/png;base64,") >= 1
    dom = _browse(chromium, out.as_uri(), tmp_path / "profile", "--dump-dom")
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    assert 'class="dataframe summary"' in html and "accuracy" in html
    assert html.count('class="turn role-judge"') == 10 * 3  # three judges per example
    assert 'class="turn role-clerk"' in html and 'class="turn role-prosecutor"' in html
    assert "votes" in html and "ph_label" in html and "precedents" in html
    assert html.count('<details class="example') == 10
    shot = tmp_path / "report.png"
    res = _browse(chromium, out.as_uri(), tmp_path / "profile2", f"--screenshot={shot}")
    assert res.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_comparison_report_filters_wrong_and_failed(chromium: str, tmp_path: Path) -> None:
    # The same prompts are garbage on every attempt, so the same examples fail in every run.
    with FakeServer(fault_for=fault_prompts(0.3, seed=2)) as server:
        lm = server.lm(f"openai/report-{time.time_ns()}", cache=False)
        comp = compare(
            "web_of_lies",
            ["zero-shot", "jot"],
            limit=8,
            knobs={"jot.n_loops": 1},
            out=tmp_path,
            lms=RoleLMs({"default": lm}),
            matched_baselines=False,
        )
    failed = int(comp.table["failures"].sum())
    assert failed > 0
    out = tmp_path / "cmp.html"
    assert main(["report", str(comp.out_dir), "-o", str(out)]) == 0
    dom = _browse(chromium, out.as_uri() + "#failed", tmp_path / "profile", "--dump-dom").stdout
    assert 'class="dataframe summary"' in dom and "<h3>zero-shot</h3>" in dom and "<h3>jot</h3>" in dom
    assert f"failed ({failed})" in dom
    examples = dom.split('<details class="example ')[1:]
    assert len(examples) == 16
    hidden = [e for e in examples if e.split('"', 1)[0] != "failed"]
    assert all('style="display: none;"' in e.split(">", 1)[0] for e in hidden)
    shown = [e for e in examples if e.split('"', 1)[0] == "failed"]
    assert len(shown) == failed and all("display: none" not in e.split(">", 1)[0] for e in shown)
    assert all("error:" in e for e in shown)


def test_report_of_something_else_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(tmp_path), "-o", str(tmp_path / "x.html")]) == 2
    assert "is not a run, repeat group, comparison or study folder" in " ".join(capsys.readouterr().err.split())


def test_report_of_a_repeat_group_and_of_an_interrupted_run(tmp_path: Path) -> None:
    from courtroom.reporting.html import write_report
    from courtroom.runner.repeats import run_repeats

    data = load_task("web_of_lies", limit=5, seed=1)
    gold = {ex.case: ex.label for ex in data.examples}
    lm = oracle_lm(gold, ["Yes", "No"], 0.6, cache=True, model=f"fake/grp-{time.time_ns()}")
    group = run_repeats(
        RunConfig("cot", "web_of_lies", limit=5, seed=1, out=str(tmp_path)), 3, lms=RoleLMs({"default": lm})
    )
    page = write_report(group.group_dir, tmp_path / "g.html").read_text()
    assert "Summary over 3 repeats" in page and "95% CI" in page and page.count("data:image/png;base64,") == 1
    assert page.count('<details class="example') == 5 * 3  # repeat 0 shown, the others collapsed
    run_dir = group.outcomes[0].run_dir
    (run_dir / "summary.json").unlink()  # as if interrupted
    page = write_report(run_dir, tmp_path / "r.html").read_text()
    assert "finish it with --resume" in page and page.count('<details class="example') == 5
