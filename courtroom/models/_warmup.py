"""Import, in the calling thread, everything a first LM call would import lazily.

DSPy imports LiteLLM on first use, LiteLLM imports many of its own submodules on first use, and
a cache hit unpickles response types. Python 3.11's imports are not safe when several threads
start the same first import at once: the first concurrent calls of a process then fail with
``partially initialized module 'litellm'``, ``KeyError: 'litellm'`` or ``deadlock detected by
_ModuleLock``. Every command calls :func:`warm_up` from its main thread before it fans out
(building role models does), so no worker thread ever imports anything on the LM path.

Only the paths the models use are warmed: DSPy's own call path always; LiteLLM's (about 3 s of
imports) only for a model whose engine may send through LiteLLM. Models on an ``--api-base``
server use DSPy's native engine (:mod:`courtroom.models._server_engine`) and never need it.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable
from typing import Any

# What DSPy's native engine imports on its first request; that path cannot be mocked offline, so
# its modules are named (measured with dspy 3.4). httpx's transport (httpcore) is itself imported
# on the first request since httpx 0.28.
_NATIVE_PATH = (
    "difflib",
    "dspy.clients.costs",
    "dspy._vendor.lm15.cloud.hosts",
    "dspy._vendor.lm15.cloud.sigv4",
    "httpcore",
    "httpcore._backends.sync",
    "httpcore._backends.auto",
    "httpcore._backends.anyio",
    "httpcore._backends.mock",
)

_lock = threading.Lock()
_done: set[str] = set()
"""The paths warmed in this process: ``dspy`` and ``litellm``."""


def uses_litellm(lm: Any) -> bool:
    """Whether ``lm`` may send through LiteLLM: ``engine="litellm"``, or ``"auto"`` (DSPy falls back to it)."""
    spec = getattr(lm, "_engine_spec", None)
    return isinstance(spec, str) and spec != "lm15"


def warm_up(models: Iterable[Any] = ()) -> None:
    """Run mocked LM calls in this thread for the paths ``models`` use: nothing is sent.

    Cheap after the first call in a process (a set check). Models served by courtroom's server
    engine also build their connection route here, so a worker thread starts with it built.
    """
    models = list(models)
    for lm in models:
        prepare = getattr(getattr(lm, "_engine_spec", None), "prepare", None)
        if callable(prepare):
            prepare()
    paths = {"dspy"} | ({"litellm"} if any(uses_litellm(lm) for lm in models) else set())
    if paths <= _done:
        return
    with _lock:
        if "dspy" not in _done:
            _warm_dspy()
            _done.add("dspy")
        if "litellm" in paths and "litellm" not in _done:
            _warm_litellm()
            _done.add("litellm")


class _MockEngine:
    """A DSPy engine that answers ``{"answer": "ok"}`` without a connection."""

    def complete(self, request: Any) -> Any:
        from dspy.lm15 import Message, Response, TextPart, Usage

        return Response(
            id=None,
            model="courtroom-warm-up",
            message=Message.assistant([TextPart('{"answer": "ok"}')]),
            finish_reason="stop",
            usage=Usage(input_tokens=0, output_tokens=0, total_tokens=0),
        )

    def stream(self, request: Any) -> Any:
        from dspy.lm15 import response_to_events

        return response_to_events(self.complete(request))

    def close(self) -> None:
        pass


def _predict_once(lm: Any) -> None:
    import dspy

    from courtroom.models._adapter import ADAPTER

    class WarmUp(dspy.Signature):
        """Warm-up."""

        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    # No usage tracker: a first call inside a metered scope (a study trial) must not count the mock as sent.
    with dspy.context(lm=lm, adapter=ADAPTER, callbacks=[], usage_tracker=None):
        dspy.Predict(WarmUp)(question="warm-up")


def _warm_dspy() -> None:
    """DSPy's call path (execution, results, the adapter's JSON parsing) on a mock engine, and lm15's routing."""
    import dspy

    from courtroom.models._server_engine import ServerEngine

    _predict_once(dspy.LM("openai/courtroom-warm-up", engine=_MockEngine(), cache=False, num_retries=0))
    # The server engine's route (provider, adapter, HTTP client), built toward a port nothing listens on.
    engine = ServerEngine("http://127.0.0.1:9/v1", "sk-warm-up", 1.0)
    engine.prepare()
    engine.close()
    for name in _NATIVE_PATH:
        try:
            importlib.import_module(name)
        except ImportError:  # another DSPy version: nothing to warm there
            pass


def _warm_litellm() -> None:
    import dspy
    from dspy.clients._litellm import get_litellm

    litellm = get_litellm(feature="courtroom warm-up")
    # LiteLLM's own lazy submodules (response types, cost, logging) load on a real call path;
    # ``mock_response`` walks that path and returns before any connection is made.
    litellm.completion(
        model="openai/courtroom-warm-up",
        messages=[{"role": "user", "content": "warm-up"}],
        mock_response='{"answer": "ok"}',
        api_key="sk-warm-up",
    )

    # What a real request builds before it connects: the OpenAI client (its resources load on
    # first access) over httpx/httpcore, and LiteLLM's service logger for request timing.
    import openai
    from litellm.litellm_core_utils.logging_utils import _get_service_logger

    openai.OpenAI(api_key="sk-warm-up", base_url="http://127.0.0.1:9/v1").chat.completions.create  # noqa: B018
    _get_service_logger()

    # DSPy's call path through LiteLLM (its engine and results), on LiteLLM's mock.
    _predict_once(
        dspy.LM(
            "openai/courtroom-warm-up",
            engine="litellm",
            api_key="sk-warm-up",
            cache=False,
            num_retries=0,
            mock_response='{"answer": "ok"}',
        )
    )
