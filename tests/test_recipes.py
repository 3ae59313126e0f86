"""A study's exported recipe keeps its models: ``study --export-best`` then ``compile --config``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


def _study(main, server, tmp_path: Path, *models: str) -> dict:
    code = main(
        [
            "study",
            "jot",
            "--trials",
            "2",
            "--dev-limit",
            "2",
            "--train-limit",
            "2",
            "--space",
            "n_loops=1",
            "--storage",
            f"sqlite:///{tmp_path}/s.db",
            "--out",
            str(tmp_path / "rep"),
            "--export-best",
            str(tmp_path / "best.json"),
            "--api-base",
            server.url,
            *models,
        ]
    )
    assert code == 0
    return json.loads((tmp_path / "best.json").read_text())


def _compile(main, server, tmp_path: Path, *extra: str) -> dict:
    out = tmp_path / "p.json"
    code = main(
        [
            "compile",
            "--config",
            str(tmp_path / "best.json"),
            "--optimizer",
            "labeled",
            "--opt",
            "k=1",
            "--train-limit",
            "2",
            "--dev-limit",
            "2",
            "--test-limit",
            "0",
            "-o",
            str(out),
            "--api-base",
            server.url,
            *extra,
        ]
    )
    assert code == 0
    meta = json.loads(out.read_text())["metadata"]["courtroom"]
    meta["models"].pop("default", None)
    return meta


def test_exported_recipe_compiles_with_the_study_models(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from courtroom.cli import main
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        best = _study(main, server, tmp_path, "--lm", "openai/advocate-m", "--role", "judge=openai/judge-m")
        text = json.dumps(best)
        assert server.url not in text and "127.0.0.1" not in text and "api_base" not in text
        assert best["lm"] == "openai/advocate-m"
        assert best["roles"] == {
            "lawyer": "openai/advocate-m",
            "prosecutor": "openai/advocate-m",
            "judge": "openai/judge-m",
        }
        server.models.clear()
        meta = _compile(main, server, tmp_path)
        assert meta["models"] == best["roles"]
        # Calls not served from the study's cache went to the recipe's models, not the embedded one.
        assert server.models and set(server.models) <= {"advocate-m", "judge-m"}, server.models

        # --role overrides one role of the recipe; --lm replaces every model of the recipe.
        meta = _compile(main, server, tmp_path, "--role", "judge=openai/other-m")
        assert meta["models"] == {
            "lawyer": "openai/advocate-m",
            "prosecutor": "openai/advocate-m",
            "judge": "openai/other-m",
        }
        meta = _compile(main, server, tmp_path, "--lm", "openai/third-m")
        assert set(meta["models"].values()) == {"openai/third-m"}
        assert server.models["third-m"] > 0
    capsys.readouterr()


def test_searched_model_choice_is_exported_per_role(tmp_path: Path) -> None:
    from courtroom.cli import main
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        best = _study(main, server, tmp_path, "--lm", "openai/a-m", "--lm", "openai/b-m")
        assert set(best["roles"]) == {"lawyer", "prosecutor", "judge"}
        assert set(best["roles"].values()) <= {"openai/a-m", "openai/b-m"}
        meta = _compile(main, server, tmp_path)
        assert meta["models"] == best["roles"]
