"""Paper presets, sampling temperatures and the warning for samples at temperature 0, suites' tables."""

from __future__ import annotations

import json
import logging
import math
import re
import time
from pathlib import Path

import pandas as pd
import pytest

from courtroom.cli import main
from courtroom.comparison.suites import SUITES, get_suite, run_suite, suite_table, wilson
from courtroom.errors import ConfigError
from courtroom.programs import FRAMEWORKS
from courtroom.programs.presets import PRESETS, apply_preset
from courtroom.runner.runs import RunConfig, RunSetup
from courtroom.testing import FakeServer, scripted_lm


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


def _run_dir(out: str) -> Path:
    line = [x for x in out.splitlines() if x.startswith("run folder:")][-1]
    return Path(line.split(":", 1)[1].strip())


def test_every_preset_names_real_knobs_and_roles() -> None:
    for preset in PRESETS.values():
        cls = FRAMEWORKS[preset.framework]
        assert set(preset.knobs) <= set(cls.knobs()), preset.name
        assert set(preset.temperatures) <= set(cls.roles), preset.name
        cls(["a", "b"], lm=scripted_lm({}), **preset.knobs)  # a valid configuration


def test_apply_preset_user_knobs_win_and_mismatch_is_refused() -> None:
    framework, knobs = apply_preset("courtroom-llm-early", None, {"n_judges": 3})
    assert framework == "courtroom-llm" and knobs["n_judges"] == 3 and knobs["assignment"] == "fixed"
    with pytest.raises(ConfigError, match="is for courtroom-llm"):
        apply_preset("courtroom-llm-early", "jot")
    with pytest.raises(ConfigError, match="valid presets"):
        apply_preset("nope", None)


def test_run_with_a_preset_records_it_and_its_temperatures(server, capsys, tmp_path) -> None:
    code = main(
        [
            "run", "--preset", "courtroom-llm-early", "--set", "n_judges=3", "--set", "k_precedents=0",
            "--task", "web_of_lies", "--limit", "2", "--lm", f"openai/preset-{time.time_ns()}",
            "--api-base", server.url, "--out", str(tmp_path),
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    meta = json.loads((_run_dir(out) / "meta.json").read_text())
    assert meta["preset"] == "courtroom-llm-early" and meta["config"]["framework"] == "courtroom-llm"
    assert meta["framework_config"]["assignment"] == "fixed" and meta["framework_config"]["n_judges"] == 3
    assert meta["temperatures"] == {"clerk": 0.5, "prosecutor": 0.5, "attorney": 0.5, "judge": 0.5, "reasoner": None}


def test_sampled_roles_get_the_framework_temperature_unless_the_user_sets_one(server) -> None:
    base = dict(task="web_of_lies", limit=1, lm="openai/t", api_base=server.url)
    setup = RunSetup.build(RunConfig("self-consistency", **base, knobs={"k_shots": 0}))
    assert setup.lms.for_role("classifier").kwargs["temperature"] == 1.0  # the JoT paper's default
    setup = RunSetup.build(RunConfig("courtroom-llm", **base, seed=7))
    assert setup.lms.for_role("judge").kwargs["temperature"] == 0.5  # §4.1.3
    assert setup.program.seed == 7  # random assignment follows the run's seed
    setup = RunSetup.build(RunConfig("courtroom-llm", **base, temperature=0.2))
    assert setup.program.temperature_of("judge") == 0.2


def test_several_samples_at_temperature_0_say_so_once(server, caplog) -> None:
    base = dict(task="web_of_lies", limit=1, lm="openai/t", api_base=server.url, temperature=0.0)
    with caplog.at_level(logging.WARNING):
        RunSetup.build(RunConfig("self-consistency", **base, knobs={"k_shots": 0, "k_samples": 3}))
    lines = [r.getMessage() for r in caplog.records if "temperature 0" in r.getMessage()]
    assert len(lines) == 1 and "classifier x3" in lines[0]
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        RunSetup.build(RunConfig("self-consistency", **base, knobs={"k_shots": 0, "k_samples": 1}))
        RunSetup.build(RunConfig("courtroom-llm", **base, knobs={"judge_mode": "sequential"}))
    assert not [r for r in caplog.records if "temperature 0" in r.getMessage()]


def test_ask_sends_the_sampling_temperature_when_the_model_has_none() -> None:
    lm = scripted_lm({})
    program = FRAMEWORKS["parallel-vote"](["a", "b"], lm=lm, n_models=2)
    program(case="c")
    assert all(h["kwargs"].get("temperature") == 0.5 for h in lm.history)
    lm = scripted_lm({})
    lm.kwargs["temperature"] = 0.1  # the model's own temperature wins: no override is sent
    program = FRAMEWORKS["parallel-vote"](["a", "b"], lm=lm, n_models=2)
    program(case="c")
    assert all("temperature" not in h["kwargs"] for h in lm.history) and program.temperature_of("classifier") == 0.1


def test_frameworks_lists_presets_and_suites(capsys, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "400")  # each knob's line unwrapped (tests/test_screen.py checks 80 columns)
    assert main(["frameworks"]) == 0
    out = capsys.readouterr().out
    for name in [*PRESETS, *SUITES]:
        assert name in out
    # Each preset knob on its own line with where it comes from, or that the value is ours.
    for preset in PRESETS.values():
        for knob, value in preset.knobs.items():
            assert f"      {knob}={value}  [{preset.sources[knob]}]" in out, (preset.name, knob)
    assert "threshold=0.5  [ours:" in out and "gate=any  [ours:" in out
    for knob in ("gate=any", "sides=split", "memory=False", "assistant_input=summary", "previous_judges=all"):
        assert knob in out  # the new options, with their defaults


def test_every_preset_knob_names_its_source() -> None:
    for preset in PRESETS.values():
        assert set(preset.sources) == set(preset.knobs), preset.name
        assert all(text.strip() for text in preset.sources.values()), preset.name


def test_suites_cite_their_table_and_cover_every_row() -> None:
    for suite in SUITES.values():
        assert suite.table.startswith("Table") and suite.paper
        assert set(suite.figures) == set(suite.tasks), suite.name
        for task, figures in suite.figures.items():
            assert list(figures) == [r.name for r in suite.rows], (suite.name, task)
        for row in suite.rows:
            assert set(row.knobs) <= set(FRAMEWORKS[row.framework].knobs()), (suite.name, row.name)
    # Spot checks against the seeds' tables.
    assert get_suite("jot-table1").figures["boolean_expressions"]["jot"] == 0.98
    assert get_suite("courtroom-llm-early-table3").figures["qnli"]["courtroom-sequential"] == 0.8940
    assert get_suite("debate-feedback-table3").figures["caselaw"]["debate-feedback-assistant"] == 0.671
    for suite in SUITES.values():
        assert not suite.f1 or set(suite.f1) == set(suite.tasks), suite.name
        for task, figures in suite.f1.items():
            assert list(figures) == [r.name for r in suite.rows], (suite.name, task)
    assert get_suite("debate-feedback-table3").f1["cail2018"]["debate-feedback-assistant"] == 0.163
    assert get_suite("jot-table4").f1["causal_judgement"]["jot-1-loops"] == 0.60
    claude = get_suite("jot-table2")
    assert claude.figures["sports_understanding"]["jot"] == 0.82 and claude.f1["sports_understanding"]["jot"] == 0.79
    assert claude.figures["boolean_expressions"]["zero-shot"] == 0.62  # the Claude-3-Haiku column
    assert "--role judge=" in claude.note
    smoothing = get_suite("debate-feedback-table5")
    assert [r.knobs["smoothing"] for r in smoothing.rows] == [1.0, 0.5]
    assert smoothing.figures["caselaw"] == {"without-smoothing": 0.628, "with-smoothing": 0.657}
    assert smoothing.counts["caselaw"]["with-smoothing"] == {"correction": 93, "degradation": 11}


def test_suite_table_adds_f1_and_the_smoothing_counts() -> None:
    measured = pd.DataFrame(
        {"accuracy": [0.5, 0.75], "macro_f1": [0.4, 0.7], "n": [20, 20]},
        index=pd.Index(["without-smoothing", "with-smoothing"], name="framework"),
    )
    analyses = {"caselaw": {"with-smoothing": {"corrections": {"correction": 3, "degradation": 1, "n": 20}}}}
    table = suite_table(get_suite("debate-feedback-table5"), {"caselaw": measured}, analyses).set_index("row")
    assert (
        table.loc["with-smoothing", "paper_correction"] == 93
        and table.loc["with-smoothing", "measured_correction"] == 3
    )
    assert table.loc["with-smoothing", "measured_degradation"] == 1
    assert pd.isna(table.loc["without-smoothing", "measured_correction"])
    assert "paper_f1" not in table.columns  # Table 5 gives no F1
    jot = pd.DataFrame(
        {"accuracy": [0.5, 0.75], "macro_f1": [0.4, 0.7], "n": [20, 20]},
        index=pd.Index(["jot-without-feedback", "jot"], name="framework"),
    )
    table = suite_table(get_suite("jot-table5"), {"causal_judgement": jot}).set_index("row")
    assert table.loc["jot", "paper_f1"] == 0.72 and table.loc["jot", "measured_f1"] == 0.7


def test_suite_table_puts_the_paper_beside_the_measured_accuracy_with_a_ci() -> None:
    suite = get_suite("jot-table5")
    measured = pd.DataFrame(
        {"accuracy": [0.5, 0.75], "n": [20, 20]}, index=pd.Index(["jot-without-feedback", "jot"], name="framework")
    )
    table = suite_table(suite, {"causal_judgement": measured}).set_index("row")
    assert table.loc["jot", "paper"] == 0.74 and table.loc["jot-without-feedback", "paper"] == 0.69
    low, high = wilson(0.75, 20)
    assert (table.loc["jot", "ci_low"], table.loc["jot", "ci_high"]) == (low, high)
    assert 0.53 < low < 0.75 < high < 0.9  # Wilson's 95% interval for 15/20
    assert math.isnan(wilson(0.5, 0)[0])


def test_run_suite_runs_one_comparison_per_task_with_the_rows() -> None:
    calls = []

    class Fake:
        def __init__(self, rows):
            self.table = pd.DataFrame(
                {"accuracy": [0.5] * len(rows), "n": [4] * len(rows)}, index=pd.Index(list(rows), name="framework")
            )

    def fake_compare(task, names, rows, **kwargs):
        calls.append((task, list(names), rows, kwargs))
        return Fake(names)

    table, _ = run_suite("jot-table4", tasks=["navigate"], compare_fn=fake_compare, limit=4)
    ((task, names, rows, kwargs),) = calls
    assert task == "navigate" and names == ["jot-1-loops", "jot-3-loops", "jot-5-loops"] and kwargs == {"limit": 4}
    assert rows["jot-5-loops"] == ("jot", {"n_loops": 5}, "jot-paper")
    assert list(table["paper"]) == [0.87, 0.88, 0.91]
    with pytest.raises(ConfigError, match="has no task"):
        run_suite("jot-table4", tasks=["rte"], compare_fn=fake_compare)


def test_compare_suite_on_the_local_model_prints_the_paper_beside_the_measured(
    server, cli, monkeypatch, tmp_path
) -> None:
    """One task, one example, the JoT feedback ablation on the default model: paper figures beside measured ones.

    The default model is the embedded one ('local'); the fake server answers in llama.cpp's place
    (its start is patched out), so the table and the report are checked without a model: the real
    model's answers parse in tests/test_local.py and test_framework_contract.py.
    """
    from types import SimpleNamespace

    from courtroom.models.local import _lm

    monkeypatch.setattr(_lm, "shared_server", lambda: SimpleNamespace(alias="smollm2", api_base=server.url))
    monkeypatch.delenv("COURTROOM_LM", raising=False)
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL", raising=False)
    options = len(server.options)
    done = cli(
        "compare", "--suite", "jot-table5", "--suite-tasks", "boolean_expressions", "--limit", "1",
        "--set", "n_loops=1", "--max-tokens", "48", "--out", str(tmp_path),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = server.options[options:]
    # The embedded model's requests: the alias it serves, --max-tokens, the schema as llama.cpp takes it.
    assert sent and all(o["model"] == "smollm2" and o["max_tokens"] == 48 for o in sent)
    assert all(o["response_format"]["type"] == "json_object" for o in sent)
    out = done.stdout
    assert "judgment-of-thought, Table 5" in out
    # The suite's table at the terminal's width: task, row, the paper's figure, the measured one (of one example).
    assert re.search(r"boolean_expressions\s+jot\s+0\.98\s+[01]\.0\s", out), out
    assert re.search(r"boolean_expressions\s+jot-without-feedback\s+0\.96\s+[01]\.0\s", out), out
    from courtroom.reporting.html import write_report

    folder = next(p.parent for p in tmp_path.rglob("comparison.json"))
    page = write_report(folder, tmp_path / "r.html").read_text()
    assert page.count('<details class="example') >= 2  # one example in each of two rows


def test_compile_with_a_preset_records_it_in_the_program_file(server, capsys, tmp_path) -> None:
    path = tmp_path / "p.json"
    code = main(
        [
            "compile", "--preset", "jot-paper", "--set", "n_loops=1", "--optimizer", "labeled", "--task", "navigate",
            "--train-limit", "3", "--dev-limit", "2", "--test-limit", "0", "--lm", f"openai/cp-{time.time_ns()}",
            "--api-base", server.url,
            "-o", str(path),
        ]
    )  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    saved = json.loads(path.read_text())["metadata"]["courtroom"]
    assert saved["preset"] == "jot-paper" and saved["framework"] == "jot"
    assert saved["config"] == {
        "n_loops": 1,
        "use_lawyer": True,
        "use_prosecutor": True,
        "use_feedback": True,
        "stop_when_stable": 0,
    }


def test_study_with_a_preset_fixes_the_knobs_its_space_covers(monkeypatch, capsys) -> None:
    import courtroom.optimize.study._run as study  # what the study pipeline calls

    seen = {}

    def fake_run_study(config, **kwargs):
        seen["config"] = config
        raise ConfigError("stopped by the test")

    monkeypatch.setattr(study, "run_study", fake_run_study)
    code = main(["study", "courtroom-llm", "--preset", "courtroom-llm-early", "--space", "n_judges=1:3"])
    assert code == 2 and "stopped by the test" in capsys.readouterr().err
    space = seen["config"].space
    assert space["assignment"] == "fixed" and space["judge_mode"] == "sequential"
    assert space["n_judges"] == "1:3"  # --space wins over the preset
    assert main(["study", "jot", "--preset", "courtroom-llm-early"]) == 2
    assert "is for courtroom-llm" in capsys.readouterr().err
