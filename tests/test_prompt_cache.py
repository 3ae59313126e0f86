"""The provider's prompt cache (SPEC §18): usage records cached reads and writes, costs use LiteLLM's
cache prices, and the fake server reports cached tokens under OpenAI's rule as OpenAI does."""

from __future__ import annotations

from typing import Any

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
        lm.prompt_layout = "cache"  # the first request alone, then the two others read its prefix
        with metered() as meter:
            SelfConsistency(["a", "b"], lm=lm, k_samples=3, k_shots=0)(case=LONG)
        prompt = server.billed[0][1]
        read = server.counts["cached_tokens"]
        assert server.counts["requests"] == 3 and prompt - 128 < read / 2 <= prompt  # whole 128-token blocks
    usage = meter.usage
    assert usage.cache_read_tokens == read and usage.cache_write_tokens == 0
    assert usage.by_model["openai/gpt-4o-mini"]["cache_read_tokens"] == read
    info = litellm.model_cost["gpt-4o-mini"]
    expected = (
        (3 * prompt - read) * info["input_cost_per_token"]
        + read * info["cache_read_input_token_cost"]
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
    # courtroom's Anthropic batch lines write to the 1-hour cache: its price, at the batch discount.
    discount = info["input_cost_per_token_batches"] / info["input_cost_per_token"]
    assert cache_price_per_token(claude, batch=True) == pytest.approx(
        (info["cache_read_input_token_cost_batches"], info["cache_creation_input_token_cost_above_1hr"] * discount)
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


def test_the_cache_layout_starts_every_request_for_a_case_with_the_same_bytes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from courtroom.programs import JudgmentOfThought
    from courtroom.testing import scripted_lm

    def systems(layout: str, case: str) -> tuple[list[str], list[str], str]:
        monkeypatch.setenv("COURTROOM_PROMPT_LAYOUT", layout)
        lm = scripted_lm({"judge": {"decision": "True"}})
        out = JudgmentOfThought(["True", "False"], lm=lm, n_loops=2)(case=case)
        assert out.label == "True"
        return [s for _, s in lm.engine_impl.systems], [p for _, p in lm.engine_impl.prompts], lm.engine_impl.turns

    classic, _, _ = systems("classic", "CASE ONE")
    assert len(set(classic)) == 3  # each role's own instructions first: no prefix shared across roles
    one, prompts, roles = systems("cache", "CASE ONE")
    two, _, _ = systems("cache", "CASE TWO")
    assert len(set(one)) == 1 and one[0].endswith("CASE ONE") and two[0].endswith("CASE TWO")
    assert one[0][: -len("CASE ONE")] == two[0][: -len("CASE TWO")]  # the preamble: every role's instructions
    assert all(f"## Role: {role}" in one[0] for role in ("lawyer", "prosecutor", "judge"))
    # Each request names its role after the shared bytes, and the fakes still read the case.
    assert all("CASE ONE" in p for p in prompts)
    # The role's own text is a message of its own after the shared bytes (its requests share it too).
    from courtroom.models._layout import CACHE_ADAPTER, preamble

    program = JudgmentOfThought(["True", "False"], lm=scripted_lm({}), n_loops=1)
    judge = dict(program.named_predictors())["judge"]
    with preamble(program.preamble(), "judge"):
        messages = CACHE_ADAPTER.format(judge.signature, [], {"case": "CASE ONE", **dict.fromkeys(
            (k for k in judge.signature.input_fields if k != "case"), "x")})  # fmt: skip
    assert [m["role"] for m in messages] == ["system", "user", "user"]
    assert messages[1]["content"].startswith("Your role: judge") and "CASE ONE" not in messages[1]["content"]
    monkeypatch.setenv("COURTROOM_PROMPT_LAYOUT", "bogus")
    from courtroom.errors import ConfigError

    with pytest.raises(ConfigError, match="COURTROOM_PROMPT_LAYOUT"):
        systems("bogus", "CASE")


def test_anthropic_reads_each_cases_prefix_from_its_cache_at_its_prices(monkeypatch: pytest.MonkeyPatch) -> None:
    from courtroom.models.lms import compatible_lm
    from courtroom.programs import JudgmentOfThought

    monkeypatch.setenv("COURTROOM_PROMPT_LAYOUT", "auto")  # the cache layout on anthropic/ models only
    case = " ".join(f"fact{i}" for i in range(800))
    with FakeServer() as server:
        claude = compatible_lm("anthropic/claude-sonnet-4-5", server.url)
        claude.cache = False
        with metered() as meter:
            JudgmentOfThought(["True", "False"], lm=claude, n_loops=2)(case=case)
        assert [o.get("cache_breakpoint") for o in server.options] == ["system"] * 6
        written, read = server.counts["cache_write_tokens"], server.counts["cache_read_tokens"]
        # Two breakpoints a request: the system message (preamble and case) and the role's own message.
        assert [o.get("cache_marks") for o in server.options] == [[0, 1]] * 6
        import json

        from litellm.litellm_core_utils.default_encoding import encoding

        systems = {json.loads(k)[0]["content"] for k in server.sent}
        assert len(systems) == 1
        size = len(encoding.encode(systems.pop(), disallowed_special=()))
        roles = written - size  # each role's message written once, the system by the first request
        # Round 1: the second and third roles read the system; round 2: each reads system and role.
        assert size > 1024 and roles > 0 and read == 5 * size + roles
        # An OpenAI model keeps the classic layout under auto: no mark, nothing of the kind read.
        with metered():
            JudgmentOfThought(["True", "False"], lm=server.lm("openai/gpt-4o-mini", cache=False), n_loops=1)(case=case)
        assert "cache_breakpoint" not in server.options[-1]
    usage = meter.usage
    assert (usage.cache_write_tokens, usage.cache_read_tokens) == (written, read)
    info = litellm.model_cost["claude-sonnet-4-5"]
    expected = (
        (usage.prompt_tokens - read - written) * info["input_cost_per_token"]
        + read * info["cache_read_input_token_cost"]
        + written * info["cache_creation_input_token_cost"]
        + usage.completion_tokens * info["output_cost_per_token"]
    )
    assert usage.cost() == pytest.approx(expected)
    assert usage.cost() < (
        usage.prompt_tokens * info["input_cost_per_token"] + usage.completion_tokens * info["output_cost_per_token"]
    )


def test_the_dry_run_prices_the_providers_cache(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    import courtroom
    from courtroom.cost.dry_run import estimate_lines

    rows = [{"text": f"Case {i}. " + " ".join(f"fact{j}" for j in range(900)), "label": "yes no".split()[i % 2]}
            for i in range(12)]  # fmt: skip
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    monkeypatch.setenv("COURTROOM_PROMPT_LAYOUT", "auto")  # Claude: the cache layout and its breakpoint

    def dry(lm: str) -> Any:
        rows, _ = courtroom.estimate(
            "jot", command="run", dataset=str(path), text_field="text", label_field="label", labels="yes,no",
            lm=lm, limit=4, max_tokens=50,
        )  # fmt: skip
        return rows["jot"]

    claude, mini = dry("anthropic/claude-sonnet-4-5"), dry("openai/gpt-4o-mini")
    # Claude: each case's preamble and case written once, then read by the trial's 8 other requests.
    assert claude.cache_write_tokens and claude.cache_read_tokens > 5 * claude.cache_write_tokens
    assert claude.cache_cost < claude.cost and claude.batch_cache_cost < claude.batch_cost
    assert claude.prompt_tokens > mini.prompt_tokens  # the cache layout's preamble: longer prompts
    # gpt-4o-mini: the classic layout; a role's later rounds share its instructions and the case.
    assert mini.cache_read_tokens > 0 and mini.cache_write_tokens == 0 and mini.cache_cost < mini.cost
    assert mini.batch_cache_cost == pytest.approx(mini.batch_cost)  # no batch cache price in LiteLLM
    line = next(x for x in estimate_lines({"jot": claude}) if x.startswith("with the provider's prompt cache"))
    assert f"jot ${claude.cache_cost:.4f}" in line


CASES = [f"Case {i}: " + " ".join(f"fact{i}x{j}" for j in range(60)) for i in range(3)]


def _keys_sent(model: str, layout: str) -> list[tuple[str, Any]]:
    """(case, prompt_cache_key) of every request a JoT run on ``CASES`` sent to the fake server."""
    import json

    from courtroom.programs import JudgmentOfThought

    sent: list[tuple[str, Any]] = []

    class Recording(FakeServer):
        def reply(self, body: Any) -> Any:
            case = next(c for c in CASES if c in json.dumps(body["messages"]))
            sent.append((case, body.get("prompt_cache_key")))
            return super().reply(body)

    with Recording() as server:
        lm = server.lm(model, cache=False)
        lm.prompt_layout = layout
        program = JudgmentOfThought(["True", "False"], lm=lm, n_loops=2)
        for case in CASES:
            program(case=case)
    return sent


def test_openai_requests_carry_one_prompt_cache_key_per_case() -> None:
    sent = _keys_sent("openai/gpt-4o-mini", "classic")
    assert len(sent) == 6 * len(CASES)  # two rounds of lawyer, prosecutor and judge per case
    keys: dict[str, set[Any]] = {}
    for case, key in sent:
        keys.setdefault(case, set()).add(key)
    # Every request about a case carries the same key, each case its own; the key never holds the text.
    assert all(len(k) == 1 and None not in k for k in keys.values())
    assert len({k for ks in keys.values() for k in ks}) == len(CASES)
    assert not any(case[:20] in str(key) for case, key in sent)
    # Another OpenAI-wire server (vLLM) gets the key only when the cache layout asks for it.
    assert {key for _, key in _keys_sent("hosted_vllm/m", "classic")} == {None}
    assert None not in {key for _, key in _keys_sent("hosted_vllm/m", "cache")}


def test_the_cache_hint_leaves_the_answers_cache_alone() -> None:
    # A run with the hint and one without share DSPy's cache: the key is not part of it.
    from dspy.clients import execution

    assert "prompt_cache" in execution.IGNORED_CACHE_KEYS


def test_anthropic_batch_lines_carry_the_breakpoint_where_the_layout_puts_one(
    tmp_path: Any, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    marks = {}
    for layout in ("cache", "classic"):
        monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / f"cache-{layout}"))
        with FakeServer(turnaround=0.02) as server:
            args = ["run", "jot", "--lm", "anthropic/claude-sonnet-4-5", "--api-base", server.url, "--batch",
                    "--limit", "2", "--loops", "1", "--prompt-layout", layout,
                    "--out", str(tmp_path / layout)]  # fmt: skip
            done = cli(*args)
            assert done.returncode == 0, done.stderr
            params = server.messages.params
            assert params and server.counts["requests"] == 0  # every request went as a batch line
            marks[layout] = [
                [bool(b.get("cache_control")) for b in p["system"]] if isinstance(p["system"], list) else [False]
                for p in params
            ]
    assert all(m == [True] for m in marks["cache"])  # one system block (preamble and case), marked
    assert not any(any(m) for m in marks["classic"])


@pytest.mark.parametrize(("design", "knobs"), [("debate-feedback", {"n_rounds": 2}), ("jot", {"n_loops": 2})])
def test_the_layout_changes_no_verdict_on_the_oracle(design: str, knobs: dict[str, Any]) -> None:
    # The oracle draws from the role's fields, not from where the layout put its instructions.
    from courtroom.programs import get_framework
    from courtroom.testing import oracle_lm

    gold = {f"Case {i}: " + " ".join(f"w{i}x{j}" for j in range(30)): ["True", "False"][i % 2] for i in range(12)}
    verdicts = {}
    for layout in ("classic", "cache"):
        lm = oracle_lm(gold, ["True", "False"], accuracy=0.7, seed=3)
        lm.prompt_layout = layout
        program = get_framework(design)(["True", "False"], lm=lm, **knobs)
        verdicts[layout] = [program(case=case).label for case in gold]
    assert verdicts["classic"] == verdicts["cache"]


def test_a_batch_line_is_the_same_request_with_or_without_its_cache_key() -> None:
    # A folder whose batches went out before prompt_cache_key was sent is followed on resume, not paid twice.
    from courtroom.models.batch._collector import request_key

    body = {"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "c"}]}
    assert request_key({**body, "prompt_cache_key": "courtroom-abc"}) == request_key(body)
    assert request_key({**body, "n": 3}) != request_key(body)


def test_a_case_under_the_minimum_is_cached_up_to_the_roles_message(monkeypatch: pytest.MonkeyPatch) -> None:
    # A 400-word case and the preamble stay under Sonnet 4.5's 1,024 tokens; with the role's own text
    # they pass it: each role's later requests for the case read that prefix (issue 44's 400-word cases).
    import json

    from litellm.litellm_core_utils.default_encoding import encoding

    from courtroom.models.lms import compatible_lm
    from courtroom.programs import JudgmentOfThought

    case = "Facts: " + " ".join(["plaintiff", "contract", "breach", "notice"] * 100)
    with FakeServer() as server:
        claude = compatible_lm("anthropic/claude-sonnet-4-5", server.url)
        claude.cache, claude.prompt_layout = False, "cache"
        with metered() as meter:
            JudgmentOfThought(["True", "False"], lm=claude, n_loops=3)(case=case)
        system = {json.loads(k)[0]["content"] for k in server.sent}.pop()
        assert len(encoding.encode(system, disallowed_special=())) < 1024  # nothing to cache at the system mark
        written, read = server.counts["cache_write_tokens"], server.counts["cache_read_tokens"]
    assert written > 1024 and read == 2 * written  # three roles: written in round 1, read in rounds 2 and 3
    assert (meter.usage.cache_write_tokens, meter.usage.cache_read_tokens) == (written, read)


def test_no_cache_hint_where_dspy_would_route_through_litellm(monkeypatch: pytest.MonkeyPatch) -> None:
    # Under $OPENAI_BASE_URL DSPy sends openai/ names through LiteLLM, which refuses a prompt_cache:
    # the hint is left out there, not every request failed.
    import dspy

    from courtroom.models._layout import cache_hint

    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_BASE", raising=False)
    assert cache_hint(dspy.LM("openai/gpt-4o-mini"), False, "a case") is not None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    assert cache_hint(dspy.LM("openai/gpt-4o-mini"), False, "a case") is None
    assert cache_hint(dspy.LM("openai/gpt-4o-mini", engine="litellm"), True, "a case") is None
