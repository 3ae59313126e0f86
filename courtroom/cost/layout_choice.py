"""Which prompt layout costs a case less, classic or cache?

``--prompt-layout auto``, the default (SPEC §18). The cost model is the dry run's: the program
runs on the case in-process once per layout, every role answered by schema filling (free text of
a typical answer's length) through the real adapter (:mod:`courtroom.cost._simulate`'s recording
model: nothing is sent), one call at a time with its wave counted (calls that go out at once
share one), and the prompts it renders are priced by
:func:`courtroom.cost.prompt_cache.replay_dollars`: the provider's cache rule as courtroom sends
them (requests of one wave all miss, but a shared prefix of the cache layout is written once,
then read: :mod:`courtroom.models._prefix`), from the model's minimum cacheable prefix, at
LiteLLM's input, cache-read and cache-write prices, live or batch (Anthropic's 1-hour cache in
batches, its write at 2x). A later sample of one prompt on a model that takes ``n`` sends no
prompt. Answers cost the same in both layouts and are left out.

The cheaper layout wins; a tie, a model with no known price (the embedded model, a fake) or a
mixed panel keeps ``classic`` (DSPy's prompts). The choice is made once per program, model,
case and mode (live or batch), before the case's first request, and the same for every role
whose model it is; it changes no answer's content (:mod:`courtroom.models._layout`).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import threading
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

KEEP = 4096
"""Choices remembered (per program, model, case and mode)."""
TYPICAL_ANSWER = " ".join(["argument"] * 120)
"""Each free-text answer while rendering: about the dry run's typical length
(:data:`courtroom.cost.estimate.TYPICAL_FIELD_TOKENS`), so prompts that quote earlier answers weigh
what they will."""


@dataclass(frozen=True)
class Choice:
    """The layout chosen for one case and model, with the prompt dollars of each layout."""

    layout: str
    classic: float | None
    """Prompt dollars of the case's requests to the model in the classic layout (None: unpriced)."""
    cache: float | None
    """The same in the cache layout."""


_lock = threading.Lock()
_choices: OrderedDict[tuple[Any, ...], Choice] = OrderedDict()
_twins: dict[tuple[int, str], Any] = {}
_record: contextvars.ContextVar[dict[Any, Choice] | None] = contextvars.ContextVar(
    "courtroom_layout_choices", default=None
)


_batch: contextvars.ContextVar[bool] = contextvars.ContextVar("courtroom_layout_batch", default=False)


@contextlib.contextmanager
def batch_prices(on: bool = True) -> Iterator[None]:
    """While inside, choices are made at batch prices (a dry run of ``--batch``; the price bench)."""
    token = _batch.set(on)
    try:
        yield
    finally:
        _batch.reset(token)


@contextlib.contextmanager
def recording() -> Iterator[dict[Any, Choice]]:
    """While inside, each choice asked for in this context is kept in the yielded dict, once per case and model."""
    out: dict[Any, Choice] = {}
    token = _record.set(out)
    try:
        yield out
    finally:
        _record.reset(token)


@functools.lru_cache(maxsize=256)
def priced(model: str) -> bool:
    """Whether LiteLLM's table prices ``model`` (else there is nothing to choose by); asked per request."""
    from courtroom.models.usage import price_per_token

    return price_per_token(model) is not None


def choose(program: Any, lm: Any, case: str, *, batch: bool | None = None) -> Choice:
    """The layout the cost model says is cheaper for ``case`` on ``lm`` in ``program`` (module docstring).

    ``batch``: at batch prices (None: in batch mode, or inside :func:`batch_prices`).
    """
    from courtroom.models import batch as batches
    from courtroom.models._layout import case_key

    model = str(getattr(lm, "model", ""))
    if not priced(model):  # nothing to choose by, and nothing to remember: before the key, asked per request
        return _record_choice(("unpriced", model), UNPRICED)
    if batch is None:
        batch = _batch.get() or batches.current() is not None
    key = (id(program), program.preamble(), model, getattr(lm, "api_base", None), case_key(case), batch)
    with _lock:
        known = _choices.get(key)
    if known is None:
        known = _priced_choice(program, lm, case, batch) if _may_cache(program, model, case) else UNPRICED
        with _lock:
            _choices[key] = known
            while len(_choices) > KEEP:
                _choices.popitem(last=False)
    return _record_choice(key, known)


UNPRICED = Choice("classic", None, None)
"""The choice where there is nothing to weigh: DSPy's prompts."""


def _record_choice(key: tuple[Any, ...], choice: Choice) -> Choice:
    """``choice``, kept in the :func:`recording` context's dict under ``key`` if there is one."""
    record = _record.get()
    if record is not None:
        record[key] = choice
    return choice


ROLE_TEXT = 400
"""Tokens a role's own message adds at most beyond its instructions (its fields and output format)."""


def _may_cache(program: Any, model: str, case: str) -> bool:
    """Whether the cache layout's shared prefix can reach the provider's minimum for ``case``.

    The system message (preamble and case) and a role's own message (its instructions, fields and
    format, at most :data:`ROLE_TEXT` tokens beyond them); below the minimum nothing of it is
    cached, and its longer prompts cannot pay: classic, with nothing rendered.
    """
    from courtroom.cost.prompt_cache import _anthropic_minimum, _tokens

    minimum = _anthropic_minimum(model) if model.startswith("anthropic/") else 1024
    own = max((len(_tokens(p.signature.instructions)) for _, p in program.named_predictors()), default=0)
    return len(_tokens(program.preamble() + case)) + own + ROLE_TEXT >= minimum


def _priced_choice(program: Any, lm: Any, case: str, batch: bool) -> Choice:
    from courtroom.cost.prompt_cache import replay_dollars

    dollars = {}
    for layout in ("classic", "cache"):
        try:
            sent = _render(program, lm, case, layout)
        except Exception:  # noqa: BLE001 - a design the recording model cannot run: DSPy's prompts
            return Choice("classic", None, None)
        dollars[layout] = replay_dollars(sent, batch=batch, prime=_seen_before(sent, case))
    classic, cache = dollars["classic"], dollars["cache"]
    better = "cache" if classic is not None and cache is not None and cache < classic else "classic"
    return Choice(better, classic, cache)


def _seen_before(sent: list[tuple[str, list[dict[str, str]], Any]], case: str) -> list[tuple[str, Any]]:
    """What earlier cases left in the provider's cache.

    The cache layout's preamble (the case's system message without the case), which OpenAI's
    automatic cache serves to every case's requests.
    """
    from courtroom.models._layout import CASE_MARKER

    for model, messages, _ in sent:
        system = (messages[0].get("content") or "") if messages and messages[0].get("role") == "system" else ""
        if CASE_MARKER in system:
            return [(model, [{"role": "system", "content": system.split(CASE_MARKER)[0] + CASE_MARKER}])]
    return []


def _render(program: Any, lm: Any, case: str, layout: str) -> list[tuple[str, list[dict[str, str]], Any]]:
    """The requests ``program`` sends to ``lm``'s model about ``case`` in ``layout``: (model, messages, wave).

    Runs in a fresh context (no meter, no budget, no batch, no sample group of the caller's) on a
    copy of the program whose roles all answer from the recording model, one call at a time; a
    request's wave is its depth on the case's critical path (requests of one wave go out at
    once). Each role keeps its model's name, so only ``lm``'s requests are priced, as it decides
    only its own.
    """
    from courtroom.cost._recording import recording_lms
    from courtroom.models import sampling
    from courtroom.models._concurrency import depth, serial
    from courtroom.models.lms import DEFAULT, model_name

    model = str(getattr(lm, "model", ""))
    names = {role: model_name(program.lms.serving(role)) for role in [DEFAULT, *type(program).roles]}
    names = {role: (n if isinstance(n, str) else "panel") for role, n in names.items()}
    lms, engine = recording_lms(names, layout, TYPICAL_ANSWER)
    twin = _twin(program)
    takes_n = sampling.enabled(lm) and sampling.takes_n(lm)

    def run() -> None:
        import dspy

        serial.set(True)  # one thread: the copy's calls in order
        depth.set([0])
        # DSPy's settings are per thread, not per context: the caller's meter would count these calls.
        with dspy.context(usage_tracker=None), sampling.assumed(dict.fromkeys(names, takes_n)):
            for each in _convened(twin):
                each.lms = lms
            twin(case=case)

    with _lock:  # one copy per program, run by one thread at a time
        contextvars.Context().run(run)
    return [
        (model, messages, wave)
        for (role, messages, index), wave in zip(engine.requests, engine.waves, strict=True)
        if names.get(role, names[DEFAULT]) == model and not (index and takes_n)
    ]


def _convened(program: Any) -> list[Any]:
    """``program`` and the programs it convenes (sub-modules with role models of their own: a settle design's trial)."""
    return [program, *(m for _, m in program.named_sub_modules() if m is not program and hasattr(m, "lms"))]


def _twin(program: Any) -> Any:
    """A copy of ``program`` for rendering (made once per program and instructions)."""
    key = (id(program), program.preamble())
    twin = _twins.get(key)
    if twin is None:
        if len(_twins) > 64:
            _twins.clear()
        twin = _twins[key] = program.deepcopy()
    return twin
