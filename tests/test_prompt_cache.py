"""The provider's prompt cache (SPEC §18): usage records cached reads and writes, costs use LiteLLM's
cache prices, and the fake server reports cached tokens under OpenAI's rule as OpenAI does."""

from __future__ import annotations

import litellm
import pytest

from courtroom.eval.harness import ExampleResult, total_usage
from courtroom.models.usage import Usage, cache_price_per_token, metered
from courtroom.programs import SelfConsistency, ZeroShot
from courtroom.testing import FakeServer

LONG = " ".join(f"fact{i}" for i in range(1500))  # well past OpenAI's 1,024-token minimum prefix


def test_the_fake_server_caches_as_openai_and_the_meter_prices_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")  # three requests of one prompt: two are cache reads
    with FakeServer(prompt_cache="openai") as server:
        lm = server.lm("openai/gpt-4o-mini", cache=False)
        with metered() as meter:
            SelfConsistency(["a", "b"], lm=lm, k_samples=3, k_shots=0)(case=LONG)
        prompt = server.billed[0][1]
        assert server.counts["requests"] == 3 and server.counts["cached_tokens"] == 2 * prompt
    usage = meter.usage
    assert usage.cache_read_tokens == 2 * prompt and usage.cache_write_tokens == 0
    assert usage.by_model["openai/gpt-4o-mini"]["cache_read_tokens"] == 2 * prompt
    info = litellm.model_cost["gpt-4o-mini"]
    expected = (
        prompt * info["input_cost_per_token"]
        + 2 * prompt * info["cache_read_input_token_cost"]
        + usage.completion_tokens * info["output_cost_per_token"]
    )
    assert usage.cost() == pytest.approx(expected)
    # gpt-4o-mini has no batch cache price in LiteLLM: no discount is assumed in a batch.
    batch = (
        3 * prompt * info["input_cost_per_token_batches"]
        + usage.completion_tokens * info["output_cost_per_token_batches"]
    )
    assert usage.cost(batch=True) == pytest.approx(batch)


def test_short_prompts_and_first_requests_are_not_cached() -> None:
    with FakeServer(prompt_cache="openai") as server:
        lm = server.lm("openai/gpt-4o-mini", cache=False)
        with metered() as meter:
            for _ in range(2):
                ZeroShot(["a", "b"], lm=lm)(case="a short case")
            ZeroShot(["a", "b"], lm=lm)(case=LONG)
    assert server.counts["requests"] == 3 and server.counts["cached_tokens"] == 0
    assert meter.usage.cache_read_tokens == 0


def test_cache_prices_come_from_litellm_and_sum_across_examples() -> None:
    claude = "anthropic/claude-sonnet-4-5"
    info = litellm.model_cost["claude-sonnet-4-5"]
    assert cache_price_per_token(claude) == (
        info["cache_read_input_token_cost"],
        info["cache_creation_input_token_cost"],
    )
    assert cache_price_per_token(claude, batch=True) == (
        info["cache_read_input_token_cost_batches"],
        info["cache_creation_input_token_cost_batches"],
    )
    assert cache_price_per_token("openai/gpt-4o-mini", {"openai/gpt-4o-mini": (1.0, 2.0)}) is None  # the user's table
    row = {
        "sent": 1,
        "prompt_tokens": 3000,
        "completion_tokens": 100,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 1500,
    }
    results = [
        ExampleResult(id=str(i), input="c", gold="a", prediction="a", usage={"by_model": {claude: row}})
        for i in range(2)
    ]
    total = total_usage(results)
    assert total.by_model[claude] == {k: 2 * v for k, v in row.items()}
    expected = 2 * (
        500 * info["input_cost_per_token"]
        + 1000 * info["cache_read_input_token_cost"]
        + 1500 * info["cache_creation_input_token_cost"]
        + 100 * info["output_cost_per_token"]
    )
    assert total.cost() == pytest.approx(expected)
    assert Usage(by_model={claude: dict(row)}).cost({claude: (3.0, 15.0)}) == pytest.approx(
        (3000 * 3.0 + 100 * 15.0) / 1e6  # a user's price has no cache price: its input price applies
    )
