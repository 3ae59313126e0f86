"""Dry runs: the LM calls, tokens and dollars a run would spend, with no request sent.

How the figures are found (SPEC §10):

* **Calls**: the program (in both orders, for a ``debias`` run) runs on every example with role
  calls answered in-process by schema filling (no adapter, no model): each answer pattern in
  :data:`PATTERNS` is tried, and the calls per example are the maximum over them. When every
  pattern gives the same count the structure fixes the calls and the figure is exact; otherwise
  it is a maximum, and says so.
  Training calls (``program.prepare``) are counted the same way.
* **Prompt tokens**: the real prompts of a sample of the examples are rendered through the real
  adapter (:data:`courtroom.models._adapter.ADAPTER`) by a recording model and counted with
  ``litellm.token_counter`` (the model's own tokenizer where LiteLLM has one, else
  ``cl100k_base``: an estimate). Earlier answers that later prompts quote are placeholder text,
  so for long-winded real models the figure is a lower bound on those later prompts. Each role's
  exact call count is multiplied by its sampled prompt size at the mean case length (a line fitted
  over its sampled calls): calls shared by later cases (precedent reasons) keep their true number.
* **Completion tokens**: the mean answer length measured in the DSPy cache for the model when it
  holds any, else ``max_tokens`` per call as an upper bound, else unknown.
* **Dollars**: LiteLLM's price map or the user's ``prices``; None (unknown) when neither has the
  model (the embedded local model costs nothing).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from courtroom.analysis.bias import check_debias, debiased
from courtroom.cost import layout_choice
from courtroom.cost._recording import PATTERNS, recording_lms
from courtroom.cost._simulate import (
    NO_LMS,
    CallCounter,
    batch_rounds,
    fit_line,
    max_calls,
    measured_completion,
    sample_indices,
)
from courtroom.data.tasks import load_splits
from courtroom.models import sampling
from courtroom.models._concurrency import serial
from courtroom.models.lms import DEFAULT, LOCAL
from courtroom.models.usage import batch_price_per_token, price_per_token
from courtroom.programs import CourtroomProgram, build_program, get_framework
from courtroom.runner.config import RunConfig

LOCAL_MAX_TOKENS = 384
RENDER_CALLS = 60


@dataclass
class Estimate:
    """What a run would spend, before it is run."""

    framework: str
    """The framework (or the comparison row) priced."""
    examples: int
    """Evaluation examples."""
    calls: int
    """LM calls (evaluation and training), exact or a maximum (see ``calls_exact``)."""
    calls_exact: bool
    """Whether ``calls`` is exact (a fixed structure) or a maximum (data decides)."""
    prompt_tokens: int
    """Prompt tokens of every call, from the prompts rendered for ``sample`` examples."""
    completion_tokens: int | None
    """None when no bound is known (no ``max_tokens``, nothing measured)."""
    completion_basis: str
    """``measured`` (cache), ``max_tokens bound`` or ``unknown``."""
    cost: float | None
    """Dollars; None when no price is known for some model."""
    tokenizer: str
    """What counted the tokens (the model's tokenizer, or an approximation)."""
    sample: int
    """Examples whose prompts were rendered."""
    requests: int | None = None
    """Requests sent: ``calls`` less the samples that share another sample's request (n-sampling,
    :mod:`courtroom.models.sampling`); their prompt tokens are not counted in ``prompt_tokens``."""
    prepare_calls: int = 0
    """Calls spent once on training (precedents, the reliability assistant), within ``calls``."""
    max_calls_per_example: int = 0
    """The most calls one example can take."""
    max_cost_per_example: float | None = None
    """Upper bound on one example's dollars (prompt at the sample's largest, completion at the bound)."""
    models: dict[str, str] = field(default_factory=dict)
    """Role -> model name priced."""
    seconds: float = 0.0
    """Seconds the estimate took to compute."""
    min_calls: int | None = None
    """For a design priced as a range (settle, then trial): the calls at its cheapest (every case
    settled); ``calls`` is then its dearest (every case tried). None: no range."""
    min_cost: float | None = None
    """Dollars at the cheapest end of the range (None: no range, or no price)."""
    batch_cost: float | None = None
    """The same requests through the provider's batch API (``--batch``): LiteLLM's batch price, else half."""
    prompt_cost: float | None = None
    """Dollars of the prompts alone (None: no price): exact but for the sampling of prompt lengths."""
    likely_cost: float | None = None
    """Dollars at typical answer lengths (:data:`TYPICAL_FIELD_TOKENS`) where ``cost`` takes every answer
    at ``max_tokens`` (``completion_basis == "max_tokens bound"``); else None."""
    likely_completion_tokens: int | None = None
    """Completion tokens at those typical lengths (None: ``completion_tokens`` is not a bound)."""
    rounds: int | None = None
    """With ``--batch``: the batches the run sends, one per stage of its critical path (preparation
    included); for a design priced as a range, its dearest end. None: not in batch mode."""
    min_rounds: int | None = None
    """With ``--batch``, for a design priced as a range: the batches at its cheapest end."""
    cache_read_tokens: int = 0
    """Of ``prompt_tokens``, those the provider's prompt cache would serve (:mod:`courtroom.cost.prompt_cache`)."""
    cache_write_tokens: int = 0
    """Of ``prompt_tokens``, those written to the provider's cache (Anthropic's breakpoints)."""
    cache_cost: float | None = None
    """``cost`` with the provider's cache prices on those tokens (None: no price, or nothing cached)."""
    batch_cache_cost: float | None = None
    """``batch_cost`` with the provider's batch cache prices on those tokens (None: as ``cache_cost``)."""
    layout: dict[str, Any] | None = None
    """``--prompt-layout auto`` on a priced model: what it chose for the sampled cases (``cache`` and
    ``classic``: how many) and the prompt dollars of those cases' requests in each layout
    (``classic_cost``, ``cache_cost``; :mod:`courtroom.cost.layout_choice`). None: no choice made."""

    @property
    def calls_per_example(self) -> float:
        """Mean evaluation calls per example."""
        return (self.calls - self.prepare_calls) / max(self.examples, 1)

    @property
    def min_calls_per_example(self) -> float | None:
        """Mean evaluation calls per example at the cheapest end of a range (None: no range)."""
        return None if self.min_calls is None else (self.min_calls - self.prepare_calls) / max(self.examples, 1)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dataclasses.asdict(self) | {"calls_per_example": self.calls_per_example}


# -- role models -----------------------------------------------------------------------------------


def role_models(config: RunConfig, roles: Sequence[str]) -> dict[str, str]:
    """Role -> the model string the run would use, without building (or starting) any model."""

    def name(value: str | None) -> str:
        value = value or os.environ.get("COURTROOM_LM", LOCAL)
        return value

    default = name(config.lm)
    return {r: name(config.roles.get(r)) if r in config.roles else default for r in roles}


TYPICAL_FIELD_TOKENS = {"label": 4, "text": 120}
"""Tokens a role's answer typically spends per output field: a label (a choice among the labels, a
number, a yes/no) or free text (an argument, a reasoning), plus :data:`ANSWER_OVERHEAD` for the JSON
around them. A prior for the dry run's likely cost, named as such where it is printed; the answers a
run has cached (``measured``) replace it."""
ANSWER_OVERHEAD = 10


def typical_answer_tokens(program: Any, role: str) -> int:
    """Tokens a typical answer of ``role`` takes: its signature's output fields at :data:`TYPICAL_FIELD_TOKENS`."""
    predictor = getattr(program, role, None)
    signature = getattr(predictor, "signature", None) or getattr(getattr(predictor, "predict", None), "signature", None)
    fields = getattr(signature, "output_fields", None) or {}
    if not fields:
        return ANSWER_OVERHEAD + TYPICAL_FIELD_TOKENS["text"]
    total = ANSWER_OVERHEAD
    for info in fields.values():
        kind = getattr(info, "annotation", str)
        total += TYPICAL_FIELD_TOKENS["text" if kind is str else "label"]
    return total


def _max_tokens(model: str, config: RunConfig) -> int | None:
    if config.max_tokens:
        return int(config.max_tokens)
    if model == LOCAL:
        return LOCAL_MAX_TOKENS
    import litellm

    try:
        info = litellm.get_model_info(model)
    except Exception:  # noqa: BLE001 - LiteLLM raises for models it does not know
        return None
    return info.get("max_output_tokens") or info.get("max_tokens")


def _price(
    model: str, prices: Mapping[str, Sequence[float]] | None, *, batch: bool = False
) -> tuple[float, float] | None:
    if model == LOCAL:
        return (0.0, 0.0)
    table = {k: tuple(float(x) for x in v) for k, v in (prices or {}).items()}
    return batch_price_per_token(model, table) if batch else price_per_token(model, table)


def _tokenizer(models: Sequence[str]) -> str:
    import litellm

    known = all(m != LOCAL and (m in litellm.model_cost or m.split("/", 1)[-1] in litellm.model_cost) for m in models)
    return "litellm (model tokenizer)" if known else "litellm (cl100k_base estimate for unknown models)"


def count_tokens(model: str, messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of ``messages`` for ``model`` by LiteLLM's tokenizer (cl100k_base if unknown)."""
    import litellm

    return int(litellm.token_counter(model=model, messages=list(messages)))


# -- the estimate ---------------------------------------------------------------------------------


_SPLITS: dict[str, Any] = {}


def _data_key(config: RunConfig) -> str:
    return json.dumps(
        [config.task, config.data, config.seed, config.dataset, config.splits], sort_keys=True, default=str
    )


def estimate_run(
    config: RunConfig,
    *,
    sample: int = 12,
    prices: Mapping[str, Sequence[float]] | None = None,
    measure_cache: bool = True,
    limit_flag: str = "--limit",
    short: str = "error",
) -> Estimate:
    """What ``run(config)`` would spend, found without sending a request (see the module docstring).

    ``limit_flag`` and ``short`` say, as for :func:`~courtroom.data.tasks.load_task`, how a split
    smaller than ``config.limit`` is treated: the way the estimated command treats it.
    """
    start = time.perf_counter()
    cls = get_framework(config.framework)
    check_debias(config.debias, config.framework)
    data = config.load(limit_flag, short)
    labels, positions, examples = data.task.labels, data.task.positions, data.examples
    probe = build_program(config.framework, labels, positions, knobs=config.knobs, lms=NO_LMS)
    fewest = probe.fewest_calls_knobs()
    if fewest is not None:
        # A design whose calls the data decides between two fixed structures: price both ends.
        again: dict[str, Any] = dict(
            sample=sample, prices=prices, measure_cache=measure_cache, limit_flag=limit_flag, short=short
        )
        low = estimate_run(dataclasses.replace(config, knobs=fewest), **again)
        high = estimate_run(dataclasses.replace(config, knobs=probe.most_calls_knobs()), **again)
        return dataclasses.replace(
            high,
            calls_exact=False,
            min_calls=low.calls,
            min_cost=low.cost,
            min_rounds=low.rounds,
            seconds=round(time.perf_counter() - start, 3),
        )
    learns = type(probe).prepare
    train = None
    if config.program is None and learns is not CourtroomProgram.prepare:  # a saved program was fitted
        splits = _SPLITS.get(_data_key(config))
        if splits is None:
            splits = _SPLITS[_data_key(config)] = load_splits(
                config.task, data=config.data, seed=config.seed, dataset=config.dataset, splits=config.splits
            )[1]
        train = splits["train"][: config.train_limit] if config.train_limit else splits["train"]
    models = role_models(config, cls.roles)
    with sampling.assumed(sampling.names_take_n(models, config.n_sampling)):  # as the run would, by name
        calls, prepare_calls, exact, by_role, samples_by_role = max_calls(config, labels, positions, examples, train)
        rounds = batch_rounds(config, labels, positions, examples, train) if config.batch else None
    # Render the real prompts of a sample through the real adapter.
    default_model = role_models(config, [DEFAULT])[DEFAULT]
    lms, engine = recording_lms(models, config.prompt_layout)
    program = config.build_program(labels, positions, lms)  # a saved program's demos are in its prompts
    if train is not None:
        CallCounter(PATTERNS[0]).attach(program)
        program.prepare(train)
        CallCounter.detach(program)  # back to the class's real role calls
    evaluated = debiased(program, config.debias)  # a swapped run renders both orders' prompts
    # Render at most about RENDER_CALLS calls (but at least 4 examples): enough for the fit.
    per_example = max(1.0, sum(calls) / max(len(calls), 1))
    picked = sample_indices(len(examples), max(min(sample, 4), min(sample, math.ceil(RENDER_CALLS / per_example))))
    samples: dict[str, tuple[list[float], list[float]]] = {}  # role -> (case lengths, prompt tokens) per call
    per_case: list[int] = []  # prompt tokens of each sampled case
    per_model: Counter[str] = Counter()
    token = serial.set(True)  # a thread per call would cost more than the rendering
    with layout_choice.recording() as choices, layout_choice.batch_prices(bool(config.batch)):  # auto, per case
        for i in picked:
            before = len(engine.requests)
            try:
                evaluated(case=examples[i].case)
            except Exception:  # noqa: BLE001 - counted as far as it went
                pass
            per_case.append(0)
            for role, messages, _ in engine.requests[before:]:
                model = models.get(role, default_model)
                n = count_tokens(model if model != LOCAL else "openai/local", messages)
                per_model[model] += n
                per_case[-1] += n
                xs, ys = samples.setdefault(role, ([], []))
                xs.append(len(examples[i].case))
                ys.append(n)
    serial.reset(token)
    # Role by role: its exact call count times its prompt at the mean case length (a line fitted over
    # its sampled calls). Calls made once per run and shared by later cases (Courtroom-LLM's
    # precedent reasons) fall on the sampled cases; counting by role keeps them at their true number.
    role_calls = _scale_roles(by_role, sum(calls) + prepare_calls)
    # n-sampling: a later sample of one prompt rides on the first sample's request (no prompt billed)
    # where the role's model takes n (courtroom.models.sampling; by name: OpenAI-wire models).
    takes_n = sampling.names_take_n({role: models.get(role, default_model) for role in role_calls}, config.n_sampling)
    shared = {
        role: count * samples_by_role[role] / by_role[role]
        for role, count in role_calls.items()
        if samples_by_role[role] and takes_n[role]
    }
    mean_length = sum(len(ex.case) for ex in examples) / max(len(examples), 1)
    rendered = [n for _, ys in samples.values() for n in ys]
    per_call_prompt = sum(rendered) / max(1, len(rendered))
    prompt = 0.0
    for role, count in role_calls.items():
        billed = count - shared.get(role, 0.0)
        if role in samples:
            a, b = fit_line(*samples[role])
            prompt += billed * max(0.0, a + b * mean_length)
        else:  # a role only training calls make (not rendered): the mean rendered call
            prompt += billed * per_call_prompt
    # Completion tokens and dollars, by the model of each role's calls.
    measured = measured_completion(list(set(models.values()))) if measure_cache else {}
    completion: float | None = 0.0
    basis = "measured" if measured and all(m in measured for m in set(models.values())) else "max_tokens bound"
    cost: float | None = 0.0
    model_share = {m: t / max(1, sum(per_model.values())) for m, t in per_model.items()}
    for role, count in role_calls.items():
        model = models.get(role, default_model)
        per_call: float | None = measured.get(model) or _max_tokens(model, config)
        if per_call is None or completion is None:
            completion = None
            continue
        completion += count * per_call
    for model, share in model_share.items():
        price = _price(model, prices)
        if price is None or cost is None:
            cost = None
            continue
        cost += prompt * share * price[0]
    prompt_cost = cost
    likely_cost: float | None = None
    likely_tokens: float | None = None
    if basis == "max_tokens bound" and completion is not None:
        likely_tokens, likely_cost = 0.0, prompt_cost
        for role, count in role_calls.items():
            model = models.get(role, default_model)
            bound = _max_tokens(model, config)
            typical = typical_answer_tokens(program, role)
            likely = min(bound, typical) if bound else typical
            likely_tokens += count * likely
            if likely_cost is not None:
                likely_cost += count * likely * (_price(model, prices) or (0.0, 0.0))[1]
    if cost is not None and completion is not None:
        for role, count in role_calls.items():
            model = models.get(role, default_model)
            answer = measured.get(model) or _max_tokens(model, config) or 0
            cost += count * answer * (_price(model, prices) or (0.0, 0.0))[1]
    elif completion is None:
        cost, basis = None, "unknown"
    batch_cost: float | None = None
    if cost is not None:  # the same requests at the batch price (--batch)
        batch_cost = sum(
            prompt * share * (_price(m, prices, batch=True) or (0.0, 0.0))[0] for m, share in model_share.items()
        )
        for role, count in role_calls.items():
            model = models.get(role, default_model)
            answer = measured.get(model) or _max_tokens(model, config) or 0
            batch_cost += count * answer * (_price(model, prices, batch=True) or (0.0, 0.0))[1]
    read, written, cache_cost, batch_cache_cost = _provider_cache(
        engine.requests,
        models,
        default_model,
        takes_n,
        prompt,
        model_share,
        cost,
        batch_cost,
        prices,
        config.prompt_layout,
    )
    worst = _per_example_bound(max(per_case, default=0), max(calls) if calls else 0, models, config, prices)
    return Estimate(
        framework=config.framework,
        examples=len(examples),
        calls=sum(calls) + prepare_calls,
        requests=round(sum(calls) + prepare_calls - sum(shared.values())),
        calls_exact=exact,
        prompt_tokens=round(prompt),
        completion_tokens=None if completion is None else round(completion),
        completion_basis=basis,
        cost=cost,
        batch_cost=batch_cost,
        prompt_cost=prompt_cost,
        likely_cost=likely_cost,
        likely_completion_tokens=None if likely_tokens is None else round(likely_tokens),
        rounds=rounds,
        cache_read_tokens=read,
        cache_write_tokens=written,
        cache_cost=cache_cost,
        batch_cache_cost=batch_cache_cost,
        layout=_layout_summary(choices),
        tokenizer=_tokenizer(list(models.values())),
        sample=len(picked),
        prepare_calls=prepare_calls,
        max_calls_per_example=max(calls) if calls else 0,
        max_cost_per_example=worst,
        models=models,
        seconds=round(time.perf_counter() - start, 3),
    )


def _provider_cache(
    rendered: Sequence[tuple[str, Any, int | None]],
    models: Mapping[str, str],
    default_model: str,
    takes_n: Mapping[str, bool],
    prompt: float,
    model_share: Mapping[str, float],
    cost: float | None,
    batch_cost: float | None,
    prices: Any,
    layout: str | None = None,
) -> tuple[int, int, float | None, float | None]:
    """(cache read tokens, cache write tokens, cost and batch cost with the provider's cache) of the run.

    The rendered requests are replayed against each provider's cache rule
    (:func:`courtroom.cost.prompt_cache.cached_shares`); a later sample that shares its request
    (n-sampling) sends no prompt and is left out. Each model's shares apply to its part of ``prompt``.
    """
    from courtroom.cost import prompt_cache

    sent = [
        (models.get(role, default_model), messages)
        for role, messages, index in rendered
        if not (index and takes_n.get(role, False))
    ]
    shares = prompt_cache.cached_shares(sent)  # each request's layout read from it (auto: per case)
    read = written = 0.0
    saved = batch_saved = 0.0
    for model, (r, w) in shares.items():
        tokens = prompt * model_share.get(model, 0.0)
        read += tokens * r
        written += tokens * w
        if model != LOCAL:
            saved += prompt_cache.cache_dollars(model, tokens * r, tokens * w, prices)
            batch_saved += prompt_cache.cache_dollars(model, tokens * r, tokens * w, prices, batch=True)
    if not (read or written):
        return 0, 0, None, None
    return (
        round(read),
        round(written),
        None if cost is None else cost - saved,
        None if batch_cost is None else batch_cost - batch_saved,
    )


def _layout_summary(choices: Mapping[Any, layout_choice.Choice]) -> dict[str, Any] | None:
    """What ``--prompt-layout auto`` chose for the sampled cases, with both layouts' prompt dollars."""
    priced = [c for c in choices.values() if c.classic is not None and c.cache is not None]
    if not priced:
        return None
    return {
        "cache": sum(c.layout == "cache" for c in priced),
        "classic": sum(c.layout == "classic" for c in priced),
        "classic_cost": sum(c.classic or 0.0 for c in priced),
        "cache_cost": sum(c.cache or 0.0 for c in priced),
    }


def _scale_roles(by_role: Counter[str], total: int) -> dict[str, float]:
    """Calls by role, scaled to ``total`` (by_role comes from the pattern with the most calls)."""
    seen = sum(by_role.values())
    return {r: n * total / seen for r, n in by_role.items()} if seen else {}


def _per_example_bound(
    prompt: float, calls: int, models: Mapping[str, str], config: RunConfig, prices: Any
) -> float | None:
    """Dollars one example can cost at most: the dearest model on every call, completion at the bound."""
    worst = 0.0
    for model in set(models.values()):
        price, cap = _price(model, prices), _max_tokens(model, config)
        if price is None or cap is None:
            return None
        worst = max(worst, prompt * 1.25 * price[0] + calls * cap * price[1])
    return worst
