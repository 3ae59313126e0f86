"""Dependency pins: LiteLLM releases publicly reported as compromised are never installable."""

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

COMPROMISED_LITELLM = ("1.82.7", "1.82.8", "1.107.0")


def _litellm_requirement() -> Requirement:
    data = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    reqs = [Requirement(r) for r in data["project"]["dependencies"]]
    return next(r for r in reqs if r.name == "litellm")


def test_pyproject_excludes_each_compromised_litellm_release_by_name():
    req = _litellm_requirement()
    excluded = {s.version for s in req.specifier if s.operator == "!="}
    for version in COMPROMISED_LITELLM:
        assert not req.specifier.contains(version), f"litellm {version} is allowed by {req}"
        assert version in excluded, f"litellm {version} is not pinned out with != (ranges move; pins do not)"


def test_installed_litellm_is_not_a_compromised_release():
    installed = importlib.metadata.version("litellm")
    assert installed not in COMPROMISED_LITELLM
    assert _litellm_requirement().specifier.contains(installed)
