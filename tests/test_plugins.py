"""Plugins from an installed package, and ``--metric`` in every command that scores.

The package lives outside the repository: a temporary folder on ``sys.path`` holding a module and
its ``NAME.dist-info`` (``METADATA`` and ``entry_points.txt``), as ``pip install`` leaves one. It
names a framework, a task, an optimizer and a metric in the four ``courtroom.*`` groups; a second
one names a framework whose module does not exist. The commands run in this process against the
loopback fake server, whose answers follow each case's text ("the evidence leans yes"), so every
figure checked here is computed from the CSV itself.
"""

from __future__ import annotations

import io
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from _output import unwrapped

from courtroom.testing import FakeServer
from courtroom.testing._fakes import answer_for_schema

FIELDS = ["--text-field", "text", "--label-field", "label", "--labels", "yes,no"]
WRONG = 4
"""Every 4th case leans against its label: the fake answers it wrong."""
CREDIT = 0.25
"""What the plugin's metric gives a wrong answer (a right one: 1)."""
EVERY_ROW = ["--split-sizes", "0,0,8"]
"""Eight cases, all in the evaluated split: the figures do not depend on which ones a split drew."""

PLUGIN = '''
import dspy

from courtroom.data.catalog import Task, field_text
from courtroom.optimize.optimizers import Optimizer
from courtroom.optimize._labeled import LabeledPrecedents
from courtroom.programs.baselines import ZeroShot


class PluginZero(ZeroShot):
    """A framework of the plugin: zero-shot under its own name."""

    name = "plugin-zero"
    summary = "The plugin's own framework (zero-shot)."


def claims_task():
    return Task("plugin_claims", ("yes", "no"), fields=("text", "label"), text=field_text("text"),
                label=field_text("label"), description="The plugin's claims.")


def _run(ctx, student, train):
    return LabeledPrecedents(k=ctx.settings["k"], seed=ctx.seed).compile(student, trainset=train)


OPTIMIZER = Optimizer("plugin-labeled", "The plugin's optimizer: k labelled demos", {"k": 2}, _run,
                      lambda s: int(s["k"]))


def quarter_credit(example, prediction, trace=None):
    return 1.0 if prediction.label == example.label else 0.25
'''

ENTRY_POINTS = """
[courtroom.frameworks]
plugin-zero = courtroom_testplugin:PluginZero

[courtroom.tasks]
plugin_claims = courtroom_testplugin:claims_task

[courtroom.optimizers]
plugin-labeled = courtroom_testplugin:OPTIMIZER

[courtroom.metrics]
quarter-credit = courtroom_testplugin:quarter_credit
"""


def _distribution(site: Path, name: str, entry_points: str) -> None:
    info = site / f"{name.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(entry_points).lstrip())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The installed packages: ``courtroom-testplugin`` and a broken ``courtroom-brokenplugin``; removed after."""
    import importlib
    import sys

    from courtroom.data import tasks
    from courtroom.eval import metrics
    from courtroom.optimize import optimizers
    from courtroom.programs import FRAMEWORKS

    root = tmp_path_factory.mktemp("site-packages")
    (root / "courtroom_testplugin.py").write_text(PLUGIN)
    (root / "own_metrics.py").write_text(
        "def lenient(example, prediction, trace=None):\n    return 1.0 if prediction.label == example.label else 0.25\n"
    )
    _distribution(root, "courtroom-testplugin", ENTRY_POINTS)
    _distribution(root, "courtroom-brokenplugin", "[courtroom.frameworks]\nbroken-one = no_such_module_here:Broken\n")
    sys.path.insert(0, str(root))
    importlib.invalidate_caches()
    yield root
    sys.path.remove(str(root))
    registries = ((FRAMEWORKS, "plugin-zero"), (tasks.TASKS, "plugin_claims"),
                  (optimizers.OPTIMIZERS, "plugin-labeled"),
                  (getattr(metrics, "METRICS", {}), "quarter-credit"))  # fmt: skip
    spaces = sys.modules.get("courtroom.optimize.study.spaces")  # a study gave the plugin's design a space
    for registry, name in (*registries, (getattr(spaces, "SPACES", {}), "plugin-zero")):
        registry.pop(name, None)
    _loaded().clear()
    for module in ("courtroom_testplugin", "own_metrics"):
        sys.modules.pop(module, None)


def _loaded() -> set[Any]:
    """The entry points loaded so far (read through ``sys.modules``: nothing to clear before plugins existed)."""
    import sys

    return getattr(sys.modules.get("courtroom._plugins"), "_loaded", set())


def _lean(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
    """Answer every label field with the lean the case states (the last one: the case itself, not a demo)."""
    leans = re.findall(r"leans (yes|no)", prompt)
    values = {}
    for name, prop in (schema.get("properties") or {}).items():
        if leans and set(prop.get("enum") or ()) == {"yes", "no"}:
            values[name] = leans[-1]
    return answer_for_schema(schema, values, "reasoning")


@pytest.fixture(scope="module")
def server() -> Iterator[FakeServer]:
    with FakeServer(responder=_lean) as s:
        yield s


def _csv(path: Path, n: int, majority: int = 2, wrong: int = WRONG) -> Path:
    """``n`` cases labelled no, yes, no, yes... (``majority`` 3: two of three yes); every ``wrong``-th leans wrong."""
    rows = []
    for i in range(n):
        label = "yes" if i % majority else "no"
        lean = ("no" if label == "yes" else "yes") if i % wrong == 0 else label
        rows.append({"text": f"claim {i}: the evidence leans {lean}", "label": label})
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _expected(n: int) -> tuple[float, float]:
    """(label accuracy, mean of the plugin's metric) of the first ``n`` cases of :func:`_csv`."""
    wrong = len(range(0, n, WRONG))
    return (n - wrong) / n, (n - wrong + CREDIT * wrong) / n


def _model(server: FakeServer) -> list[str]:
    return ["--lm", "openai/fake-m", "--api-base", server.url]


def test_an_installed_framework_is_listed_and_runs(site: Path, server: FakeServer, cli: Any, tmp_path: Path) -> None:
    listed = cli("frameworks")
    assert listed.returncode == 0, listed.stderr
    assert "plugin-zero" in listed.stdout and "The plugin's own framework" in listed.stdout
    assert "plugin-labeled" in listed.stdout and "quarter-credit" in listed.stdout  # its optimizer and metric
    data = _csv(tmp_path / "claims.csv", 8)
    done = cli("run", "plugin-zero", "--dataset", str(data), *FIELDS, *EVERY_ROW, *_model(server))
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["accuracy"] == _expected(8)[0] and summary["n"] == 8
    assert json.loads((run_dir / "meta.json").read_text())["config"]["framework"] == "plugin-zero"


def test_an_installed_task_is_listed_and_loads(site: Path, server: FakeServer, cli: Any, tmp_path: Path) -> None:
    listed = cli("tasks")
    assert listed.returncode == 0 and "plugin_claims" in listed.stdout, listed.stderr
    data = _csv(tmp_path / "claims.csv", 8)
    done = cli("run", "zero-shot", "--task", "plugin_claims", "--data", str(data), *EVERY_ROW, *_model(server))
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert json.loads((run_dir / "summary.json").read_text())["accuracy"] == _expected(8)[0]


def test_an_installed_optimizer_compiles(site: Path, server: FakeServer, cli: Any, tmp_path: Path) -> None:
    data = _csv(tmp_path / "claims.csv", 30)
    sizes = ["--train-limit", "4", "--dev-limit", "3", "--test-limit", "4"]
    done = cli("compile", "plugin-zero", "--dataset", str(data), *FIELDS, "--optimizer", "plugin-labeled", *sizes,
               *_model(server), "-o", "p.json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = json.loads(Path("p.json").read_text())
    found = json.dumps(meta)
    assert '"plugin-labeled"' in found and '"plugin-zero"' in found


def test_a_broken_plugin_is_one_warning_naming_its_package(
    site: Path, cli: Any, caplog: pytest.LogCaptureFixture
) -> None:
    _loaded().discard(("frameworks", "broken-one", "no_such_module_here:Broken"))
    done = cli("frameworks")
    assert done.returncode == 0, done.stderr
    warned = [r.getMessage() for r in caplog.records if "courtroom-brokenplugin" in r.getMessage()]
    assert len(warned) == 1 and "broken-one" in warned[0] and "\n" not in warned[0], warned
    assert "plugin-zero" in done.stdout  # the other plugin still loads


def test_an_unknown_plugin_name_lists_the_installed_ones(site: Path, cli: Any) -> None:
    done = cli("run", "plugin-zer", "--limit", "2")
    assert done.returncode == 2
    assert "plugin-zero" in done.stderr and len(unwrapped(done.stderr.strip())) == 1, done.stderr


@pytest.mark.parametrize("metric", ["quarter-credit", "own_metrics:lenient"])
def test_metric_in_run_is_the_mean_and_recorded(
    site: Path, server: FakeServer, cli: Any, tmp_path: Path, metric: str
) -> None:
    data = _csv(tmp_path / "claims.csv", 8)
    done = cli("run", "zero-shot", "--dataset", str(data), *FIELDS, *EVERY_ROW, "--metric", metric,
               *_model(server))  # fmt: skip
    assert done.returncode == 0, done.stderr
    (run_dir,) = (tmp_path / "runs").iterdir()
    summary = json.loads((run_dir / "summary.json").read_text())
    labels, mean = _expected(8)
    assert summary["accuracy"] == pytest.approx(mean) and summary["label_accuracy"] == labels
    assert summary["metric"] == metric
    assert json.loads((run_dir / "meta.json").read_text())["spec"]["design"]["metric"] == metric
    assert f"accuracy (mean {metric})" in done.stdout
    scores = [json.loads(line)["score"] for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert sorted(scores) == sorted([CREDIT if i % WRONG == 0 else 1.0 for i in range(8)])
    dry = cli("run", "zero-shot", "--dataset", str(data), *FIELDS, "--metric", metric, "--dry-run", *_model(server))
    assert dry.returncode == 0, dry.stderr  # the dry run takes it too


def test_metric_in_compare_compile_score_and_studies(site: Path, server: FakeServer, cli: Any, tmp_path: Path) -> None:
    data, dev = _csv(tmp_path / "claims.csv", 40), _csv(tmp_path / "dev.csv", 4)
    metric = ["--metric", "quarter-credit"]
    _, mean = _expected(4)  # case 0 of 4 answered wrong: (3 + 0.25) / 4

    compared = cli("compare", "--frameworks", "zero-shot,plugin-zero", "--dataset", str(dev), *FIELDS,
                   "--split-sizes", "0,0,4", "--no-matched-baselines", *metric, *_model(server),
                   "--format", "csv")  # fmt: skip
    assert compared.returncode == 0, compared.stderr
    table = pd.read_csv(io.StringIO(compared.stdout), index_col=0)
    assert table.loc["zero-shot", "accuracy"] == pytest.approx(mean)
    assert table.loc["zero-shot", "label_accuracy"] == 0.75 and table.loc["zero-shot", "metric"] == "quarter-credit"
    assert table.loc["plugin-zero", "accuracy"] == pytest.approx(mean)  # the plugin's framework, compared

    compiled = cli("compile", "zero-shot", "--dataset", str(data), *FIELDS, "--dev-data", str(dev), "--optimizer",
                   "labeled", "--opt", "k=2", "--train-limit", "4", "--test-limit", "4", *metric, *_model(server),
                   "-o", "p.json")  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    meta = json.loads(Path("p.json").read_text())["metadata"]["courtroom"]
    assert meta["metric"] == "quarter-credit" and meta["spec"]["design"]["metric"] == "quarter-credit"
    assert meta["scores"]["dev"]["before"]["accuracy"] == pytest.approx(mean)
    assert "accuracy: mean quarter-credit" in compiled.stdout

    scored = cli("score", "p.json", "--dataset", str(dev), *FIELDS, "--no-matched-baselines", *metric,
                 "--api-base", server.url, "--out", "scores")  # fmt: skip
    assert scored.returncode == 0, scored.stderr
    assert f"accuracy (mean quarter-credit) {mean:.3f}" in " ".join(scored.stdout.split())

    for design in ([], ["--frameworks", "zero-shot,plugin-zero"]):  # a study of one framework, and across designs
        storage = f"sqlite:///{tmp_path}/s{len(design)}.db"
        single = [] if design else ["self-consistency", "--set", "k_shots=0"]
        studied = cli("study", *single, *design, "--dataset", str(data), *FIELDS,
                      "--dev-data", str(dev), "--trials", "1", "--train-limit", "2", "--test-limit", "0",
                      "--storage", storage, *metric, *_model(server), "--out", f"report{len(design)}")  # fmt: skip
        assert studied.returncode == 0, studied.stderr
        import optuna

        (summary,) = optuna.get_all_study_summaries(storage)
        trials = optuna.load_study(study_name=summary.study_name, storage=storage).trials
        assert trials and all(t.values[0] == pytest.approx(mean) for t in trials if t.values)  # the metric's mean
        assert "quarter-credit" in (tmp_path / f"report{len(design)}" / "study.json").read_text()


@pytest.mark.parametrize(
    ("metric", "says"),
    [("no-such-metric", "MODULE:FUNCTION"), ("no_such_module_xyz:f", "cannot import"),
     ("own_metrics:nothing", "has no nothing")],
)  # fmt: skip
def test_a_bad_metric_is_refused_before_any_request(
    site: Path, server: FakeServer, cli: Any, tmp_path: Path, metric: str, says: str
) -> None:
    before = server.counts["requests"]
    for command in (["run", "zero-shot"], ["compare", "--frameworks", "zero-shot,cot"], ["compile", "zero-shot"],
                    ["study", "zero-shot", "--trials", "1"]):  # fmt: skip
        done = cli(*command, "--limit" if command[0] in ("run", "compare") else "--dev-limit", "2",
                   "--metric", metric, *_model(server))  # fmt: skip
        assert done.returncode == 2, (command, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and says in lines[0] and "--metric" in lines[0], (command, done.stderr)
    assert server.counts["requests"] == before
    assert not (tmp_path / "runs").exists() and not (tmp_path / "comparisons").exists()


def test_compile_and_score_say_when_a_program_is_below_the_majority_class(
    server: FakeServer, cli: Any, tmp_path: Path
) -> None:
    """Two of three cases are ``yes`` and the program gets every other case wrong: worse than always ``yes``."""
    data = _csv(tmp_path / "cases.csv", 60, majority=3, wrong=2)
    sizes = ["--train-limit", "6", "--dev-limit", "4", "--test-limit", "12"]
    compiled = cli("compile", "zero-shot", "--dataset", str(data), *FIELDS, "--optimizer", "labeled", "--opt", "k=2",
                   *sizes, *_model(server), "-o", "p.json")  # fmt: skip
    assert compiled.returncode == 0, compiled.stderr
    golds = [json.loads(x)["gold"] for x in Path("p-test-after/results.jsonl").read_text().splitlines()]
    rate = golds.count("yes") / len(golds)
    after = json.loads(Path("p-test-after/summary.json").read_text())["accuracy"]
    assert after < rate  # the data make it so: the line must say it
    said = " ".join(compiled.stdout.split())
    assert (f"majority class (training split): 'yes', {rate:.3f} of the held-out cases; the compiled program "
            f"({after:.3f}) is below always answering 'yes'") in said  # fmt: skip

    scored = cli("score", "p.json", "--no-matched-baselines", "--api-base", server.url, "--out", "scores")
    assert scored.returncode == 0, scored.stderr
    (run_dir,) = [p for p in Path("scores").rglob("summary.json") if p.parent.name != "scores"]
    summary = json.loads(run_dir.read_text())
    share = summary["per_class"]["yes"]["support"] / summary["n"]
    said = " ".join(scored.stdout.split())
    assert (f"majority class (scored cases): 'yes', {share:.3f} of the scored cases; the program "
            f"({summary['accuracy']:.3f}) is below always answering 'yes'") in said  # fmt: skip
