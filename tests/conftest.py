"""Isolation: DSPy settings, cache and run folders point at a temporary directory per test session."""

from __future__ import annotations

import os
import tempfile

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
# Anything that still reached DSPy's default cache would share ~/.dspy_cache with every other run.
os.environ.setdefault("DSPY_CACHEDIR", tempfile.mkdtemp(prefix="dspy-cache-"))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    # One cache per test: a test that kills a process mid-write cannot leave a damaged cache for the next.
    cache = tmp_path_factory.mktemp("cache")
    os.environ["COURTROOM_CACHE_DIR"] = str(cache)
    from courtroom.models.cache import configure_cache

    configure_cache(cache)


@pytest.fixture(autouse=True)
def _runs_dir(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)


@pytest.fixture(scope="session")
def local_lm():
    """A dspy.LM on the real embedded llama.cpp server (started once per test session)."""
    from courtroom.models.local import local_lm as make

    return make(max_tokens=64, temperature=0.0)


BOOL_LABELS = ["True", "False"]


@pytest.fixture
def cold_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch):
    """An empty LM cache for one test (runs reconfigure the cache from $COURTROOM_CACHE_DIR)."""
    path = tmp_path_factory.mktemp("cold-cache")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(path))
    from courtroom.models.cache import configure_cache

    configure_cache(path)
    return path


@pytest.fixture
def courtroom_cli():
    """``courtroom ARGS`` as a subprocess (``env`` added to this process's), captured as text."""
    import subprocess
    import sys

    def call(*args: str, env: dict[str, str] | None = None, timeout: float = 180) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "courtroom.cli", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=os.environ | (env or {}),
        )

    return call
