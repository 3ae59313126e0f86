import copy

import pytest

from courtroom.errors import ConfigError
from courtroom.models.lms import (
    DEFAULT,
    LMSpec,
    OpenAICompatibleLM,
    RoleLMs,
    build_lm,
    parse_role_overrides,
    resolve_roles,
)
from courtroom.testing import scripted_lm

ROLES = ("lawyer", "prosecutor", "judge")


def test_parse_role_overrides():
    assert parse_role_overrides(["judge=openai/gpt-4o", " lawyer = openai/gpt-4o-mini "], ROLES) == {
        "judge": "openai/gpt-4o",
        "lawyer": "openai/gpt-4o-mini",
    }


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("judge", "write ROLE=MODEL"),
        ("=openai/x", "write ROLE=MODEL"),
        ("judge=", "write ROLE=MODEL"),
        ("jury=openai/x", "valid roles are judge, lawyer, prosecutor"),
    ],
)
def test_malformed_roles_name_the_fix(item, message):
    with pytest.raises(ConfigError, match=message):
        parse_role_overrides([item], ROLES)


def test_resolve_roles_shares_identical_specs_and_falls_back_to_default():
    lms = resolve_roles(
        "openai/gpt-4o-mini",
        {"judge": "openai/gpt-4o", "lawyer": "openai/gpt-4o-mini"},
        valid_roles=ROLES,
        temperature=0.3,
    )
    assert lms.for_role("prosecutor") is lms[DEFAULT]
    assert lms.for_role("lawyer") is lms[DEFAULT]
    assert lms.for_role("judge").model == "openai/gpt-4o"
    assert lms.for_role("judge").kwargs["temperature"] == 0.3
    assert lms.names(ROLES) == {
        "lawyer": "openai/gpt-4o-mini",
        "prosecutor": "openai/gpt-4o-mini",
        "judge": "openai/gpt-4o",
    }


def test_unknown_role_in_api_is_refused():
    with pytest.raises(ConfigError, match="unknown role"):
        resolve_roles(scripted_lm({}), {"jury": scripted_lm({})}, valid_roles=ROLES)


def test_role_map_survives_deepcopy():
    lms = RoleLMs({DEFAULT: scripted_lm({})})
    assert copy.deepcopy(lms) is lms
    assert copy.deepcopy({"x": lms})["x"] is lms


def test_unresolvable_model_string():
    with pytest.raises(ConfigError, match="LiteLLM name"):
        build_lm(LMSpec("gpt4"))


def test_api_base_models_send_max_tokens_and_structured_outputs():
    # DSPy's native client would send max_completion_tokens, which llama.cpp's server ignores.
    # (That such runs never import LiteLLM is checked in tests/test_startup.py.)
    from courtroom.programs import build_program
    from courtroom.testing import FakeServer

    with FakeServer() as server:
        lm = build_lm(LMSpec("openai/my-model", api_base=server.url, max_tokens=77))
        assert isinstance(lm, OpenAICompatibleLM) and lm.api_base == server.url
        assert not isinstance(lm.engine, str) and "api_base" not in lm.kwargs  # the engine holds the URL
        lms = resolve_roles(LMSpec("openai/my-model-2", api_base=server.url, max_tokens=77))
        build_program("zero-shot", ["True", "False"], knobs={}, lms=lms)(case="True or False")
    (options,) = server.options
    assert options["model"] == "my-model-2" and options["max_tokens"] == 77 and "max_completion_tokens" not in options
    assert options["response_format"]["type"] == "json_schema"


def test_api_base_with_credentials_or_another_wire_goes_through_litellm():
    for model, url in (
        ("openai/m", "http://user:pw@127.0.0.1:9/v1"),
        ("openai/m", "http://127.0.0.1:9/v1?token=t"),
        ("ollama_chat/llama3.1", "http://127.0.0.1:9"),
    ):
        lm = build_lm(LMSpec(model, api_base=url, max_tokens=77))
        assert isinstance(lm, OpenAICompatibleLM) and lm.api_base == url and lm.kwargs["max_tokens"] == 77
        if model.startswith("openai/"):  # a proxy: live through LiteLLM, batches to its batch API
            from courtroom.models._proxy_engine import ProxyEngine

            assert isinstance(lm.engine, ProxyEngine) and lm.engine._proxy == url
        else:
            assert lm.engine == "litellm" and lm.kwargs["api_base"] == url
