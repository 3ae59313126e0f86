"""``--n-sampling/--no-n-sampling`` and ``--prompt-layout``: declared once, they reach every command.

Each command that sends requests (run, compare, compile, study, predict, score) runs twice on the
fake server: once with ``--no-n-sampling --prompt-layout cache``, once with ``--n-sampling
--prompt-layout classic``. What the server received says whether each reached the requests: a body
with ``n`` (k samples of one prompt in one request) and a system message that opens with the
program's preamble and ends with the case (the cache layout, :mod:`courtroom.models._layout`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from courtroom.models._layout import CASE_MARKER
from courtroom.testing import FakeServer

K = 3
SAMPLES = ["--set", f"k_samples={K}", "--set", "k_shots=0"]
LABELS = ["True", "False"]


def _program_file(tmp_path: Path) -> Path:
    """A self-consistency program file without demos (a call with demos keeps the classic layout)."""
    from courtroom.programs import SelfConsistency
    from courtroom.saving import save_program
    from courtroom.testing import scripted_lm

    program = SelfConsistency(LABELS, lm=scripted_lm({}), k_samples=K, k_shots=0)
    meta = {"task": {"name": "boolean_expressions", "labels": LABELS}, "models": {"default": "openai/m"}}
    return save_program(program, tmp_path / "program.json", meta)


def _commands(tmp_path: Path, url: str) -> dict[str, list[str]]:
    model = ["--lm", "openai/m", "--api-base", url]
    program = str(_program_file(tmp_path))
    return {
        "run": ["run", "self-consistency", *SAMPLES, *model, "--limit", "1"],
        "compare": ["compare", "--frameworks", "self-consistency,zero-shot", *SAMPLES, *model, "--limit", "1",
                    "--no-matched-baselines"],
        "compile": ["compile", "self-consistency", *SAMPLES, *model, "--optimizer", "labeled", "--opt", "k=1",
                    "--train-limit", "1", "--dev-limit", "1", "--test-limit", "0", "-o", str(tmp_path / "c.json")],
        "study": ["study", "self-consistency", *SAMPLES, *model, "--trials", "1", "--dev-limit", "1",
                  "--train-limit", "1", "--test-limit", "0", "--no-prune",
                  "--storage", f"sqlite:///{tmp_path / 'studies.db'}"],
        "predict": ["predict", program, "Is True and False true?", *model],
        "score": ["score", program, *model, "--task", "boolean_expressions", "--limit", "1",
                  "--no-matched-baselines"],
    }  # fmt: skip


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study", "predict", "score"])
def test_each_command_sends_its_requests_as_the_two_options_say(
    command: str,
    tmp_path: Path,
    cli: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COURTROOM_N_SAMPLING", raising=False)
    monkeypatch.delenv("COURTROOM_PROMPT_LAYOUT", raising=False)
    seen = {}
    for i, flags in enumerate((["--no-n-sampling", "--prompt-layout", "cache"],
                               ["--n-sampling", "--prompt-layout", "classic"])):  # fmt: skip
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache{i}"))  # every request is sent
        with FakeServer() as server:
            args = _commands(tmp_path / str(i), server.url)[command]
            done = cli(*args, *flags)
            assert done.returncode == 0, done.stdout + done.stderr
            systems = [m[0].get("content", "") for m in map(json.loads, server.sent) if m[0].get("role") == "system"]
            seen[flags[0]] = ({o.get("n") for o in server.options}, systems)
    ns, systems = seen["--no-n-sampling"]
    # compile's optimized program has demos: those calls keep the classic layout (the starting one's do not).
    laid_out = [CASE_MARKER in s for s in systems]
    assert ns == {None} and any(laid_out) and (command == "compile" or all(laid_out))
    ns, systems = seen["--n-sampling"]
    assert K in ns and systems and not any(CASE_MARKER in s for s in systems)


def test_a_layout_that_is_not_one_is_refused_in_one_line(cli: Callable[..., Any]) -> None:
    done = cli("run", "zero-shot", "--prompt-layout", "stacked", "--lm", "openai/m", "--limit", "1")
    assert done.returncode == 2
    assert "--prompt-layout 'stacked': use one of classic, cache, auto" in done.stderr


def test_the_environment_gives_the_default_and_the_option_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from courtroom.models import sampling
    from courtroom.models._layout import chosen, layout_for

    claude = SimpleNamespace(model="anthropic/claude-sonnet-4-5")
    monkeypatch.setenv("COURTROOM_PROMPT_LAYOUT", "cache")
    monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")
    assert layout_for(claude) == "cache" and not sampling.enabled(claude)
    claude.prompt_layout, claude.n_sampling = "classic", True
    assert layout_for(claude) == "classic" and sampling.enabled(claude)
    # Without the environment: auto, which a program resolves per case by price.
    monkeypatch.delenv("COURTROOM_PROMPT_LAYOUT")
    assert chosen() == "auto" == layout_for(SimpleNamespace(model="anthropic/claude-sonnet-4-5"))


def test_a_resume_keeps_the_runs_layout_and_may_change_n_sampling(
    tmp_path: Path, cli: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("COURTROOM_PROMPT_LAYOUT", raising=False)
    with FakeServer() as server:
        args = ["run", "self-consistency", *SAMPLES, "--lm", "openai/m", "--api-base", server.url, "--limit", "1",
                "--prompt-layout", "cache", "--out", str(tmp_path / "runs")]  # fmt: skip
        assert cli(*args).returncode == 0
        run_dir = next((tmp_path / "runs").iterdir())
        resume = ["run", "--resume", str(run_dir), "--api-base", server.url]
        refused = cli(*resume, "--prompt-layout", "classic")
        assert refused.returncode == 2 and "--prompt-layout" in refused.stderr, refused.stderr
        assert cli(*resume, "--no-n-sampling").returncode == 0  # how requests go, not what they ask
