"""Import, in the calling thread, everything a first LM call would import lazily.

DSPy imports LiteLLM on first use, LiteLLM imports many of its own submodules on first use, and
a cache hit unpickles LiteLLM response types. Python 3.11's imports are not safe when several
threads start the same first import at once: the first concurrent calls of a process then fail
with ``partially initialized module 'litellm'``, ``KeyError: 'litellm'`` or ``deadlock detected
by _ModuleLock``. Every command calls :func:`warm_up` from its main thread before it fans out
(building role models does), so no worker thread ever imports anything on the LM path.
"""

from __future__ import annotations

import importlib
import threading

# What DSPy's native engine (hosted models without --api-base) imports on its first request;
# that path cannot be mocked offline, so its modules are named (measured with dspy 3.4).
# httpx's transport (httpcore) is itself imported on the first request since httpx 0.28.
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
_done = False


def warm_up() -> None:
    """Run one mocked LM call in this thread: nothing is sent, the lazy imports are done.

    Cheap after the first call in a process (a flag check).
    """
    global _done
    if _done:
        return
    with _lock:
        if _done:
            return
        _mock_call()
        for name in _NATIVE_PATH:
            try:
                importlib.import_module(name)
            except ImportError:  # another DSPy version: nothing to warm there
                pass
        _done = True


def _mock_call() -> None:
    import dspy
    from dspy.clients._litellm import get_litellm

    from courtroom.models._adapter import ADAPTER

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

    class WarmUp(dspy.Signature):
        """Warm-up."""

        question: str = dspy.InputField()
        answer: str = dspy.OutputField()

    # DSPy's call path (execution, results, the adapter's JSON parsing and repair), on LiteLLM's mock.
    lm = dspy.LM(
        "openai/courtroom-warm-up",
        engine="litellm",
        api_key="sk-warm-up",
        cache=False,
        num_retries=0,
        mock_response='{"answer": "ok"}',
    )
    # No usage tracker: a first call inside a metered scope (a study trial) must not count the mock as sent.
    with dspy.context(lm=lm, adapter=ADAPTER, callbacks=[], usage_tracker=None):
        dspy.Predict(WarmUp)(question="warm-up")
