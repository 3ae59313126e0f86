"""Budgets (SPEC §10): no new example or trial starts past --max-calls / --max-cost; the folder resumes."""

import json
import shlex
from dataclasses import replace
from pathlib import Path

import pytest
from _output import unwrapped

from courtroom.cost.budget import Budget, BudgetExhausted
from courtroom.errors import ConfigError
from courtroom.runner.runs import RunConfig, load_run, run
from courtroom.testing import FakeServer


def _config(framework, server, **kw):
    return RunConfig(framework, "boolean_expressions", data="generate", lm="openai/fake", api_base=server.url, **kw)


@pytest.mark.parametrize(("framework", "limit"), [("jot", 40), ("self-consistency", 25), ("reflexion", 31)])
def test_requests_never_pass_the_budget(framework, limit, cold_cache):
    with FakeServer(latency=0.02) as server:
        with pytest.raises(BudgetExhausted) as stop:
            run(_config(framework, server, limit=30, concurrency=4), budget=Budget(max_calls=limit))
        sent = server.counts["requests"]
    assert sent <= limit
    assert stop.value.budget.spent_calls == sent
    assert stop.value.left > 0
    hint = shlex.split(stop.value.resume)  # flags a command line carried may follow the folder
    run_dir = Path(hint[hint.index("--resume") + 1])
    _, rows, summary = load_run(run_dir)
    assert summary is None  # not finished: resumable
    assert len(rows) + stop.value.left == 30


def test_dollar_budget_uses_prices_and_needs_one(cold_cache):
    prices = {"openai/fake": [1000.0, 1000.0]}  # $ per 1M tokens: a few cents per example
    with FakeServer() as server:
        with pytest.raises(ConfigError, match="--prices"):
            run(_config("zero-shot", server, limit=5), budget=Budget(max_cost=1.0))
        assert server.counts["requests"] == 0
        with pytest.raises(BudgetExhausted) as stop:
            run(_config("zero-shot", server, limit=40, max_tokens=20), budget=Budget(max_cost=1.0, prices=prices))
    spent = stop.value.budget.spent_cost
    assert 0 < spent <= 1.0
    assert "$" in stop.value.line


def test_cli_stops_in_one_line_and_resumes_without_sending_twice(tmp_path, courtroom_cli):
    env = {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer(latency=0.02) as server:
        common = ["--lm", "openai/fake", "--api-base", server.url]
        first = courtroom_cli("run", "jot", "--limit", "10", "--max-calls", "40", *common, cwd=tmp_path, env=env)
        assert first.returncode == 3, first.stderr
        assert server.counts["requests"] <= 40
        lines = [x for x in first.stderr.splitlines() if "budget reached" in x]
        assert len(lines) == 1 and "not run" in lines[0] and "--resume" in lines[0]
        hint = shlex.split(lines[0].split("finish with: ")[1])
        run_dir = hint[hint.index("--resume") + 1]
        assert hint[hint.index("--api-base") + 1] == server.url  # the hint is complete: it runs as printed
        second = courtroom_cli(*hint[1:], cwd=tmp_path, env=env)  # the hint as printed, after `courtroom`
        assert second.returncode == 0, second.stderr
        assert server.counts["requests"] == 10 * 9  # every example once, nothing sent twice
    summary = json.loads((tmp_path / run_dir / "summary.json").read_text())
    assert summary["n"] == 10


def test_compare_shares_the_budget_and_names_what_did_not_start(cold_cache, tmp_path):
    from courtroom.comparison.compare import compare

    with FakeServer() as server:
        with pytest.raises(BudgetExhausted) as stop:
            compare(
                "boolean_expressions",
                ["zero-shot", "jot", "cot"],
                limit=10,
                data="generate",
                lm="openai/fake",
                api_base=server.url,
                out=tmp_path / "cmp",
                budget=Budget(max_calls=40),
            )
        sent = server.counts["requests"]
    assert sent <= 40
    assert "of jot not run" in stop.value.line and "not started: cot" in stop.value.line


def test_study_stops_starting_trials(cold_cache, tmp_path):
    from courtroom.optimize.study import StudyConfig, run_study

    with FakeServer() as server:
        config = StudyConfig(
            "self-consistency",
            trials=10,
            dev=4,
            train=4,
            data="generate",
            storage=f"sqlite:///{tmp_path}/s.db",
            models=["openai/fake"],
            api_base=server.url,
            prune=False,
        )
        # One trial costs at most 5 samples x 4 examples = 20 requests (k_samples searched in 1..5).
        with pytest.raises(BudgetExhausted) as stop:
            run_study(config, budget=Budget(max_calls=30))
        sent = server.counts["requests"]
    assert sent <= 30
    assert "trial(s) not started" in stop.value.line
    assert 0 < stop.value.left < 10


def test_compile_refuses_to_start_over_budget(tmp_path, courtroom_cli):
    env = {"COURTROOM_CACHE_DIR": str(tmp_path / "cache")}
    with FakeServer() as server:
        proc = courtroom_cli(
            *[
                "compile",
                "jot",
                "--optimizer",
                "bootstrap",
                "--train-limit",
                "4",
                "--dev-limit",
                "4",
                "--lm",
                "openai/fake",
                "--api-base",
                server.url,
                "--max-calls",
                "50",
            ],
            cwd=tmp_path,
            env=env,
        )
        assert proc.returncode == 3, proc.stderr
        assert server.counts["requests"] == 0
    assert "compile not started" in proc.stderr and "--max-calls 50" in proc.stderr


def test_repeats_share_the_budget_and_the_group_resumes(cold_cache):
    from courtroom.runner.repeats import resume_repeats, run_repeats

    with FakeServer() as server:
        config = _config("zero-shot", server, limit=10)
        with pytest.raises(BudgetExhausted) as stop:
            run_repeats(config, 3, budget=Budget(max_calls=15))
        assert server.counts["requests"] <= 15
        assert "1 later repeat(s) not started" in stop.value.line
        group = stop.value.resume.split()[-1]
        assert Path(group, "group.json").is_file()
        outcome = resume_repeats(group, api_base=server.url)
        assert server.counts["requests"] == 30  # every repeat's examples once
    assert len(outcome.outcomes) == 3


def _designs(server: FakeServer, storage: Path, **kw):
    """A design study of jot and self-consistency on generated data, against ``server``."""
    from courtroom.optimize.study.designs import DesignStudyConfig

    return DesignStudyConfig(
        frameworks=["jot", "self-consistency"],
        data="generate",
        storage=f"sqlite:///{storage}",
        models=["openai/fake"],
        api_base=server.url,
        prune=False,
        **kw,
    )


def test_design_study_stops_starting_trials_and_its_dry_run_sends_nothing(cold_cache, tmp_path):
    from courtroom.optimize.study.designs import design_estimates, run_design_study

    with FakeServer() as server:
        config = _designs(server, tmp_path / "d.db", trials=8, dev=4, train=4)
        per_trial = design_estimates(config)
        assert server.counts["requests"] == 0
        bound = max(e.calls for e in per_trial.values())
        assert bound == per_trial["jot"].calls  # jot at 5 loops is the dearest trial
        with pytest.raises(BudgetExhausted) as stop:
            run_design_study(config, budget=Budget(max_calls=2 * bound))
        sent = server.counts["requests"]
    assert sent <= 2 * bound
    assert "--frameworks jot,self-consistency" in stop.value.resume
    assert 0 < stop.value.left < 8


def test_training_calls_start_only_within_the_budget(cold_cache):
    # self-consistency writes chain-of-thought demos on the train split before its first example.
    with FakeServer() as server:
        with pytest.raises(BudgetExhausted) as stop:
            run(_config("self-consistency", server, limit=4), budget=Budget(max_calls=2))
        assert server.counts["requests"] == 0  # the demos alone could pass 2 requests: nothing starts
        assert stop.value.left == 4
        outcome = run(_config("self-consistency", server, limit=4), budget=Budget(max_calls=200))
        assert server.counts["requests"] <= 200
    assert outcome.summary["n"] == 4


def test_design_study_that_compiles_is_bounded_by_trial_and_compile(cold_cache, tmp_path):
    # A design study with --compile once refused every budget; bootstrap's runs are bounded now.
    from courtroom.optimize.study.designs import design_estimates, run_design_study

    def config(compile: str, storage: str):
        return _designs(server, tmp_path / f"{storage}.db", trials=6, dev=3, train=3, compile=compile)

    with FakeServer() as server:
        plain = design_estimates(replace(config("bootstrap", "a"), compile=None))
        per_trial = design_estimates(config("bootstrap", "a"))
        assert server.counts["requests"] == 0
        # The bound covers bootstrap's program runs on the 3 train examples, on top of the dev scoring.
        assert per_trial["jot"].calls > plain["jot"].calls and per_trial["jot"].examples > 3
        bound = max(e.calls for e in per_trial.values())
        with pytest.raises(BudgetExhausted) as stop:
            run_design_study(config("bootstrap", "a"), budget=Budget(max_calls=2 * bound))
        sent = server.counts["requests"]
        with pytest.raises(ConfigError, match="--compile mipro decides its own number of calls"):
            run_design_study(config("mipro", "b"), budget=Budget(max_calls=100))
        assert server.counts["requests"] == sent
    assert 0 < sent <= 2 * bound
    assert 0 < stop.value.left < 6


@pytest.mark.parametrize("max_tokens", [[], ["--max-tokens", "50"]])
def test_a_study_whose_max_cost_fits_no_trial_is_refused_alike_with_or_without_max_tokens(
    tmp_path, courtroom_cli, max_tokens
):
    """Before: exit 3 (a budget reached) without --max-tokens, exit 2 with it; now exit 2 both, nothing sent."""
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"openai/fake": [1000.0, 1000.0]}))
    with FakeServer() as server:
        done = courtroom_cli("study", "self-consistency", "--trials", "2", "--dev-limit", "4", "--train-limit", "4",
                             "--lm", "openai/fake", "--api-base", server.url, "--storage", f"sqlite:///{tmp_path}/s.db",
                             "--prices", str(prices), "--max-cost", "0.001", *max_tokens)  # fmt: skip
        assert server.counts["requests"] == 0
    assert done.returncode == 2, done.stderr
    assert "fits none" in " ".join(done.stderr.split()) and len(unwrapped(done.stderr.strip())) == 1, done.stderr
    import optuna

    from courtroom.optimize.study._attrs import ran

    for summary in optuna.get_all_study_summaries(f"sqlite:///{tmp_path}/s.db"):
        study = optuna.load_study(study_name=summary.study_name, storage=f"sqlite:///{tmp_path}/s.db")
        assert ran(study) == 0  # a refused trial does not count against --trials when the study is continued
