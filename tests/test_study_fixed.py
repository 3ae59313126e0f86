"""Knobs a study holds fixed: a preset's (all of them, and its role temperatures) and ``--set``'s.

Each trial must run them, as ``courtroom run`` with the same preset or ``--set`` would: asserted on
what the model server received, not on what the study recorded. The dry run prices them, the
recipe carries them to ``compile``, and a study continued under other fixed knobs is refused.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest

from courtroom.testing import FakeServer


def _study(courtroom_cli: Any, tmp_path: Path, server: FakeServer, *args: str) -> Any:
    return courtroom_cli(
        "study", *args, "--task", "boolean_expressions", "--trials", "2", "--dev-limit", "2", "--train-limit", "2",
        "--lm", f"openai/fixed-{time.time_ns()}", "--api-base", server.url, "--no-prune",
        "--storage", f"journal:{tmp_path / 'study.journal'}", "--out", str(tmp_path / "report"),
        "--export-best", str(tmp_path / "best.json"),
    )  # fmt: skip


def _system_prompts(server: FakeServer) -> list[str]:
    return [json.loads(m)[0]["content"] for m in server.served]


def test_set_outside_the_space_reaches_every_trial_and_the_recipe(tmp_path, courtroom_cli) -> None:
    with FakeServer() as server:
        proc = _study(
            courtroom_cli, tmp_path, server, "debate-feedback",
            "--set", "word_limit=37", "--set", "prob_method=votes", "--space", "n_rounds=1",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    served = [json.loads(m) for m in server.served]
    debaters = [m for m in served if "at most 37 words" in json.dumps(m)]
    assert debaters, "no debater was told the word limit --set gave"
    assert not [m for m in served if "at most 200 words" in json.dumps(m)], "a trial ran the default word limit"
    # prob_method=votes: the judge writes a label, never a probability per label (the default, field).
    judge_schemas = [o["response_format"] for o in server.options if "response_format" in o]
    assert judge_schemas and not [s for s in judge_schemas if "probabilities" in json.dumps(s)]
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert recipe["knobs"]["word_limit"] == 37 and recipe["knobs"]["prob_method"] == "votes"


def test_a_preset_runs_whole_in_every_trial(tmp_path, courtroom_cli) -> None:
    from courtroom.programs.presets import PRESETS

    with FakeServer() as server:
        proc = _study(courtroom_cli, tmp_path, server, "--preset", "jot-paper", "--space", "n_loops=1:2")
    assert proc.returncode == 0, proc.stderr
    # jot-paper samples every role at temperature 1 (§4.1: the models' default parameters).
    assert set(PRESETS["jot-paper"].temperatures.values()) == {1.0}
    temps = [o.get("temperature") for o in server.options]
    assert temps and set(temps) == {1.0}, set(temps)
    recipe = json.loads((tmp_path / "best.json").read_text())
    assert recipe["preset"] == "jot-paper"
    # compile from the recipe runs the trial the study scored: the preset's temperatures too.
    with FakeServer() as server:
        proc = courtroom_cli(
            "compile", "--config", str(tmp_path / "best.json"), "--optimizer", "labeled", "--train-limit", "3",
            "--dev-limit", "2", "--test-limit", "0", "--lm", f"openai/fixed-{time.time_ns()}", "--api-base", server.url,
            "-o", str(tmp_path / "program.json"),
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    temps = [o.get("temperature") for o in server.options]
    assert temps and set(temps) == {1.0}, set(temps)


def test_the_dry_run_prices_the_fixed_knobs(courtroom_cli) -> None:
    def calls(*args: str) -> int:
        proc = courtroom_cli(
            "study", "debate-feedback", "--task", "boolean_expressions", "--trials", "1", "--dev-limit", "2",
            "--lm", "openai/gpt-4o-mini", "--dry-run", "--space", "n_rounds=1", "--space", "n_debaters=2", *args,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        row = next(line for line in proc.stdout.splitlines() if line.startswith("| debate-feedback"))
        return int(re.sub(r"\D", "", row.split("|")[3].split("(")[0]))  # "<= 1,234 (max: data decides)"

    # votes with 5 samples: five judge answers where the default asks one.
    assert calls("--set", "prob_method=votes", "--set", "k_samples=5") > calls()


def test_fixed_knobs_are_checked_before_any_request(tmp_path, courtroom_cli) -> None:
    storage = ["--storage", f"journal:{tmp_path / 'x.journal'}", "--trials", "1", "--lm", "openai/never"]
    cases = {
        ("jot", "--set", "n_loops=2", "--space", "n_loops=1:3"): "--set (fixed) and --space (searched)",
        ("jot", "--set", "n_loops=9"): "searches n_loops in",
        ("jot", "--set", "nope=1"): "jot has no knob nope",
        ("--frameworks", "jot,cot", "--set", "nope=1"): "no design of jot, cot has it",
        ("--frameworks", "jot,cot", "--set", "khan-debate.n_rounds=2"): "no design of jot, cot has it",
        ("--frameworks", "jot,cot", "--preset", "debate-feedback-paper"): "not among the designs (jot, cot)",
    }
    for args, message in cases.items():
        proc = courtroom_cli("study", *args, *storage)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)


def test_a_study_continued_with_other_fixed_knobs_is_refused(tmp_path, courtroom_cli) -> None:
    with FakeServer() as server:
        first = _study(courtroom_cli, tmp_path, server, "debate-feedback", "--set", "word_limit=37",
                       "--space", "n_rounds=1", "--study-name", "fixed")  # fmt: skip
        assert first.returncode == 0, first.stderr
        again = _study(courtroom_cli, tmp_path, server, "debate-feedback", "--set", "word_limit=50",
                       "--space", "n_rounds=1", "--study-name", "fixed")  # fmt: skip
    assert again.returncode == 2 and "--set" in again.stderr and "word_limit" in again.stderr


def test_a_study_across_designs_holds_each_designs_preset_and_set(tmp_path, courtroom_cli) -> None:
    """The same fixed knobs across designs (and with --compile, a study of one design that compiles)."""

    def dry(*args: str) -> dict[str, int]:
        proc = courtroom_cli(
            "study", "--frameworks", "jot,cot", "--task", "boolean_expressions", "--trials", "2", "--dev-limit", "2",
            "--lm", "openai/gpt-4o-mini", "--dry-run", *args,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        rows = [line.split("|") for line in proc.stdout.splitlines() if line.startswith("| jot")]
        return {r[1].strip(): int(re.sub(r"\D", "", r[3].split("(")[0])) for r in rows}

    # jot at its dearest: 5 rounds of 3 calls; the paper's 3 rounds; --set n_loops=2 wins over it.
    assert dry() == {"jot (1 trial)": 30}
    assert dry("--preset", "jot-paper") == {"jot (1 trial)": 18}
    assert dry("--preset", "jot-paper", "--set", "jot.n_loops=2") == {"jot (1 trial)": 12}

    with FakeServer() as server:
        proc = _study(
            courtroom_cli, tmp_path, server, "jot", "--compile", "labeled", "--opt", "k=1", "--preset", "jot-paper",
            "--space", "jot.use_lawyer=true",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    temps = [o.get("temperature") for o in server.options]
    assert temps and set(temps) == {1.0}, set(temps)
    judges = [m for m in server.served if "feedback_to_lawyer" in m]
    assert judges and len(server.served) % 9 == 0  # 3 rounds of lawyer, prosecutor, judge per case

    with FakeServer() as server:
        proc = _study(
            courtroom_cli, tmp_path / "df", server, "--frameworks", "jot,debate-feedback",
            "--set", "debate-feedback.word_limit=37", "--space", "design=debate-feedback",
            "--space", "debate-feedback.n_rounds=1",
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    served = "".join(server.served)
    assert "at most 37 words" in served and "at most 200 words" not in served
    recipe = json.loads((tmp_path / "df" / "best.json").read_text())
    assert recipe["framework"] == "debate-feedback" and recipe["knobs"]["word_limit"] == 37


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study", "study-across-designs"])
def test_loops_means_n_loops_in_every_command(command: str, courtroom_cli) -> None:
    """One option, one meaning: ``--loops 2`` is JoT at two rounds (6 calls a case) wherever it is taken."""
    args = {
        "run": ["run", "jot", "--limit", "2"],
        "compare": ["compare", "--frameworks", "jot,cot", "--limit", "2"],
        "compile": [
            "compile",
            "jot",
            "--optimizer",
            "labeled",
            "--opt",
            "k=1",
            "--train-limit",
            "2",
            "--dev-limit",
            "2",
        ],
        "study": ["study", "jot", "--trials", "1", "--dev-limit", "2"],
        "study-across-designs": ["study", "--frameworks", "jot,cot", "--trials", "1", "--dev-limit", "2"],
    }[command]
    proc = courtroom_cli(
        *args, "--task", "boolean_expressions", "--loops", "2", "--lm", "openai/gpt-4o-mini", "--dry-run"
    )
    assert proc.returncode == 0, proc.stderr
    jot = next(line for line in proc.stdout.splitlines() if line.startswith("| jot"))
    assert jot.split("|")[4].strip() == "6.00", jot
