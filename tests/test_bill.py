"""A price is a bill (SPEC §18, issue 50): every dollar and token figure equals what the provider bills.

The fake server applies OpenAI's automatic prompt cache and Anthropic's ``cache_control`` cache and
records, per request, what a provider bills it for (``FakeServer.bills``). The bill is computed here
from those records and LiteLLM's table alone (not through courtroom's pricing), and every figure the
CLI prints or writes (the summary, the progress line, a study's cost) must equal it within 1%. A
provider's bad usage (negative, missing, non-numeric or excessive cached count) keeps every answer
and every count, and is said once, in one line of 80 columns.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import litellm
import pytest

from courtroom.testing import FakeServer

MODELS = {"openai": "openai/gpt-4o-mini", "anthropic": "anthropic/claude-sonnet-4-5"}
WORDS = 500  # a case past both providers' 1,024-token minimum cacheable prefix


def _price(info: dict[str, Any], key: str, batch: bool) -> float:
    """LiteLLM's price ``key`` per token, its ``_batches`` twin in batch mode.

    Where LiteLLM has no batch price, the provider's published rule: half the live price for input
    and output, and no cache discount assumed beyond the batch input price.
    """
    if not batch:
        return float(info.get(key, info["input_cost_per_token"]))
    if f"{key}_batches" in info:
        return float(info[f"{key}_batches"])
    if key.startswith("cache_"):
        return _price(info, "input_cost_per_token", True)
    return float(info[key]) / 2


def bill(bills: list[dict[str, Any]], *, batch: bool | None = None) -> float:
    """Dollars of the server's requests under OpenAI's and Anthropic's rules (``batch``: as if all were, or not)."""
    total = 0.0
    for b in bills:
        info = litellm.model_cost[b["model"].split("/")[-1]]
        at = b["batch"] if batch is None else batch
        read, write = b["cache_read_tokens"], b["cache_write_tokens"]
        # OpenAI: cached tokens are within prompt_tokens. Anthropic: input_tokens leave out reads and
        # writes; the server's prompt_tokens is their sum, so the uncached input is the same remainder.
        total += (b["prompt_tokens"] - read - write) * _price(info, "input_cost_per_token", at)
        total += read * _price(info, "cache_read_input_token_cost", at)
        # Anthropic's 1-hour cache (courtroom's batch lines): its own write price, at the batch's half.
        # Their live price (``batch=False``) is that of the same requests sent live: 5-minute writes.
        hour = b.get("cache_write_1h_tokens", 0) if at else 0
        total += (write - hour) * _price(info, "cache_creation_input_token_cost", at)
        if hour:
            total += hour * float(info["cache_creation_input_token_cost_above_1hr"]) * (0.5 if at else 1.0)
        total += b["completion_tokens"] * _price(info, "output_cost_per_token", at)
    return total


def _dataset(tmp_path: Path, n: int = 2) -> list[str]:
    rows = [{"text": f"Case {i}. " + " ".join(f"fact{j}" for j in range(WORDS)), "label": ["yes", "no"][i % 2]}
            for i in range(n)]  # fmt: skip
    path = tmp_path / "cases.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    return ["--dataset", str(path), "--text-field", "text", "--label-field", "label", "--labels", "yes,no"]


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-0123456789abcdef")
    monkeypatch.setenv("COURTROOM_BATCH_POLL", "0.02")


KNOBS = {
    "jot": ["--loops", "1"],
    "courtroom-llm": ["--set", "k_precedents=0"],
    "debate-feedback": [],
    "self-consistency": ["--set", "k_shots=0"],
}

CELLS = [
    ("jot", "openai", "classic", False),
    ("jot", "openai", "cache", True),
    ("jot", "anthropic", "cache", False),
    ("jot", "anthropic", "cache", True),
    ("jot", "anthropic", "classic", True),
    ("courtroom-llm", "anthropic", "cache", True),
    ("courtroom-llm", "openai", "cache", False),
    ("debate-feedback", "anthropic", "cache", False),
    ("debate-feedback", "openai", "classic", True),
    ("self-consistency", "anthropic", "cache", True),
    ("self-consistency", "openai", "cache", False),
]


def _spent(stderr: str) -> tuple[int, float, bool]:
    """The last progress line's tokens, dollars and whether it says batch price."""
    found = re.findall(r"([\d,]+) tokens, \$([\d.]+)( at batch price)?", stderr)
    assert found, stderr
    tokens, dollars, batch = found[-1]
    return int(tokens.replace(",", "")), float(dollars), bool(batch)


@pytest.mark.parametrize(("design", "provider", "layout", "batch"), CELLS, ids=["-".join(map(str, c)) for c in CELLS])
def test_every_figure_of_a_run_is_the_providers_bill(
    design: str, provider: str, layout: str, batch: bool, cli: Any, keys: None, tmp_path: Path
) -> None:
    with FakeServer(prompt_cache="openai", turnaround=0.02) as server:
        args = ["run", design, "--lm", MODELS[provider], "--api-base", server.url, "--prompt-layout", layout,
                *_dataset(tmp_path), *KNOBS[design], "--out", str(tmp_path / "runs")]  # fmt: skip
        done = cli(*args, *(["--batch"] if batch else []))
        assert done.returncode == 0, done.stderr
        bills = list(server.bills)
    assert bills and all(b["batch"] == batch for b in bills)
    reads = sum(b["cache_read_tokens"] for b in bills)
    writes = sum(b["cache_write_tokens"] for b in bills)
    if layout == "cache" and not (design == "self-consistency" and provider == "openai"):  # n: one request a case
        assert reads > 0  # the cell exercises the provider's cache
    (folder,) = (tmp_path / "runs").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["sent"] == len(bills)
    assert summary["prompt_tokens"] == sum(b["prompt_tokens"] for b in bills)
    assert summary["completion_tokens"] == sum(b["completion_tokens"] for b in bills)
    assert (summary["cache_read_tokens"], summary["cache_write_tokens"]) == (reads, writes)
    assert summary["cost"] == pytest.approx(bill(bills), rel=0.01)
    if batch:
        assert summary["live_cost"] == pytest.approx(bill(bills, batch=False), rel=0.01)
    tokens, dollars, at_batch = _spent(done.stderr)
    assert tokens == summary["tokens"] and at_batch == batch
    assert dollars == pytest.approx(bill(bills), rel=0.01, abs=5e-5)  # printed to 4 decimals


def test_a_studys_dollar_cost_is_the_bill_and_honours_prices(cli: Any, keys: None, tmp_path: Path) -> None:
    """A one-framework study prices its cost objective with ``--prices`` (issue 51: accepted and ignored,
    the cost stayed in calls), every price the row names (cache reads and writes too)."""
    model = MODELS["anthropic"]
    prices = {"input": 30.0, "output": 150.0, "cache_read": 3.0, "cache_write": 37.5}  # per 1M tokens
    table = tmp_path / "prices.json"
    table.write_text(json.dumps({model: prices}))
    with FakeServer() as server:
        args = ["study", "jot", "--trials", "1", "--dev-limit", "2", "--train-limit", "1", "--test-limit", "0",
                "--cost-objective", "--lm", model, "--api-base", server.url, "--prompt-layout", "cache",
                "--loops", "1", *_dataset(tmp_path, 6), "--out", str(tmp_path / "study")]  # fmt: skip
        done = cli(*args, "--prices", str(table))
        assert done.returncode == 0, done.stderr
        bills = list(server.bills)
    assert sum(b["cache_read_tokens"] for b in bills) > 0
    expected = (
        sum(
            (b["prompt_tokens"] - b["cache_read_tokens"] - b["cache_write_tokens"]) * prices["input"]
            + b["cache_read_tokens"] * prices["cache_read"]
            + b["cache_write_tokens"] * prices["cache_write"]
            + b["completion_tokens"] * prices["output"]
            for b in bills
        )
        / 1e6
    )
    study = json.loads(next((tmp_path / "study").rglob("study.json")).read_text())
    (best,) = study["best"]
    assert best["values"][1] * _dev_cases(tmp_path / "study") == pytest.approx(expected, rel=0.01)


def _dev_cases(folder: Path) -> int:
    import csv

    (row,) = csv.DictReader(next(folder.rglob("trials.csv")).open())
    return int(row["examples"])


def test_a_run_served_from_the_cache_costs_nothing_and_says_its_live_price(
    cli: Any, keys: None, tmp_path: Path
) -> None:
    with FakeServer() as server:
        args = ["run", "zero-shot", "--lm", MODELS["openai"], "--api-base", server.url, *_dataset(tmp_path)]
        first = cli(*args, "--out", str(tmp_path / "first"))
        assert first.returncode == 0, first.stderr
        again = cli(*args, "--out", str(tmp_path / "again"))
        assert again.returncode == 0, again.stderr
        live = bill(list(server.bills))
        assert server.counts["requests"] == 2  # the second run sent nothing
    (folder,) = (tmp_path / "again").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["cost"] == 0 and summary["cached_cost"] == pytest.approx(live, rel=0.01)
    assert f"$0.0000 (cached; ${live:.4f} live)" in (folder / "summary.md").read_text()


LIES = {
    "negative": lambda u: {**u, "prompt_tokens_details": {"cached_tokens": -5}},
    "missing": lambda u: {**u, "prompt_tokens_details": {"cached_tokens": None}},
    "not a number": lambda u: {**u, "prompt_tokens_details": {"cached_tokens": "many"}},
    "above the prompt": lambda u: {**u, "prompt_tokens_details": {"cached_tokens": u["prompt_tokens"] + 100}},
}


@pytest.mark.parametrize("lie", list(LIES))
def test_a_providers_bad_cached_count_keeps_every_answer_and_count_and_is_said_once(
    lie: str, cli: Any, keys: None, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    with FakeServer(report_usage=LIES[lie]) as server:
        args = ["run", "jot", "--lm", MODELS["openai"], "--api-base", server.url, "--loops", "1",
                *_dataset(tmp_path, 3), "--out", str(tmp_path / "runs")]  # fmt: skip
        done = cli(*args)
        sent = server.counts["requests"]
        bills = list(server.bills)
    assert done.returncode == 0, done.stderr
    (folder,) = (tmp_path / "runs").iterdir()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["failures"] == 0 and summary["sent"] == sent == len(bills) > 3
    said = [r for r in caplog.records if r.name == "courtroom.cost.bill"]
    assert len(said) == 1, [r.getMessage() for r in said]
    line = logging.Formatter("%(levelname)s %(name)s: %(message)s").format(said[0])  # the CLI's format
    assert said[0].levelname == "WARNING" and len(line) <= 80, line
    if lie == "above the prompt":
        assert summary["cache_read_tokens"] == summary["prompt_tokens"]  # cut to the prompt
    else:  # unknown: priced as uncached
        assert summary["cache_read_tokens"] == 0
        assert summary["cost"] == pytest.approx(bill(bills), rel=0.01)


def test_a_price_table_overrides_each_price_it_names(tmp_path: Path) -> None:
    """``--prices`` rows may name cache and batch prices; the ones left out follow the provider's usual rule."""
    from courtroom.eval.metrics import load_prices, user_prices
    from courtroom.models.usage import Usage

    path = tmp_path / "prices.csv"
    path.write_text("model,input,output,cache_read,cache_write,batch_input,batch_output\n"
                    "anthropic/claude-sonnet-4-5,2,10,0.5,4,,\n"
                    "openai/gpt-4o-mini,1,3,,,,\n")  # fmt: skip
    counts = {"prompt_tokens": 1000, "cache_read_tokens": 600, "cache_write_tokens": 100, "completion_tokens": 50}
    claude = Usage(by_model={"anthropic/claude-sonnet-4-5": dict(counts)})
    table = user_prices(claude.by_model, load_prices(path))
    live = (300 * 2 + 600 * 0.5 + 100 * 4 + 50 * 10) / 1e6
    assert claude.cost(table) == pytest.approx(live)
    assert claude.cost(table, batch=True) == pytest.approx(live / 2)  # every price at the batch discount
    mini = Usage(by_model={"openai/gpt-4o-mini": dict(counts)})  # no cache price named: the input price
    assert mini.cost(user_prices(mini.by_model, load_prices(path))) == pytest.approx((1000 * 1 + 50 * 3) / 1e6)
