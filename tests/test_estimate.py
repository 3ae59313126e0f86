"""Dry runs (SPEC §10): the estimate matches the real run on the fake server, and sends nothing."""

import pytest

from courtroom.cost.estimate import estimate_run
from courtroom.models.lms import RoleLMs
from courtroom.runner.runs import RunConfig, run
from courtroom.testing import FakeServer


def _config(framework, server, **kw):
    kw.setdefault("limit", 24)
    return RunConfig(framework, "boolean_expressions", data="generate", lm="openai/fake", api_base=server.url, **kw)


@pytest.mark.parametrize("framework", ["jot", "courtroom-llm", "self-consistency", "debate-feedback"])
def test_estimate_equals_the_real_run(framework, cold_cache):
    with FakeServer() as server:
        est = estimate_run(_config(framework, server), sample=6)
        assert server.counts["requests"] == 0
        # No cache: the fake answers the same text every time, so some prompts repeat within a run.
        outcome = run(_config(framework, server), lms=RoleLMs({"default": server.lm("openai/fake", cache=False)}))
        sent = server.counts["requests"]
    assert est.calls_exact
    assert est.calls == outcome.summary["calls"] + est.prepare_calls
    # n-sampling: samples of one prompt share a request (judges, samples, identical opinions).
    assert est.requests == sent
    assert (est.requests < est.calls) == (framework != "jot")
    real = outcome.summary["prompt_tokens"]
    assert abs(est.prompt_tokens - real) <= 0.10 * real, (est.prompt_tokens, real)


def test_answers_that_decide_the_path_give_a_maximum():
    # Reflexion stops when the critic accepts: 1 call at best, 3 at most with max_retries=1.
    with FakeServer() as server:
        est = estimate_run(_config("reflexion", server, limit=5, knobs={"max_retries": 1}))
    assert not est.calls_exact
    assert est.calls == 5 * 3
    assert est.max_calls_per_example == 3


def test_dollars_are_unknown_without_a_price_and_priced_with_one(cold_cache):
    with FakeServer() as server:
        bare = estimate_run(_config("zero-shot", server, limit=4, max_tokens=50))
        priced = estimate_run(_config("zero-shot", server, limit=4, max_tokens=50), prices={"openai/fake": [1.0, 2.0]})
    assert bare.cost is None
    assert bare.completion_tokens == 4 * 50 and bare.completion_basis == "max_tokens bound"
    expected = bare.prompt_tokens * 1e-6 + bare.completion_tokens * 2e-6
    assert priced.cost == pytest.approx(expected)


def test_litellm_price_map_prices_known_models():
    est = estimate_run(
        RunConfig("zero-shot", "boolean_expressions", data="generate", limit=4, lm="openai/gpt-4o-mini", max_tokens=10)
    )
    assert est.cost is not None and est.cost > 0
    assert est.tokenizer.startswith("litellm (model tokenizer")


def test_completion_lengths_come_from_the_cache_when_it_has_answers(cold_cache):
    with FakeServer() as server:
        run(_config("zero-shot", server, limit=4))
        est = estimate_run(_config("zero-shot", server, limit=4, max_tokens=500))
    assert est.completion_basis == "measured"
    assert 0 < est.completion_tokens < 4 * 500


@pytest.mark.parametrize("command", ["run", "compare", "compile", "study"])
def test_dry_run_sends_no_request(command, tmp_path, courtroom_cli):
    with FakeServer() as server:
        common = ["--task", "boolean_expressions", "--lm", "openai/fake", "--api-base", server.url, "--dry-run"]
        args = {
            "run": ["run", "jot", "--limit", "4", *common],
            "compare": ["compare", "--frameworks", "jot,zero-shot", "--limit", "4", *common],
            "compile": [
                "compile",
                "zero-shot",
                "--optimizer",
                "bootstrap",
                "--train-limit",
                "4",
                "--dev-limit",
                "4",
                *common,
            ],
            "study": ["study", "jot", "--trials", "3", "--dev-limit", "4", "--train-limit", "4", *common],
        }[command]
        proc = courtroom_cli(*args, cwd=tmp_path, env={"COURTROOM_CACHE_DIR": str(tmp_path / "cache")})
        assert proc.returncode == 0, proc.stderr
        assert server.counts["requests"] == 0
    assert "nothing was sent" in proc.stdout
    if command == "compare":  # the matched majority votes are priced too: jot with 3 loops makes 9 calls
        assert "| self-consistency k=9 |" in proc.stdout and "| self-consistency k=1 |" in proc.stdout
    assert "unknown" in proc.stdout  # openai/fake has no price: never $0
    assert not list(tmp_path.glob("runs/*")) and not list(tmp_path.glob("comparisons/*"))


def test_concurrent_examples_explain_a_shared_precedent_once():
    # Courtroom-LLM writes each precedent's reason once; two examples citing a new precedent at
    # the same moment used to both pay for it, so real calls exceeded the (exact) estimate.
    import threading
    import time

    from courtroom.models._concurrency import run_parallel
    from courtroom.programs._precedents import PrecedentIndex

    index = PrecedentIndex([{"case": f"case {i} about x", "label": "a", "id": str(i)} for i in range(3)])
    calls = []
    lock = threading.Lock()

    def explain(p):
        with lock:
            calls.append(p.key)
        time.sleep(0.2)
        return "because"

    found = index.search("case 1 about x", 1)
    out = run_parallel([lambda: index.with_reasons(found, explain) for _ in range(6)])
    assert len(calls) == 1
    assert all(o[0].reason == "because" for o in out)


@pytest.mark.parametrize(
    ("framework", "knobs", "off"),
    [
        ("jot", {"n_loops": 5, "stop_when_stable": 2}, {"n_loops": 5}),
        ("courtroom-llm", {"n_judges": 5, "k_precedents": 0, "early_stop": True}, {"n_judges": 5, "k_precedents": 0}),
        ("khan-debate", {"stop_on_concession": True}, {}),
    ],
)
def test_early_stopping_is_estimated_at_its_maximum(framework, knobs, off):
    from courtroom.cost.estimate import estimate_run

    on = estimate_run(RunConfig(framework, "boolean_expressions", data="generate", limit=6, knobs=knobs))
    full = estimate_run(RunConfig(framework, "boolean_expressions", data="generate", limit=6, knobs=off))
    assert on.calls == full.calls and on.max_calls_per_example == full.max_calls_per_example
    assert not on.calls_exact  # printed as "<= N (max: data decides)"


def test_a_dry_run_refuses_a_limit_the_run_would_refuse(tmp_path, capsys, caplog):
    # Once the dry run priced the 300 examples the split has while the run itself refused --limit 5000.
    from courtroom.cli import main

    common = ["--data", "generate", "--lm", "openai/fake", "--dry-run"]
    assert main(["run", "jot", "--limit", "5000", *common]) == 2
    err = capsys.readouterr().err
    assert "--limit 5000 but the test split" in err and "pass --limit 300 or less" in err
    # compile's and study's sizes have defaults a small dataset may not reach: they use the whole
    # split and say so, in the dry run as in the real command.
    assert main(["compile", "zero-shot", "--train-limit", "4", "--dev-limit", "5000", *common]) == 0
    assert "nothing was sent" in capsys.readouterr().out
    assert "--dev-limit 5000 but the dev split of boolean_expressions has 100 examples: using all" in caplog.text


def test_a_bound_is_never_shown_as_a_price(cold_cache):
    # Without --max-tokens a model's own output limit bounds each answer: $1.80 was printed for a job
    # whose prompts cost $0.03. The dry run names the prompts' price, the bound, and the likely price.
    from courtroom.cost.dry_run import estimate_lines

    config = RunConfig(
        "jot", "boolean_expressions", data="generate", limit=6, lm="openai/gpt-4o-mini", knobs={"n_loops": 1}
    )
    est = estimate_run(config)
    assert est.completion_basis == "max_tokens bound"
    assert est.prompt_cost is not None and est.likely_cost is not None and est.cost is not None
    assert 0 < est.prompt_cost < est.likely_cost < est.cost / 10
    # likely: each role's output fields at typical lengths, never above the bound
    assert 0 < est.likely_completion_tokens < est.completion_tokens
    lines = list(estimate_lines({"jot": est}))
    row = next(line for line in lines if line.startswith("| jot"))
    assert f"<= ${est.cost:.4f} (bound)" in row
    assert f"  jot: prompts ${est.prompt_cost:.4f}; all at most ${est.cost:.4f}; likely ${est.likely_cost:.4f}" in lines
    ours = [line for line in lines if "likely" in line or "(bound)" in line or line.startswith("  replaced")]
    assert len(ours) == 5 and all(len(line) <= 80 for line in ours if not line.startswith("|")), ours
    # Measured answer lengths (a cached run) are an estimate already: no bound is printed.
    with FakeServer() as server:
        run(_config("zero-shot", server, limit=4))
        measured = estimate_run(_config("zero-shot", server, limit=4), prices={"openai/fake": [1.0, 2.0]})
    assert measured.completion_basis == "measured" and measured.likely_cost is None
    assert not any("(bound)" in line for line in estimate_lines({"zero-shot": measured}))
