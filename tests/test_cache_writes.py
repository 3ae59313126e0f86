"""One write, many reads (SPEC §18): requests sharing a new prefix go first one, then the rest; a model
that ignored ``n`` is not asked again; batch lines read the previous round's writes; ``auto`` picks
the layout the cost model prices lower; a paper preset keeps the classic layout."""

from __future__ import annotations

import json
from typing import Any

import pytest

from courtroom.testing import FakeServer

LONG = "Facts: " + " ".join(f"fact{i}" for i in range(1500))  # past Sonnet 4.5's 1,024-token minimum
LATENCY = 0.15


class Watching(FakeServer):
    """Records, for each answered request, how many requests were open when it was processed."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.open_at: list[int] = []

    def reply(self, body: Any, *args: Any) -> Any:
        with self._lock:
            self.open_at.append(self.in_flight)
        return super().reply(body, *args)


def _claude(server: FakeServer, layout: str) -> Any:
    from courtroom.models.lms import compatible_lm

    lm = compatible_lm("anthropic/claude-sonnet-4-5", server.url)
    lm.cache, lm.prompt_layout = False, layout
    return lm


def test_the_first_request_of_a_new_prefix_goes_alone_and_its_siblings_read_it() -> None:
    # Self-consistency on Claude (no n): k samples of one prompt. Sent at once they all miss and all write.
    from courtroom.programs import SelfConsistency

    with Watching(latency=LATENCY) as server:
        SelfConsistency(["True", "False"], lm=_claude(server, "cache"), k_samples=4, k_shots=0)(case=LONG)
        written, read = server.counts["cache_write_tokens"], server.counts["cache_read_tokens"]
    assert server.counts["requests"] == 4
    assert server.open_at[0] == 1  # the first was alone: its siblings waited for its answer
    assert max(server.open_at[1:]) == 3  # then the other three at once
    assert written > 1024 and read == 3 * written  # one write, three reads


def test_a_cases_roles_wait_for_the_first_write_and_the_critical_path_grows_by_one_request() -> None:
    from courtroom.programs import JudgmentOfThought

    waves, first = {}, 0
    for layout in ("classic", "cache"):
        with Watching(latency=LATENCY) as server:
            JudgmentOfThought(["True", "False"], lm=_claude(server, layout), n_loops=3)(case=LONG)
        # A wave: the requests that arrived with no answer between them (one server tick at arrival).
        waves[layout] = len(set(server.arrivals))
        if layout == "cache":
            written, read = server.counts["cache_write_tokens"], server.counts["cache_read_tokens"]
            first = server.open_at[0]
    assert first == 1  # round 1: the first role's request alone
    assert waves["cache"] == waves["classic"] + 1  # 2 requests a loop, 3 loops: 6 waves, one more with the cache
    assert read > 4 * written  # the case written once, read by the other 8 requests (and each role's text)


def test_a_model_that_ignored_n_is_not_asked_for_n_again() -> None:
    from courtroom.programs import SelfConsistency

    class IgnoresN(FakeServer):
        def reply(self, body: Any, *args: Any) -> Any:
            return super().reply({k: v for k, v in body.items() if k != "n"}, *args)

    with IgnoresN() as server:
        lm = server.lm("openai/ignores-n", cache=False)
        program = SelfConsistency(["True", "False"], lm=lm, k_samples=3, k_shots=0)
        for i in range(3):
            assert program(case=f"case {i}").label in ("True", "False")
        asked_n = [o.get("n") for o in server.options if o.get("n")]
        assert asked_n == [3]  # asked once, answered once: every later sample is a request of its own
        assert server.counts["requests"] == 9


def test_batch_lines_of_a_round_read_what_the_round_before_wrote(
    tmp_path: Any, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    monkeypatch.setenv("COURTROOM_CACHE_DIR", str(tmp_path / "cache"))
    data = tmp_path / "cases.jsonl"
    data.write_text("\n".join(json.dumps({"text": f"Case {i}. {LONG}", "label": "yes no".split()[i % 2]})
                              for i in range(2)))  # fmt: skip
    with FakeServer(turnaround=0.02) as server:
        done = cli("run", "jot", "--lm", "anthropic/claude-sonnet-4-5", "--api-base", server.url, "--batch",
                   "--dataset", str(data), "--text-field", "text", "--label-field", "label", "--labels", "yes,no",
                   "--loops", "1", "--prompt-layout", "cache", "--out", str(tmp_path / "out"))  # fmt: skip
        assert done.returncode == 0, done.stderr
        written, read = server.counts["cache_write_tokens"], server.counts["cache_read_tokens"]
        params = server.messages.params
        sizes = [n for _, n in server.batches.created]
    # Each breakpoint in Anthropic's 1-hour cache: a batch round outlives the 5-minute one.
    marks = [b["cache_control"] for p in params for b in p["system"] if b.get("cache_control")]
    assert marks and all(m == {"type": "ephemeral", "ttl": "1h"} for m in marks)
    assert server.counts["cache_write_1h_tokens"] == written
    # Round 1: each case's first role alone (2 lines) and written; round 2: the other roles read it.
    assert sizes[0] == 2 and len(sizes) == 3
    assert read > written > 0  # per case: the system written once and read twice (each role's text written once)


@pytest.mark.parametrize(
    ("design", "knobs", "cheaper"), [("zero-shot", {}, "classic"), ("jot", {"n_loops": 3}, "cache")]
)
def test_auto_picks_the_layout_the_cost_model_prices_lower(design: str, knobs: dict[str, Any], cheaper: str) -> None:
    # One request per case writes its prefix for no read (classic is cheaper); nine share it (cache is).
    from courtroom.cost import layout_choice
    from courtroom.cost.prompt_cache import replay_dollars
    from courtroom.programs import get_framework

    with FakeServer() as server:
        program = get_framework(design)(["True", "False"], lm=_claude(server, "auto"), **knobs)
        lm = program.lms.serving("default")
        choice = layout_choice.choose(program, lm, LONG)
        # Both prices, from the prompts each layout renders for this case, priced by the provider's rule.
        prices = {
            layout: replay_dollars(layout_choice._render(program, lm, LONG, layout)) for layout in ("classic", "cache")
        }
        assert (choice.classic, choice.cache) == (prices["classic"], prices["cache"])
        assert choice.layout == cheaper == min(prices, key=lambda k: prices[k] or 0.0)
        program(case=LONG)  # the run follows the choice: Anthropic's breakpoints only in the cache layout
        assert server.options and all(bool(o.get("cache_marks")) == (cheaper == "cache") for o in server.options)


def test_without_a_price_or_a_prefix_to_cache_the_classic_layout_is_kept_unrendered() -> None:
    from courtroom.cost import layout_choice
    from courtroom.programs import JudgmentOfThought
    from courtroom.testing import scripted_lm

    lm = scripted_lm({})  # a fake: LiteLLM has no price for it
    program = JudgmentOfThought(["True", "False"], lm=lm)
    assert layout_choice.choose(program, lm, LONG) == layout_choice.Choice("classic", None, None)
    lm.model = "anthropic/claude-haiku-4-5"  # priced, but the case is far under its 4,096-token minimum
    short = " ".join(f"fact{i}" for i in range(300))
    assert layout_choice.choose(program, lm, short) == layout_choice.Choice("classic", None, None)


def test_a_paper_preset_keeps_the_classic_layout_unless_told() -> None:
    from courtroom.programs.presets import PRESETS
    from courtroom.spec import Experiment

    preset = next(iter(PRESETS))
    assert Experiment.build("run", preset=preset).models.prompt_layout == "classic"
    assert Experiment.build("run", preset=preset, prompt_layout="cache").models.prompt_layout == "cache"
    assert Experiment.build("run").models.prompt_layout is None  # the default: auto


def test_the_dry_run_prints_the_choice_and_both_prices(tmp_path: Any) -> None:
    import courtroom
    from courtroom.cost.dry_run import estimate_lines

    rows = [{"text": f"Case {i}. {LONG}", "label": "yes no".split()[i % 2]} for i in range(4)]
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    estimates, _ = courtroom.estimate(
        "jot", command="run", dataset=str(path), text_field="text", label_field="label", labels="yes,no",
        lm="anthropic/claude-sonnet-4-5", limit=4, max_tokens=50,
    )  # fmt: skip
    chosen = estimates["jot"].layout
    assert chosen and chosen["cache"] == 4 and chosen["cache_cost"] < chosen["classic_cost"]
    lines = list(estimate_lines(estimates))
    at = next(i for i, x in enumerate(lines) if "--prompt-layout auto chose cache for 4 of 4" in x)
    prices = lines[at + 1]
    assert f"${chosen['classic_cost']:.4f} classic" in prices and f"${chosen['cache_cost']:.4f} cache" in prices
    assert all(len(x) <= 80 for x in lines[at : at + 2])
