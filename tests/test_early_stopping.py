"""Early-stopping knobs (SPEC §10): off by default with the very same calls and prompts; on, they
stop when their condition holds and only then, say so, refuse bad values, and are searchable."""

from __future__ import annotations

import random
import re
from collections import Counter
from typing import Any

import pytest

from courtroom.errors import ConfigError
from courtroom.optimize.study.spaces import build_space, default_params, sample
from courtroom.programs import FRAMEWORKS, CourtroomLLM, DebateFeedback, JudgmentOfThought, KhanDebate
from courtroom.programs._probability import max_change
from courtroom.testing import oracle_lm, scripted_lm

BINARY = ["True", "False"]
KNOBS = {  # framework -> (knob, a value that turns it on, extra knobs it needs)
    "jot": ("stop_when_stable", 2, {"n_loops": 5}),
    "courtroom-llm": ("early_stop", True, {"n_judges": 5, "k_precedents": 0}),
    "debate-feedback": ("stop_epsilon", 0.05, {"n_rounds": 3}),
    "khan-debate": ("stop_on_concession", True, {"n_rounds": 3}),
}
STABLE = {  # the rule every multi-round design shares: framework -> the knobs it needs
    "jot": {"n_loops": 5},
    "courtroom-llm": {"n_judges": 5, "judge_mode": "sequential", "k_precedents": 0},
    "debate-feedback": {"n_rounds": 3},
}


def _field(prompt: str, name: str) -> str:
    m = re.search(rf"\[\[ ## {name} ## \]\]\n(.*?)(?=\n\n|\Z)", prompt, re.S)
    assert m, f"no field {name} in prompt"
    return m.group(1).strip()


def _calls(lm: Any) -> tuple[Counter[str], Counter[tuple[str, str]]]:
    """Calls per role and the prompts sent (a multiset: concurrent calls arrive in any order)."""
    return Counter(lm.engine_impl.counts), Counter(lm.engine_impl.prompts)


# -- off: exactly the old calls and prompts ------------------------------------------------------------


@pytest.mark.parametrize("name", [*KNOBS, *(f"{f}:stable" for f in STABLE if f != "jot")])
def test_knob_off_sends_the_same_calls_and_prompts_as_not_giving_it(name: str) -> None:
    name, _, stable = name.partition(":")
    knob, _, extra = ("stop_when_stable", 2, STABLE[name]) if stable else KNOBS[name]
    cls = FRAMEWORKS[name]
    off = cls.early_stop_knobs[knob]
    assert cls.knobs()[knob] == off  # off by default
    gold = {f"case {i}: is it so?": BINARY[i % 2] for i in range(6)}
    runs = []
    for knobs in (extra, extra | {knob: off}):
        lm = oracle_lm(gold, BINARY, accuracy={"default": 0.6})
        program = cls(BINARY, lm=lm, **knobs)
        preds = [program(case=case) for case in gold]
        assert not program.adaptive and all("stopped_early" not in p for p in preds)
        runs.append((_calls(lm), [p.label for p in preds]))
    assert runs[0] == runs[1]


def _debater_calls(lm: Any) -> list[tuple[str, str]]:
    """(prompt, system message) of each debater call."""
    engine = lm.engine_impl
    return [(p, s) for (r, p), (_, s) in zip(engine.prompts, engine.systems, strict=True) if r == "debater"]


def test_khan_default_debater_prompt_does_not_ask_for_a_concession() -> None:
    lm = scripted_lm({})
    KhanDebate(BINARY, lm=lm, n_rounds=1)(case="c")
    lm_on = scripted_lm({})
    KhanDebate(BINARY, lm=lm_on, n_rounds=1, stop_on_concession=True)(case="c")
    off, on = _debater_calls(lm), _debater_calls(lm_on)
    assert len(off) == len(on) == 2
    assert not any("now_holds" in p + s or "conced" in s for p, s in off)
    assert all("now_holds" in p and "conceding is allowed" in s for p, s in on)
    inputs = sorted(p.split("Respond with")[0] for p, _ in off)
    assert inputs == sorted(p.split("Respond with")[0] for p, _ in on)  # same inputs, one more output


# -- adaptive: which configurations have a data-dependent call count -------------------------------------


@pytest.mark.parametrize("name", list(FRAMEWORKS))
def test_adaptive_is_true_only_with_a_knob_on(name: str) -> None:
    cls = FRAMEWORKS[name]
    assert set(cls.early_stop_knobs) <= set(cls.knobs())
    assert all(cls.knobs()[k] == off for k, off in cls.early_stop_knobs.items())
    lm = oracle_lm({}, BINARY)
    program = cls(BINARY, lm=lm)
    if program.fewest_calls_knobs() is not None:
        # Settle, then trial: the panel decides which cases are tried, by design; both ends are fixed.
        assert program.adaptive
        assert not cls(BINARY, lm=lm, **program.most_calls_knobs()).adaptive
        assert not cls(BINARY, lm=lm, **program.fewest_calls_knobs()).adaptive
        return
    assert not program.adaptive
    if name in KNOBS:
        knob, on, extra = KNOBS[name]
        rules = {knob} | ({"stop_when_stable"} if name in STABLE else set())
        assert cls.early_stop_knobs == {k: cls.knobs()[k] for k in rules}
        assert cls(BINARY, lm=lm, **extra, **{knob: on}).adaptive
        if name in STABLE:
            assert cls(BINARY, lm=lm, **STABLE[name], stop_when_stable=2).adaptive
    else:
        assert cls.early_stop_knobs == {}


# -- JoT: stop_when_stable ---------------------------------------------------------------------------------


def test_jot_stable_decisions_end_the_trial() -> None:
    lm = scripted_lm({"judge": {"decision": "True"}})
    out = JudgmentOfThought(BINARY, lm=lm, n_loops=5, stop_when_stable=2)(case="c")
    assert lm.engine_impl.counts == {"lawyer": 2, "prosecutor": 2, "judge": 2}  # 6 calls, not 15
    assert out.stopped_early and out.judge_decisions == ["True"] * 2 and out.label == "True"
    judges = [t for t in out.transcript if t.role == "judge"]
    assert "verdict True held for 2 rounds: stopped after round 2 of 5" in judges[1].extra["early_stop"]
    stages = [t.extra["stage"] for t in out.transcript if t.role == "lawyer"]
    assert stages == ["opening", "rebuttal"]
    # The stopped trial is, prompt for prompt, the first two rounds of the full one: cache shared.
    full = scripted_lm({"judge": {"decision": "True"}})
    JudgmentOfThought(BINARY, lm=full, n_loops=5)(case="c")
    assert not Counter(lm.engine_impl.prompts) - Counter(full.engine_impl.prompts)


def test_jot_changing_decisions_run_every_round() -> None:
    flip = [{"decision": "True"}, {"decision": "False"}] * 3
    lm = scripted_lm({"judge": flip})
    out = JudgmentOfThought(BINARY, lm=lm, n_loops=5, stop_when_stable=2)(case="c")
    assert lm.engine_impl.counts == {"lawyer": 5, "prosecutor": 5, "judge": 5}
    assert out.stopped_early is False
    assert not any("early_stop" in t.extra for t in out.transcript)


def test_jot_never_runs_more_than_n_loops() -> None:
    # Stable only at rounds 3-4 of 4: the last round anyway, nothing to shorten.
    script = [{"decision": d} for d in ("True", "False", "True", "True")]
    lm = scripted_lm({"judge": script})
    out = JudgmentOfThought(BINARY, lm=lm, n_loops=4, stop_when_stable=2)(case="c")
    assert lm.engine_impl.counts["judge"] == 4 and out.stopped_early is False
    # Stable at rounds 2-3 of 4: the trial ends after round 3.
    script = [{"decision": d} for d in ("True", "False", "False", "True")]
    lm = scripted_lm({"judge": script})
    out = JudgmentOfThought(BINARY, lm=lm, n_loops=4, stop_when_stable=2)(case="c")
    assert lm.engine_impl.counts["judge"] == 3 and out.stopped_early and out.label == "False"


def test_one_stopping_rule_in_every_multi_round_design() -> None:
    # Debate-Feedback: the label of O after each round; it held for rounds 1-2 of 4.
    judge = [{"label": lab, "p_1": 0.9 if lab == "True" else 0.1, "p_2": 0.1 if lab == "True" else 0.9}
             for lab in ("True", "False", "False", "True", "True")]  # fmt: skip
    lm = scripted_lm({"judge": judge})
    out = DebateFeedback(BINARY, lm=lm, n_rounds=4, smoothing=1.0, stop_when_stable=2)(case="c")
    assert out.stopped_early and out.label == "False" and len(out.probabilities) == 3  # O_0, O_1, O_2
    assert lm.engine_impl.counts["judge"] == 3
    stop = [t.extra["early_stop"] for t in out.transcript if "early_stop" in t.extra]
    assert stop == ["verdict False held for 2 rounds: stopped after round 2 of 4 (stop_when_stable=2)"]
    # Courtroom-LLM, sequential judges: each judge a round, the latest judge's decision standing.
    lm = scripted_lm({"judge": [{"decision": d} for d in ("True", "False", "False", "True", "True")]})
    out = CourtroomLLM(BINARY, lm=lm, **STABLE["courtroom-llm"], stop_when_stable=2)(case="c")
    assert out.votes == ["True", "False", "False"] and out.label == "False" and out.stopped_early
    assert lm.engine_impl.counts["judge"] == 3
    with pytest.raises(ConfigError, match="needs judge_mode='sequential'"):
        CourtroomLLM(BINARY, lm=lm, n_judges=5, stop_when_stable=2)
    with pytest.raises(ConfigError, match="use n_rounds >= 3 or stop_when_stable=0"):
        DebateFeedback(BINARY, lm=lm, n_rounds=2, stop_when_stable=2)


def test_stop_when_stable_is_off_in_every_paper_preset_and_searched() -> None:
    from courtroom.optimize.study.spaces import SPACES
    from courtroom.programs.presets import PRESETS

    for preset in PRESETS.values():
        assert not preset.knobs.get("stop_when_stable"), preset.name
    for framework in STABLE:
        param = next(p for p in SPACES[framework] if p.name == "stop_when_stable")
        assert param.otherwise == 0 and set(param.choices) == {0, 2}


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"stop_when_stable": 1}, "0 \\(off\\) or a whole number >= 2"),
        ({"stop_when_stable": -2}, "0 \\(off\\) or a whole number >= 2"),
        ({"stop_when_stable": "2"}, "0 \\(off\\) or a whole number >= 2"),
        ({"stop_when_stable": 2.5}, "0 \\(off\\) or a whole number >= 2"),
        ({"stop_when_stable": 2, "n_loops": 2}, "use n_loops >= 3 or stop_when_stable=0"),
    ],
)
def test_jot_bad_stop_when_stable_is_refused(knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        JudgmentOfThought(BINARY, lm=scripted_lm({}), **knobs)


# -- Courtroom-LLM: parallel judges in waves -----------------------------------------------------------------


def _court(judges: Any, n: int, a1: str = "True", **knobs: Any) -> tuple[Any, Any]:
    lm = scripted_lm({"clerk": {"most_likely": a1, "ranking": [a1]}, "judge": judges})
    out = CourtroomLLM(BINARY, lm=lm, n_judges=n, k_precedents=0, early_stop=True, **knobs)(case="c")
    return out, lm


def test_courtroom_unanimous_first_wave_settles_the_majority() -> None:
    out, lm = _court({"decision": "False"}, 3)
    assert lm.engine_impl.counts["judge"] == 2  # 2 of 3 agree: the third cannot change it
    assert out.votes == ["False", "False"] and out.label == "False" and out.stopped_early
    assert "majority fixed after 2 of 3 judges" in out.transcript[-1].extra["early_stop"]
    out, lm = _court({"decision": "True"}, 5)
    assert lm.engine_impl.counts["judge"] == 3 and out.label == "True" and out.stopped_early


def test_courtroom_split_votes_call_more_judges() -> None:
    out, lm = _court(lambda role, turn, text: {"decision": BINARY[turn % 2]}, 3)
    assert lm.engine_impl.counts["judge"] == 3 and out.stopped_early is False
    assert sorted(out.votes) == ["False", "True", "True"] and out.label == "True"


def test_courtroom_waves_account_for_the_tie_rule() -> None:
    # Four judges, a tie goes to A1: two votes for A1 settle it, two for A2 do not (2-2 would be A1).
    out, lm = _court({"decision": "True"}, 4, a1="True")
    assert lm.engine_impl.counts["judge"] == 2 and out.label == "True"
    out, lm = _court({"decision": "False"}, 4, a1="True")
    assert lm.engine_impl.counts["judge"] == 3 and out.label == "False"


def test_courtroom_early_verdict_is_the_full_panels_and_shares_its_cache() -> None:
    gold = {f"case {i:03d}: does it follow?": BINARY[i % 2] for i in range(60)}
    acc = {"judge": 0.65, "default": 0.7}
    labels = {}
    calls = {}
    for early in (False, True):
        lm = oracle_lm(gold, BINARY, accuracy=acc)
        program = CourtroomLLM(BINARY, lm=lm, n_judges=5, k_precedents=0, early_stop=early)
        labels[early] = [program(case=case).label for case in gold]
        calls[early] = lm.engine_impl.counts["judge"]
    assert labels[True] == labels[False]  # the oracle draws the same votes in the same order
    assert calls[True] < calls[False] == 5 * len(gold)
    # Judge i keeps rollout i: after a full run, the early-stopping run is answered from the cache.
    case = next(iter(gold))
    full = oracle_lm(gold, BINARY, accuracy=acc, cache=True, model="fake/oracle-cached")
    CourtroomLLM(BINARY, lm=full, n_judges=5, k_precedents=0)(case=case)
    again = oracle_lm(gold, BINARY, accuracy=acc, cache=True, model="fake/oracle-cached")
    CourtroomLLM(BINARY, lm=again, n_judges=5, k_precedents=0, early_stop=True)(case=case)
    assert full.engine_impl.counts["judge"] == 5 and again.engine_impl.counts == {}


@pytest.mark.parametrize(
    ("knobs", "message"),
    [
        ({"early_stop": True, "judge_mode": "sequential"}, "set early_stop=false or judge_mode=parallel"),
        ({"early_stop": "yes"}, "set early_stop=true or false"),
    ],
)
def test_courtroom_bad_early_stop_is_refused(knobs: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        CourtroomLLM(BINARY, lm=scripted_lm({}), **knobs)


# -- Debate-Feedback: stop_epsilon ---------------------------------------------------------------------------


def _j(p_true: float) -> dict[str, Any]:
    return {"label": "True" if p_true >= 0.5 else "False", "p_1": p_true, "p_2": round(1 - p_true, 9)}


def test_debate_feedback_stops_once_o_settles() -> None:
    lm = scripted_lm({"judge": _j(0.2)})  # the debate never moves the judge: O_1 = O_0
    out = DebateFeedback(BINARY, lm=lm, n_rounds=3, stop_epsilon=0.05)(case="c")
    assert lm.engine_impl.counts == {"judge": 2, "debater": 4, "summarizer": 1}  # full: 4, 12, 3
    assert out.stopped_early and len(out.probabilities) == 2 and out.label == "False"
    last = [t for t in out.transcript if t.role == "judge"][-1]
    assert last.extra["change"] == 0 and "stopped after round 1 of 3" in last.extra["early_stop"]


def test_debate_feedback_keeps_going_while_o_moves() -> None:
    lm = scripted_lm({"judge": [_j(0.2), _j(0.9), _j(0.1), _j(0.9)]})  # O: 0.2, 0.55, 0.325, 0.6125
    out = DebateFeedback(BINARY, lm=lm, n_rounds=3, stop_epsilon=0.05)(case="c")
    assert lm.engine_impl.counts == {"judge": 4, "debater": 12, "summarizer": 3}
    assert out.stopped_early is False and len(out.probabilities) == 4
    changes = [t.extra["change"] for t in out.transcript if t.role == "judge" and "change" in t.extra]
    assert changes == pytest.approx([0.35, 0.225, 0.2875])


def test_debate_feedback_change_is_the_largest_move_of_any_label() -> None:
    before = {"a": 0.5, "b": 0.3, "c": 0.2}
    assert max_change(before, {"a": 0.45, "b": 0.3, "c": 0.25}) == pytest.approx(0.05)
    assert max_change(before, {"a": 0.2, "b": 0.6, "c": 0.2}) == pytest.approx(0.3)


@pytest.mark.parametrize("value", [-0.1, 1.5, "0.1", True])
def test_debate_feedback_bad_stop_epsilon_is_refused(value: Any) -> None:
    with pytest.raises(ConfigError, match=r"stop_epsilon must be in \[0, 1\] \(0: off; e.g. 0.05\)"):
        DebateFeedback(BINARY, lm=scripted_lm({}), stop_epsilon=value)


# -- Khan debate: stop_on_concession --------------------------------------------------------------------------


def test_khan_stops_when_both_debaters_hold_the_same_answer() -> None:
    lm = scripted_lm({"debater": {"now_holds": "False"}, "judge": {"decision": "False"}})
    out = KhanDebate(BINARY, lm=lm, n_rounds=3, stop_on_concession=True)(case="c")
    assert lm.engine_impl.counts == {"debater": 2, "judge": 1}  # full: 6 debater calls
    assert out.stopped_early and out.label == "False"
    assert [t.role for t in out.transcript] == ["debater-1", "debater-2", "judge"]
    assert out.transcript[-1].round == 2
    assert "both debaters hold False" in out.transcript[1].extra["early_stop"]
    (judge_prompt,) = [p for r, p in lm.engine_impl.prompts if r == "judge"]
    assert "Round 1, debater 2" in judge_prompt and "Round 2" not in judge_prompt


def test_khan_keeps_debating_while_each_holds_its_own_answer() -> None:
    def own(role: str, turn: int, prompt: str) -> dict[str, Any]:
        return {"now_holds": _field(prompt, "answer")}

    lm = scripted_lm({"debater": own})
    out = KhanDebate(BINARY, lm=lm, n_rounds=3, stop_on_concession=True)(case="c")
    assert lm.engine_impl.counts == {"debater": 6, "judge": 1}
    assert out.stopped_early is False and out.transcript[-1].round == 4
    assert [t.extra["now_holds"] for t in out.transcript if t.role.startswith("debater")] == BINARY * 3


@pytest.mark.parametrize("value", ["yes", 1])
def test_khan_bad_stop_on_concession_is_refused(value: Any) -> None:
    with pytest.raises(ConfigError, match="set stop_on_concession=true or false"):
        KhanDebate(BINARY, lm=scripted_lm({}), stop_on_concession=value)


# -- studies -------------------------------------------------------------------------------------------------------


class _RandomTrial:
    """Just enough of an Optuna trial for :func:`sample`."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def suggest_int(self, name: str, low: int, high: int) -> int:
        return self.rng.randint(low, high)

    def suggest_float(self, name: str, low: float, high: float) -> float:
        return self.rng.uniform(low, high)

    def suggest_categorical(self, name: str, choices: list[Any]) -> Any:
        return self.rng.choice(choices)


@pytest.mark.parametrize("name", list(KNOBS))
def test_knob_is_in_the_study_space_and_every_draw_builds(name: str) -> None:
    knob, on, _ = KNOBS[name]
    space = build_space(name)
    param = next(p for p in space if p.name == knob)
    assert param.kind in ("cat", "int") and param.contains(on) and param.contains(FRAMEWORKS[name].knobs()[knob])
    assert default_params(name, space).get(knob, FRAMEWORKS[name].knobs()[knob]) == FRAMEWORKS[name].knobs()[knob]
    rng = random.Random(0)
    drawn = set()
    for _ in range(60):
        knobs = sample(space, _RandomTrial(rng))
        FRAMEWORKS[name](BINARY, lm=oracle_lm({}, BINARY), **knobs)  # no draw is a refused configuration
        drawn.add(knobs[knob])
    assert on in drawn
