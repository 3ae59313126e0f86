"""The README's Python blocks run, offline, so README and library cannot drift apart.

Every fenced ``python`` block runs in order in one temporary folder (a block may use a file an
earlier one wrote), each in a fresh namespace. ``openai/...`` models are served by a loopback
:class:`FakeServer` (LiteLLM and the OpenAI client read ``OPENAI_BASE_URL``), so the blocks run
unchanged. A block that cannot run offline is preceded by ``<!-- not-tested: REASON -->``.
A ``bash`` block preceded by ``<!-- tested: cli -->`` runs too, in the same order and folder: each
``courtroom ...`` line is one command, called in this process, that must exit 0.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
SKIP = re.compile(r"<!--\s*not-tested:\s*(.*?)\s*-->")
CLI = re.compile(r"<!--\s*tested:\s*cli\s*-->")


def cli_blocks(text: str) -> list[tuple[int, list[str]]]:
    """(line number, commands) of every bash block marked ``<!-- tested: cli -->``."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if line.strip() == "```bash" and i and CLI.search(lines[i - 1]):
            body = []
            j = i + 1
            while lines[j].strip() != "```":
                command = lines[j].split(" #")[0].strip()
                if command.startswith("courtroom "):
                    body.append(command)
                j += 1
            out.append((i + 2, body))
    return out


def python_blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, code, reason it is not tested or None) of every fenced python block."""
    lines = text.splitlines()
    blocks, i = [], 0
    while i < len(lines):
        if lines[i].strip() == "```python":
            start, body = i + 1, []
            i += 1
            while lines[i].strip() != "```":
                body.append(lines[i])
                i += 1
            indent = min((len(x) - len(x.lstrip()) for x in body if x.strip()), default=0)
            before = next((x for x in reversed(lines[: start - 1]) if x.strip()), "")
            skip = SKIP.search(before)
            blocks.append((start, "\n".join(x[indent:] for x in body), skip.group(1) if skip else None))
        i += 1
    return blocks


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch):
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        for var in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            monkeypatch.setenv(var, server.url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-fake")
        monkeypatch.setenv("COURTROOM_LM", "openai/gpt-4o-mini")
        yield server


def run_block(code: str, line: int) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, f"README.md:{line}", "exec"), {"__name__": "__readme__"})
    return out.getvalue()


def test_every_untested_block_says_why() -> None:
    blocks = python_blocks(README.read_text())
    assert len(blocks) >= 5
    assert all(reason for _, _, reason in blocks if reason is not None)
    assert sum(reason is None for _, _, reason in blocks) >= len(blocks) - 2  # most blocks run


def test_readme_python_blocks_run(fake_openai) -> None:
    import shlex

    from courtroom.cli import main

    text = README.read_text()
    steps = [(line, "python", code) for line, code, reason in python_blocks(text) if reason is None]
    steps += [(line, "cli", commands) for line, commands in cli_blocks(text)]
    ran = commands_run = 0
    for line, kind, body in sorted(steps, key=lambda s: s[0]):
        if kind == "python":
            run_block(body, line)
            ran += 1
            continue
        for command in body:
            assert main(shlex.split(command)[1:]) == 0, f"README.md:{line}: {command}"
            commands_run += 1
    assert ran and fake_openai.counts["requests"] > 0
    assert commands_run >= 5  # the walk-through from a CSV to a compiled program runs as written


def test_the_walk_through_covers_every_experiment_command() -> None:
    (_, commands), *_ = cli_blocks(README.read_text())
    verbs = {c.split()[1] for c in commands}
    assert {"run", "study", "compile", "predict"} <= verbs
    assert any("--frameworks" in c for c in commands) and all("--dataset" in c for c in commands[:4])


def test_readme_fakes_snippet_records_roles_in_order() -> None:
    text = README.read_text()
    section = text[text.index("## Testing your own pipelines offline") :]
    line, code, _ = next(b for b in python_blocks(section) if "engine_impl.turns" in b[1])
    printed = run_block(code, line).splitlines()
    assert printed[0] == "True"
    turns = ast.literal_eval(printed[1])
    # Two rounds: both advocates speak, then the judge decides, each round.
    assert len(turns) == 6 and turns[2] == turns[5] == "judge"
    assert set(turns[:2]) == set(turns[3:5]) == {"lawyer", "prosecutor"}
    assert printed[2] == "Counter({'lawyer': 2, 'prosecutor': 2, 'judge': 2})"
