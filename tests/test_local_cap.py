"""What the embedded model's LM sends: max_tokens, the bounded schema and its per-field length cap.

The llama.cpp server is replaced by the fake server (``shared_server`` patched), so these
tests read the request ``local_lm`` really sends without loading a model; that llama.cpp accepts
it and its answers parse is proved on the real server (tests/test_local.py, test_framework_contract.py).
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from courtroom import _env
from courtroom.errors import ConfigError
from courtroom.models.local import _lm
from courtroom.models.usage import metered
from courtroom.programs import build_program
from courtroom.testing._fake_server import FakeServer


def _sent_limits(monkeypatch: pytest.MonkeyPatch, max_tokens: int) -> set[int]:
    schemas: list[dict[str, Any]] = []

    def responder(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        schemas.append(schema)
        from courtroom.testing._fakes import answer_for_schema

        return answer_for_schema(schema, {}, "reply")

    with FakeServer(responder) as srv:
        fake = SimpleNamespace(alias="fake", api_base=srv.url)
        monkeypatch.setattr(_lm, "shared_server", lambda: fake)
        lm = _lm.local_lm(max_tokens=max_tokens, temperature=0.0)
        lm.cache = False
        build_program("jot", ["True", "False"], knobs={"n_loops": 1}, lm=lm)(case="True or False")
    assert schemas
    return {p["maxLength"] for s in schemas for p in s["properties"].values() if "maxLength" in p}


def test_local_lm_sends_max_tokens_and_a_bounded_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    """max_tokens (not max_completion_tokens, which llama.cpp ignores) and the schema as json_object."""
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL", raising=False)
    monkeypatch.delenv(_env.MAX_CHARS_ENV, raising=False)
    with FakeServer() as srv:
        monkeypatch.setattr(_lm, "shared_server", lambda: SimpleNamespace(alias="fake", api_base=srv.url))
        lm = _lm.local_lm(max_tokens=64, temperature=0.0)
        lm.cache = False
        assert lm.kwargs["max_tokens"] == 64 and lm.engine == "litellm"
        with metered() as meter:
            build_program("jot", ["True", "False"], knobs={"n_loops": 1, "use_lawyer": False}, lm=lm)(case="True is")
    assert meter.usage.calls == 2 and len(srv.options) == 2  # the prosecutor and the judge, each sent once
    for sent in srv.options:  # the request bodies as they arrived
        assert sent["max_tokens"] == 64 and "max_completion_tokens" not in sent
        assert sent["response_format"]["type"] == "json_object"
    schemas = [sent["response_format"]["schema"] for sent in srv.options]
    (judge,) = [s for s in schemas if "decision" in s["properties"]]
    assert judge["properties"]["decision"]["enum"] == ["True", "False"]
    for schema in schemas:
        assert all(p.get("maxLength") for k, p in schema["properties"].items() if k != "decision")


def test_bundled_model_keeps_short_fields(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL", raising=False)
    monkeypatch.delenv(_env.MAX_CHARS_ENV, raising=False)
    assert max(_sent_limits(monkeypatch, 2048)) == 240


def test_own_model_field_cap_scales_with_max_tokens(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    weights = tmp_path / "big.gguf"
    weights.write_bytes(b"GGUF")
    monkeypatch.setenv("COURTROOM_LOCAL_MODEL", str(weights))
    monkeypatch.delenv(_env.MAX_CHARS_ENV, raising=False)
    small, large = _sent_limits(monkeypatch, 512), _sent_limits(monkeypatch, 4096)
    assert max(large) > 2000 and max(large) > 4 * max(small)


def test_user_sets_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("COURTROOM_LOCAL_MODEL", raising=False)
    monkeypatch.setenv(_env.MAX_CHARS_ENV, "1500")
    assert max(_sent_limits(monkeypatch, 4096)) == 1500
    # The max_tokens budget still bounds it, so the JSON answer always closes.
    assert max(_sent_limits(monkeypatch, 256)) <= (256 - 12) * 2.5 < 1500
    monkeypatch.setenv(_env.MAX_CHARS_ENV, "lots")
    with pytest.raises(ConfigError, match="COURTROOM_LOCAL_MAX_CHARS"):
        _lm.local_lm()


def test_llama_threads_default_to_the_cores_and_the_user_sets_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from courtroom.models.local import _server

    monkeypatch.delenv(_env.THREADS_ENV, raising=False)
    for cores, threads in [(1, 1), (2, 2), (4, 4), (16, 4)]:
        monkeypatch.setattr(_server.os, "cpu_count", lambda cores=cores: cores)
        assert _env.default_threads() == threads
    monkeypatch.setenv(_env.THREADS_ENV, "3")
    assert _server.LocalServer().n_threads == 3
    for bad in ("0", "two"):
        monkeypatch.setenv(_env.THREADS_ENV, bad)
        with pytest.raises(ConfigError, match="COURTROOM_LOCAL_THREADS"):
            _env.default_threads()


def test_the_threads_set_read_the_prompt_too(monkeypatch: pytest.MonkeyPatch) -> None:
    # Before: only --n_threads was passed, and llama.cpp read every prompt (most of a call's cost)
    # on all the machine's cores whatever COURTROOM_LOCAL_THREADS said.
    from courtroom.models.local import _server

    started: list[list[str]] = []

    def popen(cmd: list[str], **kwargs: object) -> object:
        started.append(cmd)
        raise OSError("not started in this test")

    monkeypatch.setenv(_env.THREADS_ENV, "1")
    monkeypatch.setattr(_server.subprocess, "Popen", popen)
    server = _server.LocalServer()
    with pytest.raises(OSError, match="not started"):
        server.start()
    server.stop()
    (cmd,) = started
    assert cmd[cmd.index("--n_threads") + 1] == "1" and cmd[cmd.index("--n_threads_batch") + 1] == "1"
