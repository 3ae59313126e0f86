"""n-sampling (SPEC §18): k samples of one prompt go as one request with ``n`` where the model takes it.

Asserted on what the fakes received: requests and their ``n`` (``server.options``,
``engine.requests``), what was billed, the cache under each rollout's key, and the meter.
"""

from __future__ import annotations

from typing import Any

import dspy
import pytest

from courtroom.models import sampling
from courtroom.models.batch import batching
from courtroom.models.lms import compatible_lm
from courtroom.models.usage import metered
from courtroom.programs import CourtroomLLM, DebateFeedback, ParallelVote, SelfConsistency
from courtroom.programs.settle import SettleThenTrial
from courtroom.testing import FakeServer, oracle_lm, scripted_lm

BINARY = ["True", "False"]


def _votes(i: int) -> dict[str, Any]:
    return {"answer": BINARY[i % 2], "reasoning": f"sample {i}"}


def _counting_responder() -> Any:
    seen = [0]

    def respond(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        seen[0] += 1
        return _votes(seen[0] - 1)

    return respond


def test_self_consistency_sends_one_request_with_n_and_keeps_each_sample_a_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with FakeServer(_counting_responder()) as server:
        lm = server.lm()
        program = SelfConsistency(BINARY, lm=lm, k_samples=3, k_shots=0)
        with metered() as meter:
            out = [program(case=f"case {i}") for i in range(2)]
        assert server.counts["requests"] == 2 and [o.get("n") for o in server.options] == [3, 3]
        assert [len(o.votes) for o in out] == [3, 3] and len(out[0].transcript) == 3
        assert out[0].votes == ["True", "False", "True"]  # the three choices, in order
        usage = meter.usage
        assert (usage.calls, usage.sent, usage.cached) == (6, 2, 0)
        # The prompt is billed once per request: the meter's tokens are what the server billed.
        assert usage.prompt_tokens == sum(p for _, p, _ in server.billed)
        assert usage.completion_tokens == sum(c for _, _, c in server.billed)
        # Each sample is cached under its own rollout's key: the same run without n sends nothing.
        monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")
        with metered() as again:
            repeat = [program(case=f"case {i}") for i in range(2)]
        assert server.counts["requests"] == 2 and again.usage.cached == 6
        assert [o.votes for o in repeat] == [o.votes for o in out]


def test_k_requests_cache_what_one_request_with_n_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COURTROOM_N_SAMPLING", "0")
    with FakeServer(_counting_responder()) as server:
        program = SelfConsistency(BINARY, lm=server.lm(), k_samples=3, k_shots=0)
        program(case="c")
        assert server.counts["requests"] == 3 and all("n" not in o for o in server.options)
        monkeypatch.setenv("COURTROOM_N_SAMPLING", "1")
        program(case="c")
        program = SelfConsistency(BINARY, lm=server.lm(), k_samples=5, k_shots=0)
        program(case="c")  # 5 samples: 3 cached, the other 2 in one request
        assert server.counts["requests"] == 4 and server.options[-1]["n"] == 2


def test_the_answers_are_the_same_draws_with_and_without_n(monkeypatch: pytest.MonkeyPatch) -> None:
    # The oracle draws each answer by how often it has seen the prompt: n samples in one request
    # are drawn exactly as n requests are, so the verdicts and the votes match case by case (k
    # concurrent requests reach the fake in any order: the votes are compared as multisets).
    gold = {f"case {i:03d}": BINARY[i % 3 == 0] for i in range(40)}
    runs = {}
    for on in ("1", "0"):
        monkeypatch.setenv("COURTROOM_N_SAMPLING", on)
        lm = oracle_lm(gold, BINARY, accuracy=0.6, seed=5)
        program = SelfConsistency(BINARY, lm=lm, k_samples=5, k_shots=0)
        runs[on] = [sorted(program(case=c).votes) for c in gold]
        sizes = {n for _, n in lm.engine_impl.requests}
        assert sizes == ({5} if on == "1" else {1})
    assert runs["1"] == runs["0"]
    right = sum(v.count(g) for v, g in zip(runs["1"], gold.values(), strict=True)) / (5 * len(gold))
    assert 0.45 < right < 0.75  # the oracle's 0.6 per sample, not one answer repeated


def test_a_server_that_ignores_n_gets_the_other_samples_one_by_one() -> None:
    # llama-cpp-python's server ignores n (one choice back): the rest go as requests of their own.
    class IgnoresN(FakeServer):
        def reply(self, body: Any) -> Any:
            return super().reply({k: v for k, v in body.items() if k != "n"})

    with IgnoresN(_counting_responder()) as server:
        with metered() as meter:
            out = SelfConsistency(BINARY, lm=server.lm(), k_samples=3, k_shots=0)(case="c")
    assert [o.get("n") for o in server.options] == [3, None, None]
    assert out.votes == ["True", "False", "True"]
    assert (meter.usage.calls, meter.usage.sent) == (3, 3)


def test_models_without_n_get_k_requests() -> None:
    # Anthropic's Messages API has no n; a mixed panel asks each member; DSPy's LiteLLM route keeps k requests.
    with FakeServer(_counting_responder()) as server:
        claude = compatible_lm("anthropic/claude-x", server.url)
        assert not sampling.takes_n(claude)
        ParallelVote(BINARY, lm=claude, n_models=3)(case="c")
        assert server.counts["requests"] == 3 and all("n" not in o for o in server.options)
    a, b = scripted_lm({"classifier": {"answer": "True"}}), scripted_lm({"classifier": {"answer": "False"}})
    ParallelVote(BINARY, roles={"classifier": [a, b]}, lm=a, n_models=4)(case="c")
    assert a.engine_impl.requests == [("classifier", 1)] * 2 == b.engine_impl.requests
    assert not sampling.takes_n(dspy.LM("ollama_chat/x", engine="litellm"))


def test_dspys_native_openai_route_takes_n() -> None:
    with FakeServer(_counting_responder()) as server:
        lm = dspy.LM("openai/fake", api_base=server.url, api_key="sk-fake", cache=False)
        assert sampling.takes_n(lm)
        out = SelfConsistency(BINARY, lm=lm, k_samples=3, k_shots=0)(case="c")
    assert server.counts["requests"] == 1 and server.options[0]["n"] == 3
    assert out.votes == ["True", "False", "True"]


def test_every_design_that_samples_one_prompt_asks_once() -> None:
    lm = scripted_lm({})
    CourtroomLLM(BINARY, lm=lm, n_judges=5, k_precedents=0)(case="c")
    assert ("judge", 5) in lm.engine_impl.requests and lm.engine_impl.counts["judge"] == 5
    lm = scripted_lm({})
    SettleThenTrial(BINARY, lm=lm, panel_size=5)(case="c")
    assert lm.engine_impl.requests[0] == ("panel", 5)
    # Debate-Feedback, sides split: each side's debaters share their opinion prompt; without
    # memory round 2's opinions are round 1's bytes, asked with them (2 debaters x 2 rounds).
    lm = scripted_lm({})
    DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=4, memory=False, variant="single")(case="c")
    opinions = [n for role, n in lm.engine_impl.requests if role == "debater" and n > 1]
    assert opinions == [4, 4] and lm.engine_impl.counts["debater"] == 16
    # With memory each round's opinions quote the last: nothing is asked ahead.
    lm = scripted_lm({})
    DebateFeedback(BINARY, lm=lm, n_rounds=2, n_debaters=4, memory=True, variant="single")(case="c")
    assert [n for role, n in lm.engine_impl.requests if role == "debater" and n > 1] == [2, 2]


def test_a_batch_line_carries_n() -> None:
    with FakeServer(_counting_responder()) as server:
        lm = server.lm()
        with batching(None, [lm]):
            out = SelfConsistency(BINARY, lm=lm, k_samples=3, k_shots=0)(case="c")
        assert server.counts["batch_lines"] == 1 and server.counts["requests"] == 0
        assert len(server.billed) == 1 and out.votes == ["True", "False", "True"]


def test_the_budget_reserves_one_request_with_n_answers() -> None:
    from types import SimpleNamespace

    from courtroom.cost.budget import Budget, OverBudget

    lm = SimpleNamespace(model="openai/fake", kwargs={"max_tokens": 100})
    call = SimpleNamespace(messages=[{"role": "user", "content": "hi"}], kwargs={})
    budget = Budget(max_cost=1.0, max_calls=10, prices={"openai/fake": [0.0, 5000.0]})  # an answer: at most $0.50
    ticket = budget.reserve(lm, call)  # one answer: $0.50 reserved
    budget.release(ticket, None)
    with pytest.raises(OverBudget):
        budget.reserve(lm, call, 3)  # three answers of one request: $1.50 would pass $1
    ticket = budget.reserve(lm, call, 2)  # $1.00: within, and one request of --max-calls
    assert budget.spent_calls == 2


def test_a_run_summary_counts_samples_apart_from_requests(cold_cache: Any) -> None:
    from courtroom.runner.runs import RunConfig, run
    from courtroom.runner.summaries import calls_rows

    with FakeServer() as server:
        config = RunConfig("self-consistency", "boolean_expressions", data="generate", limit=3, lm="openai/fake",
                           api_base=server.url, knobs={"k_samples": 3, "k_shots": 0})  # fmt: skip
        summary = run(config).summary
        assert server.counts["requests"] == 3
    assert (summary["calls"], summary["sent"], summary["shared"]) == (9, 3, 6)
    rows = dict(calls_rows(summary))
    assert rows["requests sent"] == "3 = 3 for those calls (with 6 more samples in their requests: n-sampling)"


def test_bad_answers_in_a_request_with_n_are_asked_again_one_by_one() -> None:
    first = [True]

    def garbage_once(prompt: str, schema: dict[str, Any]) -> str | None:
        bad, first[0] = first[0], False
        return "garbage" if bad else None

    with FakeServer(_counting_responder(), fault_for=garbage_once) as server:
        with metered() as meter:
            out = SelfConsistency(BINARY, lm=server.lm(cache=False), k_samples=3, k_shots=0)(case="c")
    # One request with n=3 came back as garbage: each sample is asked again under its retry rollout.
    assert [o.get("n") for o in server.options] == [3, None, None, None]
    assert len(out.votes) == 3 and (meter.usage.calls, meter.usage.sent) == (6, 4)
