"""The learnable oracle: a role's accuracy rises with demos or an instruction phrase in its own prompt.

An :class:`~courtroom.testing.OracleEngine` whose per-role accuracy depends on what that role's
request holds: few-shot demos (DSPy's adapters render them as user/assistant message pairs before
the last user message) and an instruction phrase (in the system message, where the signature's
instructions go). Only the calling role's own request counts, so demos or instructions that an
optimizer puts on another role's predictor change nothing. With neither ``with_demos`` nor
``phrase`` nothing is learnable (the no-signal mode): accuracy is ``accuracy[role]`` whatever the
prompt holds.

The draw is made as the oracle makes it (seeded by the last user message and how often that role
saw it), so a prompt's demos and instructions change how likely the answer is right, never which
random number decides it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from courtroom.testing._engines import OracleEngine, _response, _schema
from courtroom.testing._fakes import FakeLM, answer_for_schema


def demos_in(messages: Sequence[Any]) -> int:
    """How many demos a chat request holds: the assistant turns before its last user message."""
    roles = [_role(m) for m in messages]
    last_user = max((i for i, r in enumerate(roles) if r == "user"), default=-1)
    return sum(1 for r in roles[:last_user] if r == "assistant")


def _role(message: Any) -> str:
    if isinstance(message, Mapping):
        return str(message.get("role", ""))
    return str(getattr(message, "role", ""))


class LearnableEngine(OracleEngine):
    """An oracle whose accuracy per role rises with demos or an instruction phrase in that role's prompt."""

    def __init__(
        self,
        gold: Mapping[str, str] | Callable[[str], str | None],
        labels: Sequence[str],
        accuracy: Mapping[str, float] | float = 0.5,
        *,
        with_demos: Mapping[str, float] | None = None,
        phrase: Mapping[str, tuple[str, float]] | None = None,
        min_demos: int = 1,
        seed: int = 0,
        latency: float = 0.0,
    ) -> None:
        super().__init__(gold, labels, accuracy, seed=seed, latency=latency)
        _check("with_demos", with_demos or {})
        _check("phrase", {r: p for r, (_, p) in (phrase or {}).items()})
        if min_demos < 1:
            raise ValueError(f"min_demos must be >= 1, got {min_demos}")
        self.with_demos = dict(with_demos or {})
        self.phrase = {r: (str(t), float(p)) for r, (t, p) in (phrase or {}).items()}
        self.min_demos = min_demos
        # What the request being answered holds, per thread: calls run concurrently.
        self._request = threading.local()
        self.calls: list[tuple[str, int, bool]] = []
        """Per call: (role, demos in its prompt, whether its instructions held its phrase)."""

    def learned(self, role: str, base: float, system: str, n_demos: int) -> float:
        """``role``'s accuracy for a request with ``system`` message and ``n_demos`` demos.

        What the request holds sets the accuracy (demos may also hurt: ``with_demos`` below the
        base); with both demos and the phrase, the higher of the two applies.
        """
        has_phrase = role in self.phrase and self.phrase[role][0].lower() in system.lower()
        with self._lock:
            self.calls.append((role, n_demos, has_phrase))
        held = [self.phrase[role][1]] if has_phrase else []
        if role in self.with_demos and n_demos >= self.min_demos:
            held.append(self.with_demos[role])
        return max(held) if held else base

    def clear(self) -> None:
        """Forget the recorded calls."""
        super().clear()
        with self._lock:
            self.calls.clear()

    def complete_n(self, request: Any, n: int) -> Any:
        self._request.context = (str(request.system or ""), demos_in(request.messages))
        try:
            return super().complete_n(request, n)
        finally:
            self._request.context = None

    def reply(self, role: str, messages: Sequence[Mapping[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
        system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
        self._request.context = (system, demos_in(messages))
        try:
            return super().reply(role, messages, schema)
        finally:
            self._request.context = None

    def p(self, role: str, case: str | None = None) -> float:
        """Probability that ``role`` answers correctly, given what its current request holds."""
        base = super().p(role, case)
        context = getattr(self._request, "context", None)
        return base if context is None else self.learned(role, base, *context)


def _check(name: str, values: Mapping[str, float]) -> None:
    for role, p in values.items():
        if not 0 <= p <= 1:
            raise ValueError(f"{name}[{role!r}] must be a probability in [0, 1], got {p}")


def learnable_lm(
    gold: Mapping[str, str] | Callable[[str], str | None],
    labels: Sequence[str],
    accuracy: Mapping[str, float] | float = 0.5,
    *,
    with_demos: Mapping[str, float] | None = None,
    phrase: Mapping[str, tuple[str, float]] | None = None,
    min_demos: int = 1,
    seed: int = 0,
    latency: float = 0.0,
    model: str = "fake/learnable",
    cache: bool = False,
) -> FakeLM:
    """An oracle fake whose roles can learn: see :mod:`courtroom.testing` ("Learnable oracle").

    ``accuracy`` is each role's accuracy with nothing learned (as :func:`oracle_lm`'s).
    ``with_demos[role]`` is that role's accuracy when its own prompt holds at least ``min_demos``
    demos; ``phrase[role] = (text, p)`` its accuracy when its own instructions contain ``text``
    (case-insensitive). With both, the higher applies. Without either, nothing is learnable.
    """
    engine = LearnableEngine(
        gold,
        labels,
        accuracy,
        with_demos=with_demos,
        phrase=phrase,
        min_demos=min_demos,
        seed=seed,
        latency=latency,
    )
    lm = FakeLM(model, engine=engine, cache=cache)
    lm.engine_impl = engine
    return lm


class ProposerEngine:
    """The optimizers' own model: each instruction it is asked for is the next of a list.

    A request whose answer has a field named like ``*instruction*`` (MIPROv2's and COPRO's
    proposals), or has no schema at all (GEPA's reflection, read as raw text), gets
    ``instructions[i % len]`` for proposal ``i``; other requests (MIPROv2's dataset and program
    summaries) get a neutral note and use up no proposal. ``calls``, ``proposals`` and ``prompts``
    (every message of each request, joined) record what it was asked.
    """

    NOTE = "A decision task over labelled cases."

    def __init__(self, instructions: Sequence[str]) -> None:
        if not instructions:
            raise ValueError("proposer_lm needs at least one instruction to propose")
        self.instructions = list(instructions)
        self.calls = 0
        self.proposals = 0
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> ProposerEngine:
        return self

    def complete(self, request: Any) -> Any:
        schema = _schema(request)
        fields = schema.get("properties") or {}
        wanted = [n for n, p in fields.items() if "instruction" in n and p.get("type") == "string"]
        with self._lock:
            self.calls += 1
            self.prompts.append(" ".join(m.text or "" for m in request.messages))
            proposal = None
            if wanted or not fields:
                proposal = self.instructions[self.proposals % len(self.instructions)]
                self.proposals += 1
        if not fields:
            # No schema (GEPA's reflection, or a proposer's own JSON adapter): the fields DSPy's proposers read.
            reply: dict[str, Any] = dict.fromkeys(
                ("proposed_instruction", "new_instruction", "improved_instruction"), proposal
            )
        else:
            texts = {n: proposal if n in wanted else self.NOTE for n, p in fields.items() if p.get("type") == "string"}
            reply = answer_for_schema(schema, texts, self.NOTE)
        return _response(json.dumps(reply), "", 0.0)

    def stream(self, request: Any) -> Any:
        raise NotImplementedError("fakes do not stream")

    def close(self) -> None:
        pass


def proposer_lm(instructions: Sequence[str], *, model: str = "fake/proposer") -> FakeLM:
    """A fake ``prompt_lm`` for instruction optimizers: proposes ``instructions`` in turn (:class:`ProposerEngine`)."""
    engine = ProposerEngine(instructions)
    lm = FakeLM(model, engine=engine, cache=False)
    lm.engine_impl = engine
    return lm
