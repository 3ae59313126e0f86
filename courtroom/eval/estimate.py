"""Dry runs: the LM calls, tokens and dollars a run would spend, with no request sent.

How the figures are found (SPEC §10):

* **Calls**: the program runs on every example with role calls answered in-process by schema
  filling (no adapter, no model): each answer pattern in :data:`PATTERNS` is tried, and the
  calls per example are the maximum over them. When every pattern gives the same count the
  structure fixes the calls and the figure is exact; otherwise it is a maximum, and says so.
  Training calls (``program.prepare``) are counted the same way.
* **Prompt tokens**: the real prompts of a sample of the examples are rendered through the real
  adapter (:data:`courtroom._adapter.ADAPTER`) by a recording model and counted with
  ``litellm.token_counter`` (the model's own tokenizer where LiteLLM has one, else
  ``cl100k_base``: an estimate). Earlier answers that later prompts quote are placeholder text,
  so for long-winded real models the figure is a lower bound on those later prompts. Other
  examples are extrapolated linearly in their case length.
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
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import dspy
from dspy.lm15 import Message, Response, TextPart, Usage

from courtroom._adapter import output_schema
from courtroom._concurrency import serial
from courtroom._fakes import FakeLM, answer_for_schema
from courtroom.eval.runs import RunConfig
from courtroom.eval.tasks import load_splits, load_task
from courtroom.lms import DEFAULT, LOCAL, RoleLMs, current_role
from courtroom.programs import CourtroomProgram, build_program, get_framework
from courtroom.usage import price_per_token

PATTERNS: tuple[dict[str, Any], ...] = (
    {"enum": 0, "number": 0.5, "boolean": True},
    {"enum": -1, "number": 1.0, "boolean": False},
    {"enum": 1, "number": 0.0, "boolean": False},
)
"""Answer patterns a dry run tries: which enum option, number and boolean every role answers."""

FILLER = "fake server reply"
"""Placeholder for free-text answers (what :class:`courtroom.testing.FakeServer` answers too)."""

LOCAL_MAX_TOKENS = 384
RENDER_CALLS = 60


@dataclass
class Estimate:
    """What a run would spend, before it is run."""

    framework: str
    examples: int
    calls: int
    """LM calls (evaluation and training), exact or a maximum (see ``calls_exact``)."""
    calls_exact: bool
    prompt_tokens: int
    completion_tokens: int | None
    """None when no bound is known (no ``max_tokens``, nothing measured)."""
    completion_basis: str
    """``measured`` (cache), ``max_tokens bound`` or ``unknown``."""
    cost: float | None
    """Dollars; None when no price is known for some model."""
    tokenizer: str
    sample: int
    """Examples whose prompts were rendered."""
    prepare_calls: int = 0
    max_calls_per_example: int = 0
    max_cost_per_example: float | None = None
    """Upper bound on one example's dollars (prompt at the sample's largest, completion at the bound)."""
    models: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def calls_per_example(self) -> float:
        """Mean evaluation calls per example."""
        return (self.calls - self.prepare_calls) / max(self.examples, 1)

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


def _price(model: str, prices: Mapping[str, Sequence[float]] | None) -> tuple[float, float] | None:
    if model == LOCAL:
        return (0.0, 0.0)
    table = {k: (float(v[0]), float(v[1])) for k, v in (prices or {}).items()}
    return price_per_token(model, table)


def _tokenizer(models: Sequence[str]) -> str:
    import litellm

    known = all(m != LOCAL and (m in litellm.model_cost or m.split("/", 1)[-1] in litellm.model_cost) for m in models)
    return "litellm (model tokenizer)" if known else "litellm (cl100k_base estimate for unknown models)"


def count_tokens(model: str, messages: Sequence[Mapping[str, str]]) -> int:
    """Prompt tokens of ``messages`` for ``model`` by LiteLLM's tokenizer (cl100k_base if unknown)."""
    import litellm

    return int(litellm.token_counter(model=model, messages=list(messages)))


# -- counting calls in-process ------------------------------------------------------------------------


def _values(schema: Mapping[str, Any], pattern: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, prop in (schema.get("properties") or {}).items():
        if "enum" in prop:
            options = prop["enum"]
            out[name] = options[pattern["enum"] % len(options)] if pattern["enum"] >= 0 else options[-1]
        elif prop.get("type") in ("number", "integer"):
            out[name] = pattern["number"]
        elif prop.get("type") == "boolean":
            out[name] = pattern["boolean"]
    return answer_for_schema(schema, out, FILLER)


class _Counter:
    """Counts a program's role calls, answering them in-process (no adapter, no model)."""

    def __init__(self, pattern: Mapping[str, Any]) -> None:
        self.pattern = pattern
        self.by_role: Counter[str] = Counter()
        self._answers: dict[Any, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def attach(self, program: CourtroomProgram) -> CourtroomProgram:
        def ask(role: str, predictor: dspy.Predict, *args: Any, **kwargs: Any) -> dspy.Prediction:
            with self._lock:
                self.by_role[role] += 1
                values = self._answers.get(predictor.signature)
                if values is None:
                    values = self._answers[predictor.signature] = _values(
                        output_schema(predictor.signature), self.pattern
                    )
            return dspy.Prediction(**values)

        program.ask = ask  # type: ignore[method-assign]
        return program

    def total(self) -> int:
        return sum(self.by_role.values())


def _forward_counts(program: CourtroomProgram, counter: _Counter, examples: Sequence[dspy.Example]) -> list[int]:
    token = serial.set(True)
    try:
        return _forward_each(program, counter, examples)
    finally:
        serial.reset(token)


def _forward_each(program: CourtroomProgram, counter: _Counter, examples: Sequence[dspy.Example]) -> list[int]:
    counts = []
    for ex in examples:
        before = counter.total()
        try:
            program(case=ex.case)
        except Exception:  # noqa: BLE001 - a fake answer that a program rejects still spent its calls
            pass
        counts.append(counter.total() - before)
    return counts


# -- rendering the real prompts -----------------------------------------------------------------------


class _RecordingEngine:
    """DSPy engine that keeps every rendered request's messages and answers by schema filling."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, list[dict[str, str]]]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _RecordingEngine:
        return self

    def complete(self, request: Any) -> Response:
        messages = [{"role": str(m.role), "content": m.text or ""} for m in request.messages]
        system = request.system
        if system:
            text = system if isinstance(system, str) else "".join(getattr(p, "text", "") or "" for p in system)
            messages.insert(0, {"role": "system", "content": text})
        with self._lock:
            self.requests.append((current_role() or DEFAULT, messages))
        fmt = request.config.response_format or {}
        schema = dict(fmt.get("schema") or fmt.get("json_schema", {}).get("schema") or {})
        text = json.dumps(_values(schema, PATTERNS[0]))
        return Response(
            id=None,
            model="dry-run",
            message=Message.assistant([TextPart(text)]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request: Any) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


def _recording_lms(models: Mapping[str, str]) -> tuple[RoleLMs, _RecordingEngine]:
    engine = _RecordingEngine()
    built: dict[str, Any] = {}
    for model in set(models.values()):
        lm = FakeLM(model if model != LOCAL else "openai/local", engine=engine, cache=False)
        built[model] = lm
    lms = RoleLMs({DEFAULT: next(iter(built.values()))})
    lms.update({role: built[m] for role, m in models.items()})
    return lms, engine


def _sample(n: int, size: int) -> list[int]:
    if n <= size:
        return list(range(n))
    return sorted({round(i * (n - 1) / (size - 1)) for i in range(size)})


def _fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least-squares ``y = a + b x``; the mean when x does not vary."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    var = sum((x - mx) ** 2 for x in xs)
    if var == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / var
    return my - b * mx, b


# -- completion lengths measured in the cache -----------------------------------------------------------


def measured_completion(models: Sequence[str], scan: int = 2000) -> dict[str, float]:
    """Model -> mean completion tokens of the answers the DSPy disk cache holds for it (first ``scan`` entries).

    Read once per process and cache folder.
    """
    from courtroom import cache

    key = (str(cache._configured or cache.cache_dir()), tuple(sorted(models)), scan)
    if key not in _MEASURED:
        _MEASURED[key] = _scan_cache(models, scan)
    return _MEASURED[key]


_MEASURED: dict[Any, dict[str, float]] = {}


def _scan_cache(models: Sequence[str], scan: int) -> dict[str, float]:
    from courtroom import cache

    if cache._configured is None:
        if not cache.cache_dir().is_dir():
            return {}
        cache.configure_cache()
    disk = getattr(dspy.cache, "disk_cache", None)
    if disk is None:
        return {}
    wanted = {m: m.split("/", 1)[-1] for m in models if m != LOCAL}
    sums: dict[str, list[float]] = {m: [] for m in wanted}
    try:
        for i, key in enumerate(iter(disk)):
            if i >= scan:
                break
            value = disk.get(key)
            model = str(getattr(value, "model", "") or "")
            usage = getattr(value, "usage", None)
            tokens = getattr(usage, "completion_tokens", None) or getattr(usage, "output_tokens", None)
            if not model or not tokens:
                continue
            for m, short in wanted.items():
                if model in (m, short) or model.startswith(short + "-"):
                    sums[m].append(float(tokens))
    except Exception:  # noqa: BLE001 - an unreadable cache only loses the measurement
        return {}
    return {m: sum(v) / len(v) for m, v in sums.items() if v}


# -- the estimate ---------------------------------------------------------------------------------


def _count(
    config: RunConfig, labels: Any, positions: Any, examples: Sequence[Any], train: Any, pattern: Mapping[str, Any]
) -> tuple[list[int], int, Counter[str]]:
    counter = _Counter(pattern)
    program = counter.attach(build_program(config.framework, labels, positions, knobs=config.knobs, lms=_NO_LMS))
    if train is not None:
        program.prepare(train)
    prepared = counter.total()
    _embed_at_once(program, [ex.case for ex in examples])
    return _forward_counts(program, counter, examples), prepared, counter.by_role


def _embed_at_once(program: CourtroomProgram, cases: Sequence[str]) -> None:
    """Embed every case for precedent search in one batch (TF-IDF only: embedding models are remote)."""
    index = getattr(program, "precedent_index", None)
    if index is None or getattr(index, "embedder", None) != "tfidf" or not hasattr(index, "_embed"):
        return
    import numpy as np

    one_by_one = index._embed
    rows = dict(zip(cases, one_by_one(list(cases)), strict=True))

    def embed(texts: Sequence[str]) -> Any:
        if all(t in rows for t in texts):
            return np.stack([rows[t] for t in texts])
        return one_by_one(texts)

    index._embed = embed


def _max_calls(
    config: RunConfig, labels: Any, positions: Any, examples: Sequence[dspy.Example], train: Sequence[Any] | None
) -> tuple[list[int], int, bool, Counter[str]]:
    """Per-example calls (max over answer patterns), training calls, whether exact, and calls by role.

    Every pattern runs on a sample first; only when they disagree (answers decide the path) do
    all patterns run on every example.
    """
    picked = [examples[i] for i in _sample(len(examples), 30)]
    trial = [_count(config, labels, positions, picked, train, p) for p in PATTERNS]
    exact = all(t[0] == trial[0][0] and t[1] == trial[0][1] for t in trial)
    if exact and len(set(trial[0][0])) == 1:
        # Every sampled case and answer pattern takes the same calls: the structure fixes them.
        per, by_role = trial[0][0][0], trial[0][2]
        scale = len(examples) / max(len(picked), 1)
        return [per] * len(examples), trial[0][1], True, Counter({r: round(n * scale) for r, n in by_role.items()})
    runs = [_count(config, labels, positions, examples, train, p) for p in (PATTERNS[:1] if exact else PATTERNS)]
    calls = [max(c) for c in zip(*(r[0] for r in runs), strict=True)]
    biggest = max(runs, key=lambda r: sum(r[0]) + r[1])
    return calls, max(r[1] for r in runs), exact, biggest[2]


_SPLITS: dict[str, Any] = {}


def _data_key(config: RunConfig) -> str:
    return json.dumps([config.task, config.data, config.seed, config.dataset], sort_keys=True, default=str)


_NO_LMS = RoleLMs({DEFAULT: FakeLM("dry-run/none", engine=_RecordingEngine(), cache=False)})


def estimate_run(
    config: RunConfig,
    *,
    sample: int = 12,
    prices: Mapping[str, Sequence[float]] | None = None,
    measure_cache: bool = True,
) -> Estimate:
    """What ``run(config)`` would spend, found without sending a request (see the module docstring)."""
    start = time.perf_counter()
    cls = get_framework(config.framework)
    data = load_task(
        config.task, data=config.data, split=config.split, limit=config.limit, seed=config.seed, dataset=config.dataset
    )
    labels, positions, examples = data.task.labels, data.task.positions, data.examples
    learns = type(build_program(config.framework, labels, positions, knobs=config.knobs, lms=_NO_LMS)).prepare
    train = None
    if learns is not CourtroomProgram.prepare:
        splits = _SPLITS.get(_data_key(config))
        if splits is None:
            splits = _SPLITS[_data_key(config)] = load_splits(
                config.task, data=config.data, seed=config.seed, dataset=config.dataset
            )[1]
        train = splits["train"][: config.train_limit] if config.train_limit else splits["train"]
    calls, prepare_calls, exact, by_role = _max_calls(config, labels, positions, examples, train)
    models = role_models(config, cls.roles)
    # Render the real prompts of a sample through the real adapter.
    default_model = role_models(config, [DEFAULT])[DEFAULT]
    lms, engine = _recording_lms(models)
    program = build_program(config.framework, labels, positions, knobs=config.knobs, lms=lms)
    if train is not None:
        _Counter(PATTERNS[0]).attach(program)
        program.prepare(train)
        del program.ask  # back to the class's real role calls
    # Render at most about RENDER_CALLS calls (but at least 4 examples): enough for the fit.
    per_example = max(1.0, sum(calls) / max(len(calls), 1))
    picked = _sample(len(examples), max(min(sample, 4), min(sample, math.ceil(RENDER_CALLS / per_example))))
    xs, ys = [], []
    per_model: Counter[str] = Counter()
    token = serial.set(True)  # a thread per call would cost more than the rendering
    for i in picked:
        before = len(engine.requests)
        try:
            program(case=examples[i].case)
        except Exception:  # noqa: BLE001 - counted as far as it went
            pass
        tokens = 0
        for role, messages in engine.requests[before:]:
            model = models.get(role, default_model)
            n = count_tokens(model if model != LOCAL else "openai/local", messages)
            per_model[model] += n
            tokens += n
        xs.append(len(examples[i].case))
        ys.append(tokens)
    serial.reset(token)
    a, b = _fit(xs, ys)
    prompt = sum(max(0.0, a + b * len(ex.case)) for ex in examples)
    per_call_prompt = sum(ys) / max(1, len(engine.requests))
    prompt += prepare_calls * per_call_prompt
    # Completion tokens and dollars, by the model of each role's calls.
    role_calls = _scale_roles(by_role, sum(calls) + prepare_calls)
    measured = measured_completion(list(set(models.values()))) if measure_cache else {}
    completion: float | None = 0.0
    basis = "measured" if measured else "max_tokens bound"
    cost: float | None = 0.0
    model_share = {m: t / max(1, sum(per_model.values())) for m, t in per_model.items()}
    for role, n in role_calls.items():
        model = models.get(role, default_model)
        per_call = measured.get(model) or _max_tokens(model, config)
        if per_call is None or completion is None:
            completion = None
            continue
        completion += n * per_call
    for model, share in model_share.items():
        price = _price(model, prices)
        if price is None or cost is None:
            cost = None
            continue
        cost += prompt * share * price[0]
    if cost is not None and completion is not None:
        for role, n in role_calls.items():
            model = models.get(role, default_model)
            per_call = measured.get(model) or _max_tokens(model, config) or 0
            cost += n * per_call * (_price(model, prices) or (0.0, 0.0))[1]
    elif completion is None:
        cost, basis = None, "unknown"
    worst = _per_example_bound(max(ys) if ys else 0, max(calls) if calls else 0, models, config, prices)
    return Estimate(
        framework=config.framework,
        examples=len(examples),
        calls=sum(calls) + prepare_calls,
        calls_exact=exact,
        prompt_tokens=round(prompt),
        completion_tokens=None if completion is None else round(completion),
        completion_basis=basis,
        cost=cost,
        tokenizer=_tokenizer(list(models.values())),
        sample=len(picked),
        prepare_calls=prepare_calls,
        max_calls_per_example=max(calls) if calls else 0,
        max_cost_per_example=worst,
        models=models,
        seconds=round(time.perf_counter() - start, 3),
    )


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
