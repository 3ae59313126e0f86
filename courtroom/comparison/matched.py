"""Equal-budget baselines for ``compare`` (SPEC §10).

"Debate or Vote" (NeurIPS 2025) finds that majority voting explains most of the gains credited
to multi-agent debate, so a framework is only better if it beats a majority vote that spends as
much. For each compared framework, :func:`plan` sets the samples of a majority-vote baseline
(``self-consistency``: chain-of-thought samples, or ``parallel-vote``: zero-shot answers) so
that its mean calls per example (or tokens, ``match="tokens"``) equal the framework's; the
rows are named ``{baseline} k={k}`` and the table's ``matches`` column says whose budget each
one matches. Frameworks that ask for the same k share one row.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from courtroom.errors import ConfigError

logger = logging.getLogger(__name__)

BASELINES = {"self-consistency": "k_samples", "parallel-vote": "n_models"}
"""Majority-vote baseline -> its knob for the number of samples."""
MATCHES = ("calls", "tokens")


def uncached(row: Mapping[str, Any], what: str) -> float | None:
    """``tokens`` or ``cost`` of a row as if no call came from the cache.

    Cache hits spend nothing, so a row that reused earlier answers looks cheap. Its tokens add
    what the cached answers cost when they were sent (``cached_tokens``, recorded by the cache);
    without that record (older folders, answers cached without usage), and for dollars, its cached
    calls are priced at the mean of its sent calls.
    """
    value, calls, sent = row.get(what), row.get("calls") or 0, row.get("sent")
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    cached_tokens = row.get("cached_tokens")
    if what == "tokens" and cached_tokens and not math.isnan(float(cached_tokens)):
        return float(value) + float(cached_tokens)
    cached = row.get("cached")
    if cached is not None and not (isinstance(cached, float) and math.isnan(cached)) and calls:
        # Calls answered by requests (samples sharing one request with n count too) priced as they were.
        answered = float(calls) - float(cached)
        return float(value) * float(calls) / answered if answered > 0 else None
    if sent is None or not calls:
        return float(value)
    return float(value) * float(calls) / float(sent) if sent else None


def per_example(row: Mapping[str, Any], what: str) -> float | None:
    """Mean calls (or tokens, cache hits included) per example of a table row."""
    n = row.get("n") or 0
    value = row.get("calls") if what == "calls" else uncached(row, what)
    if not n or value is None:
        return None
    return float(value) / float(n)


def tokens_per_sample(config: Any, baseline: str) -> float:
    """Tokens one sample of the baseline spends per example: dry-run prompt tokens plus completion.

    Completion tokens are the lengths measured in the cache (the frameworks just ran), else
    ``max_tokens``; with neither, the prompt alone. Training calls (chain-of-thought demos, made
    once per run) are left out: a matched row's tokens per example count evaluation calls only.
    """
    return sum(sample_tokens(config, baseline))


def sample_tokens(config: Any, baseline: str) -> tuple[float, float]:
    """(tokens per example paid once whatever k, tokens per sample): k samples cost ``fixed + k * each``.

    Where the baseline's model takes ``n`` (:mod:`courtroom.models.sampling`), k samples are one
    request: the prompt is paid once (``fixed``) and each sample adds its completion. Elsewhere,
    and when no completion length is known, each sample pays its prompt too (``fixed`` = 0).
    """
    from courtroom.cost.estimate import estimate_run, role_models
    from courtroom.models import sampling

    one = dataclasses.replace(config, framework=baseline, knobs={BASELINES[baseline]: 1}, debias=None)
    est = estimate_run(one, sample=10)
    evaluation = (est.calls - est.prepare_calls) / est.calls if est.calls else 1.0
    prompt = est.prompt_tokens * evaluation / max(est.examples, 1)
    completion = (est.completion_tokens or 0) * evaluation / max(est.examples, 1)
    if completion and sampling.names_take_n(role_models(one, ["classifier"]), config.n_sampling).get("classifier"):
        return prompt, completion
    return 0.0, prompt + completion


def check(baseline: str, match: str) -> None:
    """Refuse, in one line, a baseline or a match that :func:`plan` does not know."""
    if baseline not in BASELINES:
        raise ConfigError(f"unknown matched baseline {baseline!r}: use one of {', '.join(BASELINES)}")
    if match not in MATCHES:
        raise ConfigError(f"--match {match!r}: use calls or tokens")


def plan(
    rows: Mapping[str, Mapping[str, Any]],
    *,
    baseline: str = "self-consistency",
    match: str = "calls",
    sample_tokens: float | None = None,
    fixed_tokens: float = 0.0,
) -> dict[int, list[str]]:
    """Samples per example -> the frameworks whose mean calls (or tokens) per example it matches.

    ``rows`` are the comparison's table rows (``calls``, ``tokens``, ``n``). The baseline itself
    (in any size) gets no matched row. ``sample_tokens`` (tokens per sample per example) is
    needed for ``match="tokens"``; ``fixed_tokens`` what k samples pay once per example (their
    prompt, where they go as one request with ``n``: :func:`sample_tokens`).
    """
    check(baseline, match)
    out: dict[int, list[str]] = {}
    for name, row in rows.items():
        if name == baseline or name in BASELINES:
            continue
        spent = per_example(row, match)
        per_sample = 1.0 if match == "calls" else (sample_tokens or 0.0)
        if spent is None and match == "tokens":
            # Every call came from the cache: no tokens were counted. Match its calls instead.
            logger.warning("%s: no tokens counted (all calls cached); its matched baseline matches calls", name)
            spent, per_sample = per_example(row, "calls"), 1.0
        if spent is None:
            continue
        if per_sample <= 0:
            raise ConfigError("--match tokens needs the tokens of one baseline sample; none could be estimated")
        fixed = fixed_tokens if match == "tokens" and per_sample == (sample_tokens or 0.0) else 0.0
        k = max(1, round((spent - fixed) / per_sample))
        out.setdefault(k, []).append(name)
    return out


def row_name(baseline: str, k: int) -> str:
    """The table row of a matched baseline."""
    return f"{baseline} k={k}"


def cost_columns(table: pd.DataFrame) -> pd.DataFrame:
    """Add calls and tokens per example and dollars per correct answer (cache hits priced, see :func:`uncached`)."""
    if "n" not in table.columns:
        return table
    table = table.copy()
    rows = table.to_dict("index")
    n = table["n"].astype(float)
    table["calls_per_example"] = table["calls"].astype(float) / n
    table["tokens_per_example"] = [per_example(rows[f], "tokens") for f in table.index]
    correct = table["accuracy"].astype(float) * n
    cost = pd.Series([uncached(rows[f], "cost") for f in table.index], index=table.index, dtype=float)
    table["cost_per_correct"] = cost / correct.where(correct > 0)
    return table
