"""The command line: help in panels, one name per thing, --config files, compare --resume."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import warm
from _output import unwrapped

import courtroom
from courtroom.cli import main
from courtroom.testing import FakeServer

PANELS = ("Data", "Models", "Framework", "Output", "Execution", "Budget and cost")


def _help(command: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main([command, "--help"]) == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study"])
def test_help_is_grouped_in_panels_without_bool_markers(command, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "100")
    text = _help(command, capsys)
    for panel in PANELS:
        assert f"─ {panel} ─" in text, (panel, text)
    assert "<bool>" not in text
    # Each panel is about a screen.
    panels = re.split(r"\n╭─ ", text)[1:]
    assert all(p.count("\n") <= 40 for p in panels), [(p.split()[0], p.count("\n")) for p in panels]
    # One spelling per thing; the old ones are hidden.
    if command in ("compile", "study"):
        assert "--train-limit" in text and "--dev-limit" in text
        assert not re.search(r"--(train|dev)\s", text)
    else:
        assert "--limit" in text and "--train-limit" in text
    assert "--config" in text
    if command in ("compile", "study"):
        assert "[default: 20]" in text


class _Called(Exception):
    pass


def _capture(monkeypatch: pytest.MonkeyPatch, name: str) -> dict[str, Any]:
    """Replace ``courtroom.api.NAME`` (what the command calls) by a recorder that stops the command."""
    seen: dict[str, Any] = {}

    def record(*args: Any, **kwargs: Any) -> Any:
        spec = kwargs.pop("spec")
        flat = {k: v for section in ("data", "models", "design", "execution", "budget", "output", "study")
                for k, v in vars(getattr(spec, section)).items()}  # fmt: skip
        design = spec.design
        what = design.frameworks or design.framework
        seen.update(flat, **kwargs, spec=spec, args=(what,) if what else ())
        seen.update(train=spec.data.train_limit or 20, dev=spec.data.dev_limit or 20)
        if spec.command != "study":
            seen["lm"] = spec.models.default
        raise _Called

    monkeypatch.setattr(f"courtroom.api.{name}", record)
    return seen


def _call(monkeypatch: pytest.MonkeyPatch, name: str, argv: list[str]) -> dict[str, Any]:
    seen = _capture(monkeypatch, name)
    assert main(argv) == 1  # the recorder's _Called, after the options were parsed
    return seen


def test_one_name_per_size_in_every_command_and_the_old_names_are_refused(monkeypatch, capsys):
    run = _call(monkeypatch, "run", ["run", "cot", "--limit", "3", "--train-limit", "2"])
    assert (run["limit"], run["train_limit"]) == (3, 2)
    cmp = _call(monkeypatch, "compare", ["compare", "--frameworks", "cot", "--limit", "3", "--train-limit", "2"])
    assert (cmp["limit"], cmp["train_limit"]) == (3, 2)
    for command in ("compile", "study"):
        new = _call(monkeypatch, command, [command, "jot", "--train-limit", "3", "--dev-limit", "2"])
        default = _call(monkeypatch, command, [command, "jot"])
        assert (new["train"], new["dev"]) == (3, 2)
        assert (default["train"], default["dev"]) == (20, 20)
        capsys.readouterr()
        assert main([command, "jot", "--train", "3"]) == 2  # the old spelling names the new one
        assert "--train-limit" in capsys.readouterr().err


def test_config_file_values_apply_and_flags_override_them(tmp_path, monkeypatch):
    (tmp_path / "run.yaml").write_text(
        "framework: jot\nlimit: 5\ntrain_limit: 2\nseed: 3\nset:\n  n_loops: 2\nrole:\n  judge: openai/j\n"
    )
    seen = _call(monkeypatch, "run", ["run", "--config", str(tmp_path / "run.yaml"), "--seed", "7"])
    assert seen["args"] == ("jot",) and seen["limit"] == 5 and seen["train_limit"] == 2
    assert seen["seed"] == 7  # the flag wins
    from courtroom.api import run_config

    assert run_config(seen["spec"]).knobs["n_loops"] == 2 and seen["roles"] == {"judge": "openai/j"}

    (tmp_path / "cmp.toml").write_text('frameworks = ["zero-shot", "cot"]\nlimit = 4\nmatched-baselines = false\n')
    seen = _call(monkeypatch, "compare", ["compare", "--config", str(tmp_path / "cmp.toml"), "--limit", "6"])
    assert seen["args"] == (["zero-shot", "cot"],) and seen["limit"] == 6 and seen["matched_baselines"] is False

    # Study takes its models from the file.
    (tmp_path / "study.yml").write_text("dev-limit: 3\ntrain-limit: 4\ntrials: 2\nlm: [openai/a, openai/b]\n")
    seen = _call(monkeypatch, "study", ["study", "jot", "--config", str(tmp_path / "study.yml")])
    assert (seen["dev"], seen["train"], seen["trials"], seen["lm"]) == (3, 4, 2, ["openai/a", "openai/b"])


def test_compile_config_is_a_recipe_or_an_options_file(tmp_path, monkeypatch):
    recipe = {"kind": "courtroom-config", "framework": "jot", "task": "navigate", "knobs": {"n_loops": 1}}
    (tmp_path / "best.json").write_text(json.dumps(recipe))
    seen = _call(monkeypatch, "compile", ["compile", "--config", str(tmp_path / "best.json"), "--train-limit", "3"])
    assert seen["args"] == (None,) or seen["args"] == ()
    assert seen["config"]["task"] == "navigate" and seen["train"] == 3

    (tmp_path / "compile.yaml").write_text("framework: cot\noptimizer: labeled\ndev-limit: 4\n")
    seen = _call(monkeypatch, "compile", ["compile", "--config", str(tmp_path / "compile.yaml")])
    assert seen["args"] == ("cot",) and seen["optimizer"] == "labeled" and seen["dev"] == 4 and seen["config"] == {}


def test_unknown_config_key_fails_in_one_line_naming_the_valid_keys(tmp_path, capsys):
    (tmp_path / "bad.toml").write_text("limit = 3\nlimitt = 4\n")
    assert main(["run", "cot", "--config", str(tmp_path / "bad.toml")]) == 2
    err = capsys.readouterr().err
    assert len(unwrapped(err.strip())) == 1
    assert "unknown key limitt" in err and "valid keys:" in err and "train-limit" in err
    assert ", train," not in err  # hidden old spellings are not advertised
    (tmp_path / "list.yaml").write_text("- limit\n")
    assert main(["run", "cot", "--config", str(tmp_path / "list.yaml")]) == 2
    assert len(unwrapped(capsys.readouterr().err.strip())) == 1


COMPARE = ["compare", "--frameworks", "zero-shot,jot,cot", "--limit", "6", "--data", "generate"]


def _compare(server: FakeServer, model: str, out: Path, *extra: str) -> int:
    return main([*COMPARE, "--lm", model, "--api-base", server.url, "--out", str(out), *extra])


def test_compare_resume_finishes_without_sending_twice(tmp_path, capsys):
    with FakeServer() as server:
        assert _compare(server, "openai/whole", tmp_path / "whole") == 0
        whole = server.counts["requests"]
    capsys.readouterr()
    with FakeServer() as server:
        # A budget stop is a clean interruption: jot stops part way, cot never starts.
        assert _compare(server, "openai/cut", tmp_path / "cut", "--max-calls", "20") == 3
        err = capsys.readouterr().err
        (folder,) = (tmp_path / "cut").iterdir()
        err = " ".join(err.split())
        assert f"finish with: courtroom compare --resume {folder}" in err and "not started: cot" in err
        assert not (folder / "comparison.json").exists() and (folder / "plan.json").is_file()
        listed = courtroom.runs(tmp_path / "cut")
        assert list(listed["kind"]) == ["comparison (unfinished)"]

        # Options that would change the answers are refused in one line; so is a folder that is not a comparison.
        assert main(["compare", "--resume", str(folder), "--limit", "7", "--api-base", server.url]) == 2
        err = capsys.readouterr().err
        assert len(unwrapped(err.strip())) == 1 and "--limit 7 (the comparison has --limit 6)" in " ".join(err.split())
        assert main(["compare", "--resume", str(tmp_path), "--api-base", server.url]) == 2
        assert "not a comparison folder" in capsys.readouterr().err
        assert main(["compare", "--resume", str(folder)]) == 2  # it ran with --api-base: needed again
        assert "--api-base" in capsys.readouterr().err

        # The same options are fine; the resume finishes the comparison.
        code = main(["compare", "--resume", str(folder), "--limit", "6", "--api-base", server.url])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert server.counts["requests"] == whole  # every call once: as many as the uninterrupted comparison
    assert f"comparison folder: {folder}" in out
    info = json.loads((folder / "comparison.json").read_text())
    rows = ["zero-shot", "jot", "cot"]
    assert info["frameworks"][:3] == rows and len(info["frameworks"]) > 3  # the matched baselines too
    table = (folder / "table.md").read_text()
    assert all(f"| {f} |" in table for f in info["frameworks"])
    for f in info["frameworks"]:
        summary = json.loads((folder / info["runs"][f] / "summary.json").read_text())
        assert summary["n"] == 6 and summary["failures"] == 0


def test_python_compare_resume(tmp_path):
    from courtroom.cost.budget import BudgetExhausted

    options = {"task": "navigate", "limit": 4, "progress": False, "matched_baselines": False, "out": tmp_path}
    with FakeServer() as server:
        courtroom.compare(["cot", "zero-shot"], lm="openai/whole", api_base=server.url, **options)
        whole = server.counts["requests"]
        with pytest.raises(BudgetExhausted) as stop:
            courtroom.compare(["cot", "zero-shot"], lm="openai/api", api_base=server.url, max_calls=3, **options)
        words = stop.value.resume.split()
        folder = Path(words[words.index("--resume") + 1])
        assert words[words.index("--api-base") + 1] == server.url  # the hint is complete
        result = courtroom.compare(resume=folder, api_base=server.url, progress=False)
        assert server.counts["requests"] == 2 * whole
    assert list(result.table.index) == ["cot", "zero-shot"] and result.out_dir == folder
    assert (result.table["n"] == 4).all()


def test_ctrl_c_in_compare_names_compare_resume(tmp_path):
    env = os.environ.copy()
    with FakeServer() as server:
        assert _compare(server, "openai/whole", tmp_path / "whole", "--no-matched-baselines") == 0
        whole = server.counts["requests"]
        server.latency = 0.3
        out = tmp_path / "cut"
        args = [*COMPARE, "--lm", "openai/sig", "--api-base", server.url, "--out", str(out), "--concurrency", "2"]
        proc = warm.Popen(
            [sys.executable, "-m", "courtroom.cli", *args, "--no-matched-baselines"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        deadline = time.monotonic() + 120
        while server.counts["requests"] < whole + 10:  # zero-shot done, jot under way
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.02)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 130, err
        (folder,) = out.iterdir()
        assert f"resume with: courtroom compare --resume {folder}" in " ".join(err.split())
        server.latency = 0.0
        resumed = warm.run(
            [sys.executable, "-m", "courtroom.cli", "compare", "--resume", str(folder), "--api-base", server.url],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert resumed.returncode == 0, resumed.stderr
        assert server.counts["requests"] == 2 * whole  # the calls in flight at Ctrl-C are not sent again
    table = (folder / "table.md").read_text()
    assert all(f"| {f} |" in table for f in ("zero-shot", "jot", "cot"))


@pytest.mark.parametrize(
    ("args", "says", "not_said"),
    [
        (["study", "jot", "--keep-better"], "--keep-better is compile's: export the study's choice with --export-best",
         "Possible options"),
        (["run", "jot", "--trials", "3"], "No such option: --trials for run: it is an option of study",
         "Possible options"),
        (["compile", "--config", "study.json"], "is a study's report file, not a recipe: export the study's chosen "
         "configuration with --export-best best.json", "valid keys"),
    ],
)  # fmt: skip
def test_hints_name_the_real_fix(args: list[str], says: str, not_said: str, tmp_path, capsys, monkeypatch) -> None:
    """An option of another command, or a study folder's file given as a recipe: the step that does it."""
    monkeypatch.chdir(tmp_path)
    report = {"study": {"name": "s"}, "config": {}, "trials": [], "best": [], "provenance": {}}
    (tmp_path / "study.json").write_text(json.dumps(report))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in " ".join(err.split()) and not_said not in err and len(unwrapped(err.strip())) == 1, err


def test_help_shows_brackets_as_written(capsys) -> None:
    """``--track``'s "Needs courtroom[mlflow]." read "Needs courtroom." (rich took ``[mlflow]`` for markup)."""
    help_text = " ".join(_help("study", capsys).split()).replace("│ ", "")
    assert "Needs courtroom[mlflow]." in help_text, help_text[-600:]
