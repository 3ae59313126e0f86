"""Every ``COURTROOM_*`` variable is declared once and checked before anything is written or sent."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest

from courtroom import _env
from courtroom.errors import ConfigError
from courtroom.testing import FakeServer

ROOT = Path(__file__).resolve().parents[1]

BAD = [
    ("COURTROOM_PROMPT_LAYOUT", "bogus", "use classic, cache or auto"),
    ("COURTROOM_N_SAMPLING", "maybe", "(on) or 0|off|no|false (off)"),
    ("COURTROOM_N_SAMPLING", "2", "COURTROOM_N_SAMPLING='2'"),
    ("COURTROOM_LOCAL_MODEL", "/nonexistent/weights.gguf", "is not a file"),
]


@pytest.mark.parametrize(("name", "value", "says"), BAD)
@pytest.mark.parametrize("command", ["run", "study"])
def test_a_bad_variable_is_refused_before_anything_is_written_or_sent(
    tmp_path: Path, cli: Any, monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str, command: str
) -> None:
    # Before: COURTROOM_PROMPT_LAYOUT=bogus wrote a run folder with every example failed, and
    # COURTROOM_N_SAMPLING=maybe (or 2) ran as on.
    out = tmp_path / "out"
    own = ["--limit", "2"] if command == "run" else ["--trials", "1", "--dev-limit", "2", "--train-limit", "1",
                                                     "--storage", f"sqlite:///{tmp_path}/s.db"]  # fmt: skip
    with FakeServer() as server:
        monkeypatch.setenv(name, value)
        done = cli(command, "zero-shot", *own, "--lm", f"openai/env-{uuid.uuid4().hex[:6]}", "--api-base",
                   server.url, "--out", str(out))  # fmt: skip
        asked = server.counts["requests"]
    assert done.returncode == 2, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and name in lines[0] and says in lines[0], done.stderr
    assert asked == 0 and not out.exists() and not (tmp_path / "s.db").exists(), "nothing sent, nothing written"


@pytest.mark.parametrize(("name", "value", "says"), BAD)
def test_the_api_checks_them_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, value: str, says: str
) -> None:
    import courtroom

    monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match=re.escape(says)):
        courtroom.run("zero-shot", limit=1, out=str(tmp_path / "runs"))
    with pytest.raises(ConfigError, match=re.escape(says)):  # checked before the program file is read
        courtroom.predict(tmp_path / "program.json", "a case")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("value", ["1", "on", "YES", "true", "0", "off", "No", "false", ""])
def test_every_spelling_of_on_and_off_is_taken(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from courtroom.models.sampling import enabled

    monkeypatch.setenv("COURTROOM_N_SAMPLING", value)
    _env.check_environment()
    assert enabled() is (value.lower() not in _env.OFF)


def test_every_variable_the_package_reads_is_declared_and_documented() -> None:
    read = set()
    for path in (ROOT / "courtroom").rglob("*.py"):
        read |= set(re.findall(r"\bCOURTROOM_[A-Z_]*[A-Z]\b", path.read_text()))
    read -= {"COURTROOM_BATCH", "COURTROOM_COMMON"}  # a prefix named in a docstring; a preset's constant
    assert read - set(_env.VARIABLES) == set(), "read but not declared in courtroom/_env.py"
    page = (ROOT / "docs" / "guides" / "reliability.md").read_text()
    assert [v for v in _env.VARIABLES if f"`{v}`" not in page] == [], "declared but not in the variables' table"
