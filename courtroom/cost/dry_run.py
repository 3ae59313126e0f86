"""``--dry-run`` of every spending command: estimates of run, compare, compile and study.

The figures come from :func:`courtroom.cost.estimate.estimate_run`; this module scales them to
what each command does (repeats, optimizer passes, study trials) and formats them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from courtroom.cost.estimate import TYPICAL_FIELD_TOKENS, Estimate, estimate_run
from courtroom.reporting.formatting import count
from courtroom.runner.config import RunConfig

PROGRAM_RUNS: dict[str, Any] = {
    "labeled": lambda s, train: 0,
    "knn": lambda s, train: 0,
    "bootstrap": lambda s, train: int(s.get("max_rounds", 1)) * train,
    # Each candidate bootstraps on the train split and is scored on it (the valset); 3 seeds are added.
    "bootstrap-rs": lambda s, train: (int(s.get("num_candidate_programs", 4)) + 3) * 2 * train,
}
"""Optimizer -> at most how many program runs it makes on ``train`` examples (None: it decides)."""


def scaled(est: Estimate, factor: float, *, exact: bool | None = None) -> Estimate:
    """An estimate multiplied by ``factor`` (repeats, trials, optimizer passes)."""

    def mul(x: Any) -> Any:
        return None if x is None else type(x)(round(x * factor)) if isinstance(x, int) else x * factor

    return dataclasses.replace(
        est,
        examples=round(est.examples * factor),
        calls=round(est.calls * factor),
        requests=mul(est.requests),
        cache_read_tokens=round(est.cache_read_tokens * factor),
        cache_write_tokens=round(est.cache_write_tokens * factor),
        cache_cost=mul(est.cache_cost),
        batch_cache_cost=mul(est.batch_cache_cost),
        prepare_calls=round(est.prepare_calls * factor),
        prompt_tokens=round(est.prompt_tokens * factor),
        completion_tokens=mul(est.completion_tokens),
        cost=mul(est.cost),
        batch_cost=mul(est.batch_cost),
        prompt_cost=mul(est.prompt_cost),
        likely_cost=mul(est.likely_cost),
        likely_completion_tokens=mul(est.likely_completion_tokens),
        calls_exact=est.calls_exact if exact is None else exact,
        min_calls=mul(est.min_calls),
        min_cost=mul(est.min_cost),
        rounds=est.rounds if factor == 1 else None,  # repeats and trials run one after another: not one run's
        min_rounds=est.min_rounds if factor == 1 else None,
    )


def added(a: Estimate, b: Estimate) -> Estimate:
    """Two estimates of one framework summed (unknown stays unknown)."""

    def plus(x: Any, y: Any) -> Any:
        return None if x is None or y is None else x + y

    return dataclasses.replace(
        a,
        examples=a.examples + b.examples,
        calls=a.calls + b.calls,
        requests=plus(a.requests, b.requests),
        cache_read_tokens=a.cache_read_tokens + b.cache_read_tokens,
        cache_write_tokens=a.cache_write_tokens + b.cache_write_tokens,
        cache_cost=(
            _cached(a, "cache_cost", "cost", b) if a.cache_cost is not None or b.cache_cost is not None else None
        ),
        batch_cache_cost=(
            _cached(a, "batch_cache_cost", "batch_cost", b)
            if a.batch_cache_cost is not None or b.batch_cache_cost is not None
            else None
        ),
        prepare_calls=a.prepare_calls + b.prepare_calls,
        prompt_tokens=a.prompt_tokens + b.prompt_tokens,
        completion_tokens=plus(a.completion_tokens, b.completion_tokens),
        cost=plus(a.cost, b.cost),
        batch_cost=plus(a.batch_cost, b.batch_cost),
        prompt_cost=plus(a.prompt_cost, b.prompt_cost),
        likely_cost=_likely(a, b, "likely_cost", "cost"),
        likely_completion_tokens=_likely(a, b, "likely_completion_tokens", "completion_tokens"),
        calls_exact=a.calls_exact and b.calls_exact,
        min_calls=None if a.min_calls is None and b.min_calls is None else _low(a) + _low(b),
        min_cost=None if a.min_calls is None and b.min_calls is None else plus(_low_cost(a), _low_cost(b)),
    )


def _cached(a: Estimate, cached: str, plain: str, b: Estimate | None = None) -> Any:
    """Two estimates' dollars with the provider's cache: each one's cached figure, else its plain one."""
    parts = [getattr(e, cached) if getattr(e, cached) is not None else getattr(e, plain) for e in (a, b) if e]
    return None if any(p is None for p in parts) else sum(parts)


def _likely(a: Estimate, b: Estimate, likely: str, exact: str) -> Any:
    """The sum at typical answer lengths where either part bounds its answers (else None)."""
    if getattr(a, likely) is None and getattr(b, likely) is None:
        return None
    x, y = (getattr(e, likely) if getattr(e, likely) is not None else getattr(e, exact) for e in (a, b))
    return None if x is None or y is None else x + y


def _low(e: Estimate) -> int:
    """Calls at the cheapest end of ``e`` (its calls, when it has no range)."""
    return e.calls if e.min_calls is None else e.min_calls


def _low_cost(e: Estimate) -> float | None:
    return e.cost if e.min_calls is None else e.min_cost


def estimate_runs(
    configs: Mapping[str, RunConfig], *, repeats: int = 1, prices: Any = None, sample: int = 12
) -> dict[str, Estimate]:
    """What running each config (``repeats`` times) would spend."""
    out = {}
    for name, config in configs.items():
        est = estimate_run(config, prices=prices or config.prices, sample=sample)
        out[name] = scaled(est, repeats) if repeats > 1 else est
    return out


def estimate_compile(
    config: RunConfig,
    optimizer: str,
    settings: Mapping[str, Any],
    *,
    train: int,
    dev: int,
    test: int = 0,
    prices: Any = None,
) -> tuple[Estimate, str]:
    """What ``courtroom compile`` would spend: dev and test scored before and after, plus the optimizer's runs.

    Returns the estimate and a note; optimizers whose passes the data decides (MIPROv2, COPRO,
    GEPA) are counted for the dev and test scoring only, and the note says so.
    """
    dev_config = dataclasses.replace(config, split="dev", limit=dev, train_limit=train)
    dev_est = estimate_run(dev_config, prices=prices, limit_flag="--dev-limit", short="warn")
    total = scaled(dev_est, 2)  # before and after
    if test:
        test_config = dataclasses.replace(config, split="test", limit=test, train_limit=train)
        total = added(
            total, scaled(estimate_run(test_config, prices=prices, limit_flag="--test-limit", short="warn"), 2)
        )
    runs = compile_runs(config, optimizer, settings, train, prices=prices)
    if runs is None:
        return dataclasses.replace(total, calls_exact=False), (
            f"{optimizer}: its own calls depend on what it finds; only the dev and test scoring (before and after) "
            "is counted"
        )
    n = PROGRAM_RUNS[optimizer](dict(settings), train)
    note = f"{optimizer}: at most {n} program runs on the train split, plus the dev and test scoring before and after"
    return added(total, runs), note


def compile_runs(
    config: RunConfig, optimizer: str, settings: Mapping[str, Any], train: int, *, prices: Any = None
) -> Estimate | None:
    """At most what ``optimizer``'s program runs on the first ``train`` train examples spend.

    None when the optimizer decides its own number of runs (MIPROv2, COPRO, GEPA): no bound.
    """
    runs = PROGRAM_RUNS.get(optimizer)
    if runs is None:
        return None
    train_config = dataclasses.replace(config, split="train", limit=train, train_limit=train)
    per = estimate_run(train_config, prices=prices, limit_flag="--train-limit", short="warn")
    return scaled(per, runs(dict(settings), train) / max(per.examples, 1), exact=False)


def max_points(space: Sequence[Any]) -> list[dict[str, Any]]:
    """The knobs of a study space at their dearest: the most calls and tokens a trial spends.

    Integers at their highest values, choices at their declared dearest
    (:func:`~courtroom.optimize.study.spaces.dearest_values`), a choice narrowed to one value at it.

    A space that chooses a design to convene (settle's ``trial``) gives one point per choice, each
    with that design's knobs at their dearest too (packed as the design takes them).
    """
    from courtroom.optimize.study.spaces import CONVENES, dearest_values, pack_convened

    choosers = {c for c, _ in CONVENES.values()}
    chooser = next((p for p in space if p.kind == "cat" and p.name in choosers), None)
    top = dearest_values([p for p in space if ":" not in p.name and "." not in p.name and p is not chooser])
    if chooser is None:
        return [top]
    return [
        pack_convened(
            dearest_values(
                [p for p in space if p.name.startswith(f"{choice}.")],
                top | {chooser.name: choice},
            )
        )
        for choice in chooser.choices
    ]


def max_point(space: Sequence[Any]) -> dict[str, Any]:
    """:func:`max_points` of a space that chooses no design (the first point otherwise)."""
    return max_points(space)[0]


def dearest_point(config: RunConfig, space: Sequence[Any], *, prices: Any = None) -> tuple[dict[str, Any], Estimate]:
    """The most expensive of :func:`max_points` (by calls, then dollars) and its one-trial estimate."""
    found = []
    for point in max_points(space):
        worst = dataclasses.replace(config, knobs={**config.knobs, **point})
        found.append((point, estimate_run(worst, prices=prices, limit_flag="--dev-limit", short="warn")))
    return max(found, key=lambda pe: (pe[1].calls, pe[1].cost or 0.0))


def estimate_study(config: RunConfig, space: Sequence[Any], trials: int, *, prices: Any = None) -> Estimate:
    """At most what ``trials`` trials spend: each scored at the space's most expensive point."""
    return scaled(dearest_point(config, space, prices=prices)[1], trials, exact=False)


def estimate_lines(
    estimates: Mapping[str, Estimate], title: str = "dry run: nothing was sent", notes: Sequence[str] = ()
) -> Iterator[str]:
    """A Markdown table of estimates, for the commands to print."""
    yield f"# {title}"
    yield ""
    yield "| framework | examples | LM calls | calls/example | prompt tokens | completion tokens | dollars |"
    yield "|---|---|---|---|---|---|---|"
    for name, e in estimates.items():
        calls = count(e.calls) if e.calls_exact else f"<= {count(e.calls)} (max: data decides)"
        per = f"{e.calls_per_example:.2f}"
        if e.min_calls is not None:
            calls = f"{count(e.min_calls)} .. {count(e.calls)} (all settled .. all tried)"
            per = f"{e.min_calls_per_example:.2f} .. {per}"
        completion = "unknown" if e.completion_tokens is None else count(e.completion_tokens, whole=True)
        if e.completion_tokens is not None and e.completion_basis == "max_tokens bound":
            completion = f"<= {completion} (max_tokens)"
        dollars = "unknown" if e.cost is None else f"${e.cost:.4f}"
        if e.min_calls is not None and e.cost is not None and e.min_cost is not None:
            dollars = f"${e.min_cost:.4f} .. ${e.cost:.4f}"
        if e.likely_cost is not None and e.cost is not None:
            dollars = f"<= {dollars} (bound)"  # every answer at max_tokens: a bound, never a price
        if e.models and set(e.models.values()) == {"local"}:
            dollars = "$0 (embedded local model)"
        yield (
            f"| {name} | {count(e.examples)} | {calls} | {per} "
            f"| {count(e.prompt_tokens, whole=True)} | {completion} | {dollars} |"
        )
    yield ""
    yield from _bound_lines(estimates)
    batch = [
        f"{name} {'<= ' if e.likely_cost is not None else ''}${e.batch_cost:.4f}"
        for name, e in estimates.items()
        if e.batch_cost is not None and e.cost
    ]
    if batch:
        yield "at the batch price (--batch: the same requests, answered within the provider's window): " + ", ".join(
            batch
        )
    yield from batch_round_lines(estimates)
    shared = [
        f"{name} {count(e.requests)} requests for {count(e.calls)} calls"
        for name, e in estimates.items()
        if e.requests is not None and e.requests < e.calls
    ]
    if shared:
        yield (
            "n-sampling (samples of one prompt in one request, the prompt paid once; priced above): "
            + ", ".join(shared)
        )
    cached = [
        f"{name} ${e.cache_cost:.4f}"
        + (f" (batch ${e.batch_cache_cost:.4f})" if e.batch_cache_cost is not None else "")
        + f", {e.cache_read_tokens / max(1, e.prompt_tokens):.0%} of prompt tokens read from it"
        for name, e in estimates.items()
        if e.cache_cost is not None and (e.cache_read_tokens or e.cache_write_tokens)
    ]
    if cached:
        yield "with the provider's prompt cache (its rule replayed on the rendered prompts): " + "; ".join(cached)
    for name, e in estimates.items():
        if e.layout:
            choice = e.layout
            sampled = choice["cache"] + choice["classic"]
            yield f"{name}: --prompt-layout auto chose cache for {choice['cache']} of {sampled} sampled cases"
            yield f"  their prompts: ${choice['classic_cost']:.4f} classic, ${choice['cache_cost']:.4f} cache"
    yield from notes
    if estimates:
        sample = max(e.sample for e in estimates.values())
        tokenizers = ", ".join(sorted({e.tokenizer for e in estimates.values()}))
        yield f"prompt tokens: the real prompts of {sample} examples per framework, counted by {tokenizers}"
        yield "dollars: LiteLLM's price map or --prices; 'unknown' when neither has the model"


def _bound_lines(estimates: Mapping[str, Estimate]) -> Iterator[str]:
    """Where the dollars are a bound: the prompts' price, the bound, and the likely price, each named."""
    bounded = {n: e for n, e in estimates.items() if e.likely_cost is not None and e.cost is not None}
    if not bounded:
        return
    yield "(bound): every answer at max_tokens (--max-tokens tightens it). Each part:"
    for name, e in bounded.items():
        prompts = "" if e.prompt_cost is None else f"prompts ${e.prompt_cost:.4f}; "
        yield f"  {name}: {prompts}all at most ${e.cost:.4f}; likely ${e.likely_cost:.4f}"
    yield (
        f"likely: ~{TYPICAL_FIELD_TOKENS['text']} tokens per free-text answer field, "
        f"{TYPICAL_FIELD_TOKENS['label']} per label: a prior,"
    )
    yield "  replaced by the lengths of a model's cached answers"


def estimate_comparison(
    configs: Mapping[str, RunConfig],
    *,
    repeats: int = 1,
    matched_baselines: bool = True,
    baseline: str = "self-consistency",
    match: str = "calls",
    baseline_knobs: Mapping[str, Any] | None = None,
) -> dict[str, Estimate]:
    """What ``compare`` would spend, its matched majority-vote rows included (planned from the estimates)."""
    from courtroom.comparison import matched

    out = estimate_runs(configs, repeats=repeats)
    if not matched_baselines or not configs:
        return out
    rows = {
        f: {"n": e.examples, "calls": e.calls - e.prepare_calls, "tokens": e.prompt_tokens + (e.completion_tokens or 0)}
        for f, e in out.items()
    }
    first = next(iter(configs.values()))
    fixed, per_sample = matched.sample_tokens(first, baseline) if match == "tokens" else (0.0, None)
    from courtroom.programs import get_framework

    knob = matched.BASELINES[baseline]
    planned = matched.plan(rows, baseline=baseline, match=match, sample_tokens=per_sample, fixed_tokens=fixed)
    for k, _ in sorted(planned.items()):
        if baseline in configs and configs[baseline].knobs.get(knob, get_framework(baseline).knobs()[knob]) == k:
            continue  # a compared row already is that vote
        config = dataclasses.replace(
            first,
            framework=baseline,
            knobs={matched.BASELINES[baseline]: k} | dict(baseline_knobs or {}),
            roles={},
            debias=None,
            program=None,
        )
        out |= estimate_runs({matched.row_name(baseline, k): config}, repeats=repeats)
    return out


def batch_round_lines(estimates: Mapping[str, Estimate]) -> Iterator[str]:
    """With ``--batch``: each design's batch rounds (a range for a design priced as one) and its wall time."""
    from courtroom.models.batch import TURNAROUND_BASIS, turnaround

    shown = {name: (e.min_rounds if e.min_rounds is not None else e.rounds, e.rounds)
             for name, e in estimates.items() if e.rounds}  # fmt: skip
    if not shown:
        return

    def span(low: float, high: float, unit: Any = str) -> str:
        return unit(high) if low == high else f"{unit(low)} .. {unit(high)}"

    each = turnaround()
    yield "batch rounds (--batch: one batch per stage of the critical path, preparation included): " + ", ".join(
        f"{name} {span(low, high)}" for name, (low, high) in shown.items()
    )
    yield (
        "expected wall time: "
        + ", ".join(f"{name} {span(low * each, high * each, _hours)}" for name, (low, high) in shown.items())
        + f" (rounds x {_hours(each)} per batch, {TURNAROUND_BASIS})"
    )


def _hours(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h".replace(".0 h", " h")
