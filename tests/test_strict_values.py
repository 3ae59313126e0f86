"""Strict values: every bad value or unusable input is one line naming the fix, before anything is spent."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom.cli import main
from courtroom.errors import ConfigError
from courtroom.testing import FakeServer


@pytest.fixture(scope="module")
def server():
    with FakeServer() as s:
        yield s


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("files")
    paths = {
        "empty.jsonl": b"",
        "empty.json": b"  \n",
        "header.csv": b"input,target\n",
        "none.json": b'{"examples": []}',
        "latin1.csv": "input,target\n\u00e9t\u00e9 is,True\n".encode("latin-1"),
        "latin1.jsonl": '{"input": "\u00e9", "target": "True"}\n'.encode("latin-1"),
        "a-file": b"x",
        "nan-prices.json": b'{"openai/fake-strict": [NaN, 1]}',
        "negative-prices.json": b'{"openai/fake-strict": [1, -0.5]}',
        "nan-prices.csv": b"model,input,output\nopenai/fake-strict,nan,1\n",
    }
    for name, raw in paths.items():
        (root / name).write_bytes(raw)
    (root / "a-folder").mkdir()
    return {name: root / name for name in [*paths, "a-folder"]}


def _bad(server: FakeServer, files: dict[str, Path]) -> list[tuple[list[str], str]]:
    fake = ["--lm", "openai/fake-strict", "--api-base", server.url]
    run = ["run", "jot", "--limit", "1", *fake]
    return [
        (["run", "jot", "--set", "use_lawyer=maybe", *fake], "use_lawyer is true or false"),
        (["run", "courtroom-llm", "--set", "n_judges=2.5", *fake], "n_judges is a whole number"),
        (["run", "jot", "--set", "n_loops=abc", *fake], "n_loops is a whole number, e.g. n_loops=3"),
        (["run", "debate-feedback", "--set", "smoothing=lots", *fake], "smoothing is a number"),
        (["compare", "--frameworks", "jot,cot", "--set", "jot.use_feedback=2", *fake], "use_feedback is true or false"),
        ([*run, "--concurrency", "0"], "'--concurrency'"),
        ([*run, "--concurrency", "-3"], "greater than or equal to 1"),
        ([*run, "--repeats", "0"], "'--repeats'"),
        ([*run, "--max-tokens", "-1"], "'--max-tokens'"),
        ([*run, "--temperature", "-5"], "'--temperature'"),
        ([*run, "--fail-on-error", "1.5"], "[0, 1]"),
        # NaN, infinite or negative amounts once switched a budget off (30 requests, exit 0).
        ([*run, "--max-cost", "nan"], "--max-cost must be a finite number > 0 (dollars), got nan"),
        ([*run, "--max-cost", "inf"], "--max-cost must be a finite number > 0 (dollars), got inf"),
        ([*run, "--max-cost", "-1"], "--max-cost must be a finite number > 0 (dollars), got -1"),
        ([*run, "--timeout", "inf"], "--timeout must be a finite number > 0 (seconds), got inf"),
        ([*run, "--max-cost", "1", "--prices", str(files["nan-prices.json"])], "must be finite and >= 0"),
        ([*run, "--max-cost", "1", "--prices", str(files["negative-prices.json"])], "must be finite and >= 0"),
        ([*run, "--max-cost", "1", "--prices", str(files["nan-prices.csv"])], "must be finite and >= 0"),
        (["run", "jot", "--lm", "openai/x", "--api-base", "ftp://127.0.0.1/v1"], "http:// or https:// URL"),
        (["run", "jot", "--lm", "openai/x", "--api-base", "not-a-url"], "http:// or https:// URL"),
        (["run", "jot", "--lm", "nosuchprovider/model", "--limit", "1"], "unknown provider 'nosuchprovider'"),
        (["run", "jot", "--role", "judge=nosuchprovider/m", *fake], "unknown provider 'nosuchprovider'"),
        ([*run[:-4], "--limit", "100000", *fake], "has 300 examples: pass --limit 300 or less"),
        ([*run, "--out", str(files["a-file"])], "is a file: pass a folder"),
        ([*run, "--data", str(files["empty.jsonl"])], "the file is empty"),
        ([*run, "--data", str(files["empty.json"])], "the file is empty"),
        ([*run, "--data", str(files["header.csv"])], "it has no rows"),
        ([*run, "--data", str(files["none.json"])], "it has no rows"),
        ([*run, "--data", str(files["latin1.csv"])], "not UTF-8 text"),
        ([*run, "--data", str(files["latin1.jsonl"])], "save it as UTF-8"),
        (["compile", "jot", "--optimizer", "knn", "--opt", "k=abc", *fake], "--opt k='abc': k is a whole number"),
        (["compile", "jot", "--optimizer", "labeled", "--opt", "k", *fake], "malformed --opt 'k'"),
        (["compile", "jot", "-o", str(files["a-folder"]), *fake], "is a folder: pass a file name"),
        (
            ["compile", "zero-shot", "--optimizer", "mipro", "--train-limit", "3", "--opt", "auto=none", *fake],
            "needs --opt num_candidates=N and --opt num_trials=N",
        ),
        (
            [
                "compile",
                "zero-shot",
                "--optimizer",
                "mipro",
                "--train-limit",
                "3",
                "--dev-limit",
                "1",
                *fake,
                "--opt",
                "num_candidates=2",
                "--opt",
                "num_trials=2",
            ],
            "pass --opt minibatch_size=1",
        ),
        (["compile", "zero-shot", "--optimizer", "mipro", "--opt", "auto=huge", *fake], "use light, medium, heavy"),
        (  # once MIPROv2's "If auto is not None, num_candidates and num_trials cannot be set", mid-compile
            ["compile", "zero-shot", "--optimizer", "mipro", "--train-limit", "6", "--opt", "num_trials=3", *fake],
            "--opt num_trials=3 needs --opt num_candidates=N too (or drop num_trials to keep the auto=light budget)",
        ),
        (  # an auto budget given beside candidates by hand was silently dropped
            ["compile", "zero-shot", "--optimizer", "mipro", "--train-limit", "6", "--opt", "auto=medium", *fake]
            + ["--opt", "num_candidates=2", "--opt", "num_trials=2"],
            "--opt auto=medium and --opt num_candidates=2 both set the budget",
        ),
        (  # a study refuses it too, rather than failing every trial with MIPROv2's error
            ["study", "--frameworks", "zero-shot,cot", "--compile", "mipro", "--opt", "num_trials=2", *fake],
            "--opt num_trials=2 needs --opt num_candidates=N too",
        ),
        (["study", "jot", "--workers", "0", *fake], "'--workers'"),
        (["study", "jot", "--export-best", str(files["a-folder"]), *fake], "is a folder"),
    ]


def test_each_bad_value_is_one_line_naming_the_fix(server, files, capsys):
    wrong = []
    for args, needle in _bad(server, files):
        before = server.counts["requests"]
        code = main(args)
        _, err = capsys.readouterr()
        lines = unwrapped(err.strip())
        ok = code not in (0, None) and needle in " ".join(err.split()) and len(lines) == 1 and "Traceback" not in err
        ok = ok and server.counts["requests"] == before  # refused before any model call
        if not ok:
            wrong.append(f"{' '.join(args)} -> exit {code}: {err.strip()[:300]}")
    assert not wrong, "\n".join(wrong)


def test_report_to_a_folder(tmp_path, capsys):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    (run_dir / "meta.json").write_text("{}")
    code = main(["report", str(run_dir), "-o", str(tmp_path)])
    _, err = capsys.readouterr()
    assert code != 0 and "is a folder: pass a file name" in err and len(unwrapped(err.strip())) == 1


# Crafted program files: the checksum is recomputed, as anyone editing the file could.


@pytest.fixture()
def program_file(tmp_path: Path) -> Path:
    from courtroom.data.tasks import load_task
    from courtroom.models.lms import resolve_roles
    from courtroom.programs import build_program
    from courtroom.saving import save_program
    from courtroom.testing import oracle_lm

    train = load_task("boolean_expressions", split="train", limit=4).examples
    lm = oracle_lm({e.case: e.label for e in train}, ["True", "False"], accuracy=1.0)
    program = build_program("courtroom-llm", ["True", "False"], None, knobs={"n_judges": 1}, lms=resolve_roles(lm))
    program.prepare(train)
    return save_program(program, tmp_path / "p.json")


def _craft(path: Path, change: Any) -> None:
    from courtroom.saving import _checksum

    doc = json.loads(path.read_text())
    change(doc["metadata"]["courtroom"]["artefacts"])
    body = {k: v for k, v in doc["metadata"]["courtroom"].items() if k != "checksum"}
    check = dict(doc) | {"metadata": dict(doc["metadata"]) | {"courtroom": body}}
    doc["metadata"]["courtroom"]["checksum"] = _checksum(check)
    path.write_text(json.dumps(doc))


def _copy_as(name: str) -> Any:
    return lambda a: a.__setitem__(name, dict(a["precedent_index"]))


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        (_copy_as("__class__"), "unknown artefact '__class__'"),
        (_copy_as("lms"), "unknown artefact 'lms'"),
        (_copy_as("forward"), "unknown artefact 'forward'"),
        (lambda a: a["precedent_index"].__setitem__("data", {}), "artefact 'precedent_index' is malformed"),
        (lambda a: a["precedent_index"].__setitem__("data", None), "artefact 'precedent_index' is malformed"),
        (
            lambda a: a["precedent_index"].__setitem__("type", "courtroom.programs._reliability.ReliabilityModel"),
            "unknown artefact 'precedent_index'",
        ),
    ],
)
def test_crafted_artefacts_are_refused(program_file: Path, change: Any, needle: str) -> None:
    from courtroom.saving import load_program
    from courtroom.testing import oracle_lm

    lm = oracle_lm({}, ["True", "False"])
    load_program(program_file, lm=lm)  # the untouched file loads
    _craft(program_file, change)
    with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace("'", "'")):
        load_program(program_file, lm=lm)


def test_the_python_api_refuses_nan_budgets_and_prices() -> None:
    import courtroom

    with pytest.raises(ConfigError, match="--max-cost must be a finite number"):
        courtroom.run("jot", lm="openai/x", max_cost=float("nan"), progress=False)
    with pytest.raises(ConfigError, match="--theta must be a finite number >= 0"):
        courtroom.run("jot", lm="openai/x", theta=float("nan"), progress=False)
    with pytest.raises(ValueError, match="must be finite and >= 0"):
        courtroom.run("jot", lm="openai/x", max_cost=1.0, prices={"openai/x": [float("nan"), 1.0]}, progress=False)
