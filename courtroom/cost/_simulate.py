"""Running a program in-process for a dry run: count its role calls, render its real prompts.

No request leaves the process: role calls are answered by schema filling, either directly in
:meth:`CourtroomProgram.ask` (counting) or by a recording ``dspy.LM`` engine behind the real
adapter (rendering). See :mod:`courtroom.cost.estimate`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import dspy

from courtroom.analysis.bias import debiased
from courtroom.cost._recording import PATTERNS, _RecordingEngine, _values
from courtroom.models import sampling
from courtroom.models._adapter import output_schema
from courtroom.models._concurrency import depth, serial
from courtroom.models.lms import DEFAULT, LOCAL, RoleLMs
from courtroom.programs import CourtroomProgram, build_program
from courtroom.programs._reliability import counting_calls
from courtroom.runner.config import RunConfig
from courtroom.testing._fakes import FakeLM

# -- counting calls in-process ------------------------------------------------------------------------


class CallCounter:
    """Counts a program's role calls, answering them in-process (no adapter, no model)."""

    def __init__(self, pattern: Mapping[str, Any]) -> None:
        self.pattern = pattern
        self.by_role: Counter[str] = Counter()
        self.samples: Counter[str] = Counter()
        """Calls by role that were a later sample of one prompt (:meth:`ask_samples`): where the model
        takes ``n`` they share the first sample's request and pay no prompt."""
        self._answers: dict[Any, dict[str, Any]] = {}
        self._lock = threading.Lock()

    def attach(self, program: CourtroomProgram) -> CourtroomProgram:
        def ask(role: str, predictor: dspy.Predict, *args: Any, **kwargs: Any) -> dspy.Prediction:
            rounds = depth.get()
            if rounds is not None:
                rounds[0] += 1
            with self._lock:
                self.by_role[role] += 1
                self.samples[role] += int(bool(sampling.sample_index()))
                values = self._answers.get(predictor.signature)
                if values is None:
                    values = self._answers[predictor.signature] = _values(
                        output_schema(predictor.signature), self.pattern
                    )
            return dspy.Prediction(**values)

        for each in convened(program):  # a settle design's trial asks through its own `ask`
            each.ask = ask  # type: ignore[method-assign]
        return program

    @staticmethod
    def detach(program: CourtroomProgram) -> None:
        """Back to the classes' real role calls."""
        for each in convened(program):
            each.__dict__.pop("ask", None)

    def total(self) -> int:
        return sum(self.by_role.values())


def convened(program: CourtroomProgram) -> list[CourtroomProgram]:
    """``program`` and every program it convenes (its sub-modules that are programs)."""
    return [
        program,
        *(m for _, m in program.named_sub_modules() if isinstance(m, CourtroomProgram) and m is not program),
    ]


def _forward_counts(program: dspy.Module, counter: CallCounter, examples: Sequence[dspy.Example]) -> list[int]:
    token = serial.set(True)
    try:
        return _forward_each(program, counter, examples)
    finally:
        serial.reset(token)


def _forward_each(program: dspy.Module, counter: CallCounter, examples: Sequence[dspy.Example]) -> list[int]:
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


def sample_indices(n: int, size: int) -> list[int]:
    if n <= size:
        return list(range(n))
    return sorted({round(i * (n - 1) / (size - 1)) for i in range(size)})


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
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
    from courtroom.models import cache

    key = (str(cache._configured or cache.cache_dir()), tuple(sorted(models)), scan)
    if key not in _MEASURED:
        _MEASURED[key] = _scan_cache(models, scan)
    return _MEASURED[key]


_MEASURED: dict[Any, dict[str, float]] = {}


def _model_and_completion(value: Any) -> tuple[str, Any]:
    """The model and completion tokens of one disk-cache entry.

    LiteLLM's responses are objects (``model``, ``usage.completion_tokens``); DSPy's native engine
    stores a plain record (``response_model``, ``usage["completion_tokens"]``).
    """
    if isinstance(value, Mapping):
        usage = value.get("usage") or {}
        return str(value.get("response_model") or ""), usage.get("completion_tokens") or usage.get("output_tokens")
    usage = getattr(value, "usage", None)
    tokens = getattr(usage, "completion_tokens", None) or getattr(usage, "output_tokens", None)
    return str(getattr(value, "model", "") or ""), tokens


def _scan_cache(models: Sequence[str], scan: int) -> dict[str, float]:
    from courtroom.models import cache

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
            model, tokens = _model_and_completion(disk.get(key))
            if not model or not tokens:
                continue
            for m, short in wanted.items():
                if model in (m, short) or model.startswith(short + "-"):
                    sums[m].append(float(tokens))
    except Exception:  # noqa: BLE001 - an unreadable cache only loses the measurement
        return {}
    return {m: sum(v) / len(v) for m, v in sums.items() if v}


def _count(
    config: RunConfig, labels: Any, positions: Any, examples: Sequence[Any], train: Any, pattern: Mapping[str, Any]
) -> tuple[list[int], int, Counter[str], Counter[str]]:
    counter = CallCounter(pattern)
    program = counter.attach(build_program(config.framework, labels, positions, knobs=config.knobs, lms=NO_LMS))
    if train is not None:
        _prepare_counting(program, train)
    prepared = counter.total()
    _embed_at_once(program, [ex.case for ex in examples])
    # A swapped twin copies the counting `ask`, so both orders' calls are counted.
    calls = _forward_counts(debiased(program, config.debias), counter, examples)
    return calls, prepared, counter.by_role, counter.samples


def _prepare_counting(program: CourtroomProgram, train: Sequence[Any]) -> None:
    """``program.prepare(train)`` for its calls: a learner it trains is not fitted (:data:`counting_calls`)."""
    token = counting_calls.set(True)
    try:
        program.prepare(train)
    finally:
        counting_calls.reset(token)


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


def batch_rounds(
    config: RunConfig, labels: Any, positions: Any, examples: Sequence[dspy.Example], train: Sequence[Any] | None
) -> int:
    """The batches ``--batch`` sends: the rounds of preparation, then the deepest case's critical path.

    Every answer pattern runs on a sample of the cases (the deepest wins); an adaptive design runs
    with its early stopping off, as :func:`max_calls` counts it.
    """
    program = build_program(config.framework, labels, positions, knobs=config.knobs, lms=NO_LMS)
    if program.adaptive:
        config = dataclasses.replace(config, knobs=program.most_calls_knobs())
    picked = [examples[i] for i in sample_indices(len(examples), 30)]
    deepest = 0
    token = serial.set(True)
    try:
        for pattern in PATTERNS:
            counter = CallCounter(pattern)
            program = counter.attach(build_program(config.framework, labels, positions, knobs=config.knobs, lms=NO_LMS))
            rounds = [0]
            held = depth.set(rounds)
            try:
                if train is not None:
                    _prepare_counting(program, train)
                prepared, cases = rounds[0], 0
                evaluated = debiased(program, config.debias)
                for ex in picked:
                    rounds[0] = 0
                    try:
                        evaluated(case=ex.case)
                    except Exception:  # noqa: BLE001 - a fake answer that a program rejects: as deep as it went
                        pass
                    cases = max(cases, rounds[0])
            finally:
                depth.reset(held)
            deepest = max(deepest, prepared + cases)
    finally:
        serial.reset(token)
    return deepest


def max_calls(
    config: RunConfig, labels: Any, positions: Any, examples: Sequence[dspy.Example], train: Sequence[Any] | None
) -> tuple[list[int], int, bool, Counter[str], Counter[str]]:
    """Per-example calls (max over answer patterns), training calls, whether exact, calls by role, samples.

    The last: the later samples of one prompt among the calls, by role (:attr:`CallCounter.samples`).
    Every pattern runs on a sample first; only when they disagree (answers decide the path) do
    all patterns run on every example. With an early-stopping knob on (``program.adaptive``) the
    calls are those of the same configuration with the knobs off: the most it can make.
    """
    program = build_program(config.framework, labels, positions, knobs=config.knobs, lms=NO_LMS)
    if program.adaptive:
        full = dataclasses.replace(config, knobs=program.most_calls_knobs())
        calls, prepared, _, by_role, samples = max_calls(full, labels, positions, examples, train)
        return calls, prepared, False, by_role, samples
    picked = [examples[i] for i in sample_indices(len(examples), 30)]
    trial = [_count(config, labels, positions, picked, train, p) for p in PATTERNS]
    exact = all(t[0] == trial[0][0] and t[1] == trial[0][1] for t in trial)
    if exact and len(set(trial[0][0])) == 1:
        # Every sampled case and answer pattern takes the same calls: the structure fixes them.
        per, by_role, samples = trial[0][0][0], trial[0][2], trial[0][3]
        scale = len(examples) / max(len(picked), 1)
        return (
            [per] * len(examples),
            trial[0][1],
            True,
            Counter({r: round(n * scale) for r, n in by_role.items()}),
            Counter({r: round(n * scale) for r, n in samples.items()}),
        )
    runs = [_count(config, labels, positions, examples, train, p) for p in (PATTERNS[:1] if exact else PATTERNS)]
    calls = [max(c) for c in zip(*(r[0] for r in runs), strict=True)]
    biggest = max(runs, key=lambda r: sum(r[0]) + r[1])
    return calls, max(r[1] for r in runs), exact, biggest[2], biggest[3]


NO_LMS = RoleLMs({DEFAULT: FakeLM("dry-run/none", engine=_RecordingEngine(), cache=False)})
