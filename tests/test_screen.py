"""What a person reads: every line a command prints (stdout and stderr) fits the width; errors name options as typed."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from courtroom.testing import FakeServer

WIDTH = 80
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")
"""A terminal's escape sequences (colours, the progress bar's cursor moves): no columns of their own."""
LINK = re.compile(r"^\s*\S*(/|://)\S*$")
"""A path or URL alone on its line (after any label): it cannot be cut, so it may run past the width."""


def _over(text: str, width: int) -> list[str]:
    """The lines of ``text`` wider than ``width``: each line, and each redraw of a terminal's line."""
    pieces = [ANSI.sub("", piece) for line in text.split("\n") for piece in line.split("\r")]
    return [p for p in pieces if len(p) > width and not LINK.match(p.split(": ", 1)[-1])]


def _fits(done: Any, what: str, width: int = WIDTH) -> str:
    assert done.returncode == 0, f"{what}: {done.stderr[-2000:]}"
    for name, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        long = _over(text, width)
        assert not long, f"{what} {name}: {len(long)} line(s) over {width} columns:\n" + "\n".join(long)
    return " ".join(done.stdout.split())  # the words, whatever the line breaks


MODES = {
    "80 columns, a pipe": (80, {"COLUMNS": "80", "TTY_COMPATIBLE": "0"}),
    "100 columns, a pipe (the default)": (100, {"COLUMNS": "100", "TTY_COMPATIBLE": "0"}),
    "80 columns, a terminal": (80, {"COLUMNS": "80", "TTY_COMPATIBLE": "1"}),
    "100 columns, a terminal": (100, {"COLUMNS": "100", "TTY_COMPATIBLE": "1"}),
}
"""Width and environment: ``TTY_COMPATIBLE=1`` makes rich draw for a terminal (the progress bar, not lines)."""


@pytest.mark.parametrize("mode", MODES)
def test_every_command_fits_the_width(mode: str, courtroom_cli: Any, tmp_path: Path) -> None:
    """Every line of stdout and stderr (progress, warnings, tables, help) within the width, in a pipe and a terminal."""
    width, env = MODES[mode]

    def cli(*args: str) -> str:
        return _fits(courtroom_cli(*args, env=env, cwd=tmp_path), " ".join(args[:2]), width)

    dry = ["--dry-run", "--lm", "openai/gpt-4o-mini"]
    with FakeServer() as server:
        c = ["--lm", "openai/m", "--api-base", server.url]
        # jot's flip line ran to 223-266 characters, courtroom-llm's to 278.
        ran = cli("run", "courtroom-llm", "--limit", "2", *c, "--out", "runs")
        assert "what the trial changed" in ran and "run folder:" in ran
        cli("run", "cot", "--limit", "2", "--repeats", "2", *c, "--out", "runs")
        compared = cli("compare", "--frameworks", "zero-shot,jot", "--limit", "2", *c, "--out", "cmp")
        assert "matched vote" in compared and "comparison folder:" in compared
        listed = cli("runs", "runs", "cmp")  # was a 240-column table
        assert listed.count("runs/20") == 2 and "cmp/20" in listed
        studied = cli("study", "jot", "--trials", "2", "--dev-limit", "2", "--test-limit", "2", "--cost-objective",
                      "--storage", f"sqlite:///{tmp_path}/s.db", "--out", "study", *c)  # fmt: skip
        assert "Pareto front" in studied and "on the test split" in studied
        assert "0.6666666" not in studied and "values [" not in studied  # numbers for people
        chosen = re.split(r"(?:best|chosen \(the cheapest tied with the best\)) trial", " ".join(studied.split()))
        assert "n_loops=" in chosen[1]
        compiled = courtroom_cli("compile", "zero-shot", "--optimizer", "labeled", "--opt", "k=1", "--train-limit",
                                 "2", "--dev-limit", "2", "--test-limit", "2", *c, "-o", "p.json", env=env,
                                 cwd=tmp_path)  # fmt: skip
        _fits(compiled, "compile", width)
        interval = re.compile(r"[+-]\d\.\d\d \[[+-]\d\.\d\d, [+-]\d\.\d\d\]")  # after - before: never cut in two
        after = [line for line in compiled.stdout.splitlines() if line.split()[1:2] == ["after"]]
        assert len(after) == 2 and all(interval.search(line) for line in after), compiled.stdout
        cli("score", "p.json", "--limit", "2", *c, "--out", "runs")
        cli("predict", "p.json", "is 2 even?", *c)
    cli("tasks")
    cli("frameworks")
    for command in ([], ["run"], ["compare"], ["study"], ["compile"], ["score"], ["predict"]):
        cli(*command, "--help")
    for command in (["run", "jot"], ["compare", "--frameworks", "zero-shot,jot"], ["study", "jot", "--trials", "2"],
                    ["compile", "jot", "--optimizer", "labeled"]):  # fmt: skip
        cli(*command, *dry)
    run_dir = next(p for p in (tmp_path / "runs").iterdir() if "courtroom-llm" in p.name)
    cli("show", str(run_dir.relative_to(tmp_path)))
    cli("show", str(run_dir.relative_to(tmp_path)), "--example", "0")
    cli("show", str(next((tmp_path / "cmp").iterdir()).relative_to(tmp_path)))
    cli("report", str(next((tmp_path / "cmp").iterdir()).relative_to(tmp_path)), "-o", "cmp.html")
    cli("report", "study", "-o", "study.html")


def test_wrapped_lines_keep_every_word_and_paths_whole() -> None:
    from courtroom.reporting.tables import wrapped

    text = "  jot: what the trial changed, from the judge's first judgment (n=4): wrong->right 0 (0.0%) " * 3
    lines = wrapped(text, 40)
    assert all(len(line) <= 40 for line in lines) and lines[1].startswith("    ")
    assert " ".join(" ".join(lines).split()) == " ".join(text.split())
    deep = "/a/" + "deep/" * 30
    assert wrapped(f"run folder: {deep}", 40) == [f"run folder: {deep}"]  # copied whole
    hint = f"to run them again: courtroom run --resume {deep} --retry-failed"
    lines = wrapped(hint, 50)
    assert [line for line in lines if len(line) > 50] == [f"  {deep}"]  # the path is never cut
    assert " ".join(" ".join(lines).split()) == hint


@pytest.fixture
def task_files(tmp_path: Path) -> Path:
    rows = "q,a\n" + "".join(f"is {i} even?,{'yes' if i % 2 == 0 else 'no'}\n" for i in range(20))
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text(rows)
        (tmp_path / f"{name}.yaml").write_text(
            f"dataset: {name}.csv\ntext_field: q\nlabel_field: a\nlabels: [yes, no]\n"
        )
    return tmp_path


def test_errors_name_options_as_typed_not_as_python_values(courtroom_cli: Any, task_files: Path) -> None:
    with FakeServer() as server:
        c = ["--lm", "openai/m", "--api-base", server.url]

        def cli(*args: str) -> Any:
            return courtroom_cli(*args, cwd=task_files)

        assert cli("run", "zero-shot", "--dataset", "a.yaml", "--limit", "2", *c, "--out", "runs").returncode == 0
        run_dir = str(next((task_files / "runs").iterdir()))
        resumed = cli("run", "--resume", run_dir, "--dataset", "b.yaml", "--split-sizes", "0.5,0.2,0.3", *c)
        assert resumed.returncode == 2
        assert "--dataset b.yaml (the run has --dataset a.yaml)" in resumed.stderr, resumed.stderr
        assert "--split-sizes 0.5,0.2,0.3 (the run has no --split-sizes)" in " ".join(resumed.stderr.split())
        study = ["--trials", "1", "--dev-limit", "2", "--train-limit", "3", "--space", "k_samples=1:2",
                 "--storage", f"sqlite:///{task_files}/s.db", "--study-name", "x", "--out", "st", *c]  # fmt: skip
        assert cli("study", "self-consistency", "--dataset", "a.yaml", *study).returncode == 0
        other = cli("study", "self-consistency", "--dataset", "b.csv", "--text-field", "q", "--label-field", "a",
                    "--labels", "yes,no", "--role", "classifier=openai/n", *study)  # fmt: skip
    assert other.returncode == 2
    assert (
        "--dataset a.yaml (you asked --dataset b.csv --text-field q --label-field a --labels yes,no)" in other.stderr
    ), other.stderr
    assert "no --role (you asked --role classifier=openai/n)" in other.stderr
    for err in (resumed.stderr, other.stderr):
        assert "{" not in err and "None" not in err and "task_file" not in err


def _browse(chromium: str, url: str, profile: Path, width: int, *action: str) -> Any:
    import subprocess

    cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={profile}", f"--window-size={width},1400", *action, url]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def test_a_study_folder_has_an_html_report(chromium: str, courtroom_cli: Any, tmp_path: Path) -> None:
    with FakeServer() as server:
        done = courtroom_cli("study", "jot", "--trials", "3", "--dev-limit", "2", "--test-limit", "2",
                             "--cost-objective", "--storage", f"sqlite:///{tmp_path}/s.db", "--out",
                             str(tmp_path / "st"), "--lm", "openai/m", "--api-base", server.url)  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = tmp_path / "study.html"
    reported = courtroom_cli("report", str(tmp_path / "st"), "-o", str(out))  # refused a study folder before
    assert reported.returncode == 0, reported.stderr
    page = out.read_text()
    assert "https://" not in page and page.count("data:image/png;base64,") >= 2  # self-contained: pareto, history
    for width in (1280, 800):
        dom = _browse(chromium, out.as_uri(), tmp_path / f"profile{width}", width, "--dump-dom")
        assert dom.returncode == 0, dom.stderr[-2000:]
        html = dom.stdout
        for section in ("best", "dev-test", "pareto", "importances", "history", "trials"):
            assert f'<section id="{section}">' in html, section
        # --trials 3 ran (the paper's default first), plus any draw that repeated one (listed, not run again).
        listed = re.search(r"Trials \((\d+)\)", html)
        assert "n_loops=" in html and "test accuracy" in html and listed and int(listed[1]) >= 3
        assert "[0." in html.split('id="dev-test"')[1]  # the test interval beside the dev score
        shot = tmp_path / f"study-{width}.png"
        res = _browse(chromium, out.as_uri(), tmp_path / f"shot{width}", width, f"--screenshot={shot}")
        assert res.returncode == 0 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_frontier_labels_do_not_overlap() -> None:
    from courtroom.reporting.plots import place_labels, plt

    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    # A comparison's usual crowd: baselines at one call per case, votes near each other.
    points = [("zero-shot", (1.0, 0.5)), ("cot", (1.0, 0.5)), ("self-consistency k=1", (1.0, 0.52)),
              ("jot", (9.0, 0.5)), ("self-consistency k=9", (9.0, 0.51)),
              ("self-consistency k=8", (8.0, 0.5))]  # fmt: skip
    ax.set_xlim(0, 10)
    ax.set_ylim(0, 1.05)
    texts = place_labels(ax, points)
    boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in texts]
    plt.close(fig)
    assert [t.get_text() for t in texts] == [name for name, _ in points]
    assert not [(i, j) for i in range(len(boxes)) for j in range(i) if boxes[i].overlaps(boxes[j])]


_PROBE = (
    "<script>window.addEventListener('load',function(){var d=document.querySelector('#summary div.scroll');"
    "document.body.setAttribute('data-fit',d.scrollWidth<=d.clientWidth?'yes':'no');});</script>"
)


def test_comparison_report_reads_as_words_and_its_table_fits(chromium: str, courtroom_cli: Any, tmp_path: Path) -> None:
    with FakeServer() as server:
        done = courtroom_cli("compare", "--frameworks", "zero-shot,jot,courtroom-llm", "--limit", "3", "--lm",
                             "openai/m", "--api-base", server.url, "--out", str(tmp_path / "cmp"))  # fmt: skip
    assert done.returncode == 0, done.stderr
    folder = next((tmp_path / "cmp").iterdir())
    out = tmp_path / "cmp.html"
    assert courtroom_cli("report", str(folder), "-o", str(out)).returncode == 0
    page = out.read_text()
    probed = tmp_path / "probed.html"
    probed.write_text(page.replace("</body>", _PROBE + "</body>"))
    for width, fits in ((1280, "yes"), (800, None)):
        dom = _browse(chromium, probed.as_uri(), tmp_path / f"cmp{width}", width, "--dump-dom").stdout
        analyses = dom.split('<section id="analyses">')[1].split("</section>")[0]
        assert "judge agreement (parallel): unanimous" in analyses and "Brier score" in analyses
        assert "rate: None" not in analyses and "{" not in analyses and "ties: " not in analyses  # no raw dicts
        assert "McNemar p (exact)" in dom
        if fits:  # the whole summary table, McNemar column included, without scrolling (800 px: it scrolls)
            assert 'data-fit="yes"' in dom, width


def test_warning_lines_fit_the_width(courtroom_process: Any, tmp_path: Path) -> None:
    """A log line (``WARNING courtroom.tracking: ...``, 241 characters before) is cut at spaces like the others.

    A real process: in this one pytest's own log handlers take the records, and the CLI's are never installed.
    """
    with FakeServer() as server:
        done = courtroom_process("run", "zero-shot", "--limit", "1", "--lm", "openai/m", "--api-base", server.url,
                                 "--track", "http://user:pw@127.0.0.1:1", "--out", "runs", env={"COLUMNS": "80"},
                                 cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "WARNING courtroom.tracking: tracking to" in done.stderr
    assert not _over(done.stderr, 80), done.stderr
    words = " ".join(done.stderr.split())
    assert "cannot reach the MLflow server at http://user:PASSWORD@127.0.0.1:1 (Connection refused)" in words
