"""One request for k samples of one prompt (n-sampling): where does a program pay its prompt once?

Self-consistency, one model's parallel votes, Courtroom-LLM's judges of one model, Debate-Feedback's
debaters and settle's panel ask one model the same prompt k times (rollout ids 0..k-1, SPEC §3).
OpenAI's chat API (and each line of its Batch API) takes ``n``: one request returns n samples and
bills the prompt once (SPEC §18). A program asks for such samples with
:meth:`~courtroom.programs._base.CourtroomProgram.ask_samples`, which opens a :func:`group`; the
first sample's request then goes out (live or as one batch line) with ``n`` = the samples the cache
does not hold, and every sample stays a call of its own:

* **cache**: each sample is stored under its own rollout id's key, exactly as k requests would
  store it, so a run with n-sampling and one without share their answers;
* **usage**: each sample is reported as a call; the first carries the prompt tokens and
  ``"requests": 1``, the others only their completion tokens and ``"requests": 0``, so a meter's
  ``sent`` counts requests and its tokens are what the provider bills. A provider reports one
  completion count for all n: it is split by the length of each sample's text;
* **transcript**: the program sees k answers, one per rollout, as before.

Which models take ``n``: an engine with ``complete_n`` (courtroom's ``--api-base`` engine toward an
OpenAI-wire server, and the fakes), unless it says ``takes_n = False`` (Anthropic's Messages API has
no ``n``; llama-cpp-python's server ignores it, so the embedded model is marked so). A server that
answers fewer samples than asked is not an error: the rest go as requests of their own, and that
model is not asked for ``n`` again in the process (:func:`ignores_n`). Elsewhere
(LiteLLM routes, a mixed panel, one sample) the k requests go out as before.
``--no-n-sampling`` (the spec's ``models.n_sampling``, carried by each model a command builds) turns
it off; its default is ``$COURTROOM_N_SAMPLING`` (``0`` turns it off everywhere), else on.

The answers' distribution is unchanged: the n samples are independent draws at the same
temperature, as k requests are (the fakes draw them exactly as they draw k requests).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import json
import logging
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

logger = logging.getLogger(__name__)

N_WIRE = ("openai/", "hosted_vllm/")
"""Model prefixes whose requests are OpenAI chat bodies, which take ``n`` (the dry run prices by name)."""

_group: contextvars.ContextVar[Group | None] = contextvars.ContextVar("courtroom_sample_group", default=None)
_index: contextvars.ContextVar[int | None] = contextvars.ContextVar("courtroom_sample_index", default=None)


def enabled(lm: Any = None, on: bool | None = None) -> bool:
    """Whether n-sampling is on.

    ``on`` if given, else ``lm``'s own ``n_sampling`` (``--n-sampling``), else ``$COURTROOM_N_SAMPLING``
    (default on; ``0``, ``off``, ``no`` or ``false`` turn it off; any other value than those and
    ``1``, ``on``, ``yes``, ``true`` is refused).
    """
    own = on if on is not None else getattr(lm, "n_sampling", None)
    if own is not None:
        return bool(own)
    from courtroom._env import n_sampling

    return n_sampling()


def takes_n(lm: Any) -> bool:
    """Whether one request to ``lm`` can return several samples (see the module docstring)."""
    own = getattr(lm, "takes_n", None)
    if own is not None:
        return bool(own)
    engine = getattr(lm, "_engine_spec", None)
    if callable(getattr(engine, "complete_n", None)):
        return bool(getattr(engine, "takes_n", True))
    # DSPy's native engine toward OpenAI's chat API (openai/NAME, with or without an api_base).
    return engine == "auto" and str(getattr(lm, "model", "")).startswith("openai/") and lm.model_type == "chat"


def name_takes_n(model: str) -> bool:
    """Whether a model named ``model`` takes ``n`` (the dry run's rule, by name: OpenAI-wire models)."""
    return model.startswith(N_WIRE)


_assumed: contextvars.ContextVar[Mapping[str, bool] | None] = contextvars.ContextVar(
    "courtroom_assumed_n", default=None
)


@contextlib.contextmanager
def assumed(by_role: Mapping[str, bool]) -> Iterator[None]:
    """While inside, whether each role's model takes ``n`` is taken from ``by_role`` (a dry run: by name)."""
    token = _assumed.set(dict(by_role))
    try:
        yield
    finally:
        _assumed.reset(token)


def assumed_for(role: str) -> bool | None:
    """What :func:`assumed` says of ``role`` (None: nothing assumed, ask the model)."""
    table = _assumed.get()
    return None if table is None else bool(table.get(role, False))


def names_take_n(models: Mapping[str, str], on: bool | None = None) -> dict[str, bool]:
    """Role -> whether its model, named as a run names it, takes ``n`` (a panel ``a,b`` never does).

    ``on``: the run's ``--n-sampling`` (None: the environment's default, :func:`enabled`).
    """
    return {role: enabled(on=on) and "," not in m and name_takes_n(m) for role, m in models.items()}


def sample_index() -> int | None:
    """Which sample of :meth:`ask_samples` this call is (0: the first), None outside one."""
    return _index.get()


@contextlib.contextmanager
def sample(i: int) -> Iterator[None]:
    """Mark the enclosed call as sample ``i`` (the dry run prices samples after the first without a prompt)."""
    token = _index.set(i)
    try:
        yield
    finally:
        _index.reset(token)


@contextlib.contextmanager
def group(rollouts: Sequence[int | None]) -> Iterator[Group]:
    """While inside, the calls of one prompt under ``rollouts`` go as one request with ``n`` (this thread)."""
    g = Group(list(rollouts))
    token = _group.set(g)
    try:
        yield g
    finally:
        _group.reset(token)


def current_group() -> Group | None:
    """The :func:`group` in force in this context, if any."""
    return _group.get()


def _rollout_call(call: Any, rollout: int | None) -> Any:
    """``call`` (DSPy's ``PreparedCall``) as the same prompt under ``rollout``: its cache key is that rollout's."""
    legacy, kwargs = dict(call.legacy), dict(call.kwargs)
    for d in (legacy, kwargs):
        d.pop("rollout_id", None)
        if rollout:
            d["rollout_id"] = rollout
    return dataclasses.replace(call, legacy=legacy, kwargs=kwargs)


def _key(lm: Any, call: Any) -> str:
    import dspy
    from dspy.clients import execution

    return dspy.cache.cache_key(call.key(lm, False), execution.IGNORED_CACHE_KEYS)


class Group:
    """The samples of one prompt asked together: the first call sends them all, the others collect theirs."""

    def __init__(self, rollouts: list[int | None]) -> None:  # noqa: D107
        self.rollouts = [r or None for r in rollouts]  # rollout 0 is sent without a rollout id
        self.sent = False
        self.base: str | None = None
        self.stash: dict[str, Any] = {}
        self._lock = threading.Lock()

    def serve(self, lm: Any, call: Any, send: Callable[[Callable[[], Any], int], Any]) -> Any:
        """This call's answer if the group answers it, else None (the caller sends it alone).

        ``send(fn, n)`` runs ``fn`` (which returns the ``n`` samples) under courtroom's retries,
        counts and budget.
        """
        if call.request is not None or call.n != 1:
            return None
        own = call.legacy.get("rollout_id")
        base = _key(lm, _rollout_call(call, None))
        key = _key(lm, call)
        with self._lock:
            if self.base is None:
                self.base = base
            if base != self.base:
                return None  # another prompt (not expected inside a group): sent alone
            if key in self.stash:
                return self.stash.pop(key)
            if self.sent or own not in self.rollouts:
                return None  # e.g. the retry of a bad answer, under a rollout of its own
            self.sent = True
        from dspy.clients import execution

        wanted = [own, *(r for r in self.rollouts if r != own)]
        calls = [_rollout_call(call, r) for r in wanted]
        missing = [c for c in calls if execution._cached(lm, c, False) is None]
        route = _route(lm, call) if len(missing) > 1 else None
        if route is None:
            return None  # nothing to share, or no route takes n: this call goes alone (or from the cache)
        results = send(lambda: send_n(lm, call, len(missing), route), len(missing))
        if len(results) < len(missing):
            ignores_n(lm)
        served = None
        for c, result in zip(missing, results, strict=False):
            execution._store(lm, c, result, False)
            if c is calls[0]:
                served = result
            else:
                with self._lock:
                    self.stash[_key(lm, c)] = result
        return served


def ignores_n(lm: Any) -> None:
    """Remember that ``lm`` answered a request with ``n`` with fewer samples: it is not asked with ``n`` again.

    Its later samples go as requests of their own from the start (in parallel, each prompt
    billed), not as one request with ``n`` followed by the rest (SPEC §18).
    """
    engine: Any = getattr(lm, "_engine_spec", None)
    if callable(getattr(engine, "complete_n", None)):
        engine.takes_n = False  # this model's engine, shared by its copies
    lm.__dict__["takes_n"] = False
    logger.info("%s ignores n: its samples of one prompt go as requests of their own", getattr(lm, "model", lm))


def _route(lm: Any, call: Any) -> tuple[Callable[[int], list[Any]], Any, str | None] | None:
    """How to send ``call`` with ``n``: (``n -> responses``, the request, DSPy's provider name), or None."""
    from dspy.clients import execution

    engine: Any = getattr(lm, "_engine_spec", None)
    complete_n = getattr(engine, "complete_n", None)
    if callable(complete_n):
        if not getattr(engine, "takes_n", True):
            return None
        request = execution._canonical(call)
        return (lambda n: complete_n(request, n)), request, None
    if not takes_n(lm):
        return None
    backend, request, provider = execution._engine(lm, call, False)
    target = getattr(backend, "_target", None)
    if request is None or target is None:
        return None  # DSPy chose LiteLLM for this call: k requests
    chat, routed = target(request)
    if type(chat).__name__ != "OpenAIChatLM":
        return None
    return (lambda n: openai_n(chat, routed, n)), request, provider


def openai_n(chat: Any, request: Any, n: int) -> list[Any]:
    """``n`` samples of ``request`` in one live request through lm15's OpenAI chat adapter ``chat``."""
    wire, _ = chat._build(request, stream=False)
    wire = dataclasses.replace(wire, body=json.dumps(with_n(wire.body, n)).encode())
    answer = chat._send(wire)
    if answer.status >= 400:
        raise chat._http_error(answer)
    return [chat.response_from_openai_chat(one, model=request.model) for one in choice_bodies(answer.json())]


def send_n(lm: Any, call: Any, n: int, route: tuple[Callable[[int], list[Any]], Any, str | None]) -> list[Any]:
    """One request for ``n`` samples of ``call``'s prompt: DSPy ``CallResult``s, one per sample (maybe fewer).

    The first result carries the prompt tokens and ``"requests": 1``; the others ``"requests": 0``.
    """
    from dspy.clients import execution
    from dspy.clients.errors import error_boundary

    complete, request, provider = route
    with error_boundary(lm.model, provider=provider, unexpected=True):
        responses = complete(n)
    results = []
    for i, response in enumerate(responses):
        result = execution._result(lm, response, call, provider, request)
        result.usage = {**dict(result.usage or {}), "requests": int(i == 0)}
        results.append(result)
    return results


def usage_of(result: Any) -> dict[str, Any]:
    """The usage one request reported: a ``CallResult``'s, or the sum over :func:`send_n`'s samples.

    A sum keeps the provider's cache counts (``prompt_tokens_details``: the first sample's), so the
    request is priced as billed (:mod:`courtroom.cost.bill`).
    """
    if not isinstance(result, list):
        return dict(getattr(result, "usage", None) or {})
    total: dict[str, Any] = {}
    details: dict[str, int] = {}
    for r in result:
        for k, v in (r.usage or {}).items():
            if isinstance(v, int) and k != "requests":
                total[k] = total.get(k, 0) + v
            elif k == "prompt_tokens_details" and isinstance(v, Mapping):
                for key, value in v.items():
                    if isinstance(value, int):
                        details[key] = details.get(key, 0) + value
    if details:
        total["prompt_tokens_details"] = details
    return total


# -- OpenAI chat bodies with n choices -----------------------------------------------------------------


def with_n(body: bytes | str | Mapping[str, Any], n: int) -> dict[str, Any]:
    """An OpenAI chat request body asking for ``n`` choices."""
    data = dict(json.loads(body) if isinstance(body, bytes | str) else body)
    if n > 1:
        data["n"] = n
    return data


def split_completion(total: int, texts: Sequence[str]) -> list[int]:
    """``total`` completion tokens shared among ``texts`` by their length (the remainder to the first)."""
    if not texts:
        return []
    size = sum(len(t) for t in texts)
    shares = [total * len(t) // size if size else total // len(texts) for t in texts]
    shares[0] += total - sum(shares)
    return shares


def choice_bodies(body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A chat completion with several choices as one body per choice, the usage split as :func:`send_n` says.

    The first body keeps the prompt tokens (and their details: cached tokens); the others get
    none. Each body reads as a single-choice answer, so every parser of one answer reads it.
    """
    choices = sorted(body.get("choices") or [], key=lambda c: int(c.get("index") or 0))
    usage = dict(body.get("usage") or {})
    texts = [str((c.get("message") or {}).get("content") or "") for c in choices]
    completion = split_completion(int(usage.get("completion_tokens") or 0), texts)
    prompt = int(usage.get("prompt_tokens") or 0)
    out = []
    for i, choice in enumerate(choices):
        part = {"completion_tokens": completion[i], "prompt_tokens": prompt if i == 0 else 0}
        part["total_tokens"] = part["completion_tokens"] + part["prompt_tokens"]
        if i == 0 and usage.get("prompt_tokens_details"):
            part["prompt_tokens_details"] = usage["prompt_tokens_details"]
        out.append({**body, "choices": [{**choice, "index": 0}], "usage": part})
    return out
