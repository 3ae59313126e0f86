"""An output never overwrites an input: one check (``courtroom._files.check_output``) for every command
that writes a path refuses the command's own inputs and the files of run, comparison and study folders."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from _output import unwrapped

from courtroom.testing import FakeServer


def _files(root: Path) -> dict[str, Path]:
    run = root / "runs" / "2026-01-01_jot_x_abc"
    run.mkdir(parents=True)
    (run / "meta.json").write_text('{"framework": "jot"}')
    (run / "results.jsonl").write_text('{"id": "1"}\n')
    comparison = root / "comparisons" / "c1"
    comparison.mkdir(parents=True)
    (comparison / "comparison.json").write_text("{}")
    (root / "x.db").write_bytes(b"SQLite format 3\x00 a study")
    (root / "cases.jsonl").write_text('{"case": "a"}\n')
    (root / "program.json").write_text("{}")
    (root / "prices.json").write_text('{"openai/fake": [1, 2]}')
    (root / "loop").symlink_to(root / "loop")
    return {"run": run, "comparison": comparison, "root": root}


def test_an_output_that_would_overwrite_an_input_is_refused(tmp_path: Path, courtroom_cli: Any) -> None:
    f = _files(tmp_path)
    run, root = f["run"], f["root"]
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.is_symlink()}
    with FakeServer() as server:
        fake = ["--lm", "openai/fake", "--api-base", server.url]
        cases = [
            (["report", str(run), "-o", str(run / "results.jsonl")], "inside the run folder"),
            (["report", str(run), "-o", str(run / "report.html")], "inside the run folder"),
            (["report", str(f["comparison"]), "-o", str(f["comparison"] / "r.html")], "inside the comparison folder"),
            (
                ["compile", "jot", "--train-limit", "2", "--dev-limit", "2", *fake, "-o", str(run / "meta.json")],
                "inside the run folder",
            ),  # fmt: skip
            (
                ["compile", "jot", *fake, "--prices", str(root / "prices.json"), "-o", str(root / "prices.json")],
                "is an input of this command",
            ),  # fmt: skip
            (
                [
                    "study",
                    "jot",
                    "--trials",
                    "1",
                    *fake,
                    "--storage",
                    f"sqlite:///{root / 'x.db'}",
                    "--export-best",
                    str(root / "x.db"),
                ],
                "is an input of this command",
            ),  # fmt: skip
            (
                [
                    "predict",
                    str(root / "program.json"),
                    "--input",
                    str(root / "cases.jsonl"),
                    "--out",
                    str(root / "cases.jsonl"),
                ],
                "is an input of this command",
            ),  # fmt: skip
            (
                ["predict", str(root / "program.json"), "a case", "--out", str(root / "program.json")],
                "is an input of this command",
            ),  # fmt: skip
            (["run", "jot", "--limit", "1", *fake, "--out", str(run)], "is a run folder"),
            (["report", str(run), "-o", str(root / "loop")], "cannot follow the path"),
        ]
        wrong = []
        for args, needle in cases:
            done = courtroom_cli(*args, cwd=root)
            lines = unwrapped(done.stderr.strip())
            if not (done.returncode == 2 and len(lines) == 1 and needle in " ".join(done.stderr.split())):
                wrong.append(f"{' '.join(args)} -> exit {done.returncode}: {done.stderr.strip()[:300]}")
        assert server.counts["requests"] == 0
    assert not wrong, "\n".join(wrong)
    after = {p: p.read_bytes() for p in before}
    assert after == before  # before the check: results.jsonl became HTML, meta.json a program, x.db a recipe


def test_the_python_api_refuses_the_same_outputs(tmp_path: Path) -> None:
    import courtroom
    from courtroom.errors import ConfigError

    run = _files(tmp_path)["run"]
    with pytest.raises(ConfigError, match="inside the run folder"):
        courtroom.report(run, out=run / "results.jsonl")
    with pytest.raises(ConfigError, match="inside the run folder"):
        courtroom.compile("jot", lm="openai/fake", out=str(run / "meta.json"), progress=False)
    assert json.loads((run / "meta.json").read_text()) == {"framework": "jot"}


def test_compile_onto_a_device_is_refused_before_the_compile(tmp_path: Path, courtroom_cli: Any) -> None:
    """Before: ``compile -o /dev/full`` ran the whole compile, then "cannot write a file" (no path named)."""
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        done = courtroom_cli("compile", "zero-shot", "--task", "boolean_expressions", "--optimizer", "bootstrap",
                             "--train-limit", "2", "--dev-limit", "1", "--test-limit", "0", "--lm", "openai/fake",
                             "--api-base", server.url, "-o", "/dev/full")  # fmt: skip
        assert server.counts["requests"] == 0
    assert done.returncode == 2 and "-o /dev/full is not a regular file" in done.stderr, done.stderr
    assert len(unwrapped(done.stderr.strip())) == 1
