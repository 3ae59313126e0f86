"""The fake engines behind :func:`~courtroom.testing.scripted_lm` and :func:`~courtroom.testing.oracle_lm`.

DSPy's engine protocol (``complete(request) -> Response``), answered from a script or by a seeded
draw; :mod:`courtroom.testing` documents them and builds the fakes on them.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from statistics import NormalDist
from typing import Any

from dspy.lm15 import Message, Response, TextPart, Usage

from courtroom.models.lms import current_role
from courtroom.testing._fakes import answer_for_schema, current_rollout

Reply = Mapping[str, Any] | Callable[[str, int, str], Mapping[str, Any]]


def _system_text(request: Any) -> str:
    system = request.system or ""
    return system if isinstance(system, str) else "".join(getattr(p, "text", "") or "" for p in system)


def _prompt_text(request: Any) -> str:
    """The last user message: the actual inputs (demos come before it)."""
    return request.messages[-1].text or ""


def _with_case(prompt: str, system: str) -> str:
    """The prompt as a fake reads it, the case included.

    In the cache layout (:mod:`courtroom.models._layout`) the case closes the system message: it is
    read as the prompt's first field. A classic prompt is returned as it is.
    """
    from courtroom.models._layout import CASE_MARKER

    at = system.rfind(CASE_MARKER)
    return prompt if at < 0 else f"[[ ## case ## ]]\n{system[at + len(CASE_MARKER) :]}\n\n{prompt}"


def as_asked(prompt: str) -> str:
    """The prompt as its role's fields, whatever the layout: what an oracle draws its answer from.

    A cache-layout request opens its user message with the role's name and its own system text
    (``Your role: ...``, ending with the adapter's injection guard) before the role's other fields;
    a classic one has those in its system message. Without them, the prompt :func:`_with_case`
    reads is the same bytes in both layouts, so a layout changes no draw (issue 44: it moved
    Debate-Feedback's verdicts on the oracle).
    """
    from courtroom.models._adapter import INJECTION_GUARD

    head = "[[ ## case ## ]]\n"
    if not prompt.startswith(head):
        return prompt
    at = prompt.find("\n\nYour role: ")
    end = prompt.find(INJECTION_GUARD, at) if at >= 0 else -1
    if end < 0:
        return prompt
    return prompt[:at] + "\n\n" + prompt[end + len(INJECTION_GUARD) :].lstrip("\n")


def _schema(request: Any) -> dict[str, Any]:
    fmt = request.config.response_format or {}
    return dict(fmt.get("schema") or fmt.get("json_schema", {}).get("schema") or {})


def _response(text: str, prompt: str, latency: float, *, prompt_billed: bool = True) -> Response:
    if latency:
        time.sleep(latency)
    inp = len(prompt) // 4 if prompt_billed else 0
    return Response(
        id=None,
        model="fake",
        message=Message.assistant([TextPart(text)]),
        finish_reason="stop",
        usage=Usage(input_tokens=inp, output_tokens=len(text) // 4, total_tokens=inp + len(text) // 4),
    )


class _Engine:
    """DSPy engine protocol: ``complete(request) -> Response``.

    Every call is recorded: ``turns`` lists the calling roles in call order, ``counts`` holds
    the calls per role, ``prompts`` the ``(role, prompt text)`` pairs in the same order, and
    ``systems`` the ``(role, system message)`` each call's model received.
    Calls that a program makes concurrently (the two JoT advocates) are recorded in the order
    they reached the fake. ``requests`` lists ``(role, n)`` per request received: a request for
    ``n`` samples (:meth:`complete_n`) is one entry there and ``n`` calls everywhere else, each
    drawn as a request of its own would be.
    """

    takes_n = True
    """The fakes take ``n`` as OpenAI's chat API does (:mod:`courtroom.models.sampling`)."""

    latency = 0.0

    def __init__(self) -> None:
        self.turns: list[str] = []
        self.counts: Counter[str] = Counter()
        self.prompts: list[tuple[str, str]] = []
        self.systems: list[tuple[str, str]] = []
        self.requests: list[tuple[str, int]] = []
        self._lock = threading.Lock()

    def __deepcopy__(self, memo: dict[int, Any]) -> _Engine:
        # LM.copy() (temperature changes, optimizers) must keep one engine: its lock, turns and draws.
        return self

    def clear(self) -> None:
        """Forget the recorded calls (a scripted role starts again at its first turn)."""
        with self._lock:
            self.turns.clear()
            self.counts.clear()
            self.prompts.clear()
            self.systems.clear()
            self.requests.clear()

    def answer(self, role: str, schema: dict[str, Any], prompt: str, turn: int) -> dict[str, Any]:
        """The reply fields of ``role``'s call number ``turn`` (from 0)."""
        raise NotImplementedError

    def _record(self, role: str, prompt: str, system: str) -> int:
        """Record a call; its turn (from 0) for ``role``."""
        with self._lock:
            turn = self.counts[role]
            self.counts[role] += 1
            self.turns.append(role)
            self.prompts.append((role, prompt))
            self.systems.append((role, system))
        return turn

    def complete(self, request: Any) -> Response:
        return self.complete_n(request, 1)[0]

    def complete_n(self, request: Any, n: int) -> list[Response]:
        """``n`` samples of ``request`` in one request: the prompt billed on the first only."""
        role = current_role() or "default"
        system = _system_text(request)
        prompt = _with_case(_prompt_text(request), system)
        with self._lock:
            self.requests.append((role, n))
        out = []
        for i in range(n):
            turn = self._record(role, prompt, system)
            text = json.dumps(self.answer(role, _schema(request), prompt, turn))
            out.append(_response(text, prompt, self.latency if i == 0 else 0.0, prompt_billed=i == 0))
        return out

    def reply(self, role: str, messages: Sequence[Mapping[str, Any]], schema: dict[str, Any]) -> dict[str, Any]:
        """Answer an OpenAI-style message list as ``role`` (:class:`FakeServer` ``engine=``; recorded the same)."""
        system = "\n".join(str(m.get("content") or "") for m in messages if m.get("role") == "system")
        prompt = _with_case(str(messages[-1].get("content") or "") if messages else "", system)
        return self.answer(role, schema, prompt, self._record(role, prompt, system))

    def stream(self, request: Any) -> Any:
        raise NotImplementedError("fakes do not stream")

    def close(self) -> None:
        pass


class ScriptedEngine(_Engine):
    """Replies from a per-role script, by the role's turn."""

    def __init__(self, script: Mapping[str, Sequence[Reply] | Reply], latency: float = 0.0) -> None:
        super().__init__()
        self.script = dict(script)
        self.latency = latency

    def answer(self, role: str, schema: dict[str, Any], prompt: str, turn: int) -> dict[str, Any]:
        entry = self.script.get(role, self.script.get("default", {}))
        values: Any
        if callable(entry):
            values = entry(role, turn, prompt)
        elif isinstance(entry, Mapping):
            values = entry
        else:
            values = entry[min(turn, len(entry) - 1)] if entry else {}
            if callable(values):
                values = values(role, turn, prompt)
        return answer_for_schema(schema, values, f"{role} turn {turn + 1}")


class OracleEngine(_Engine):
    """Answers each role's label fields correctly with probability ``accuracy[role]``."""

    def __init__(
        self,
        gold: Mapping[str, str] | Callable[[str], str | None],
        labels: Sequence[str],
        accuracy: Mapping[str, float] | float = 0.7,
        seed: int = 0,
        latency: float = 0.0,
        case_accuracy: Mapping[str, Mapping[str, float] | float] | None = None,
        confidence_auroc: float | None = None,
    ) -> None:
        super().__init__()
        if confidence_auroc is not None and not 0.5 <= confidence_auroc < 1:
            raise ValueError(f"confidence_auroc must be in [0.5, 1), got {confidence_auroc}")
        self.separation = None if confidence_auroc is None else math.sqrt(2) * NormalDist().inv_cdf(confidence_auroc)
        self.gold = gold
        self.labels = list(labels)
        self.accuracy = accuracy
        self.case_accuracy = dict(case_accuracy or {})
        self.seed = seed
        self.latency = latency
        self._seen: dict[Any, int] = defaultdict(int)

    def case_for(self, prompt: str) -> str | None:
        """The known case text quoted in ``prompt`` (the longest, if several are)."""
        if callable(self.gold):
            return None
        best = None
        for case in self.gold:
            if case in prompt and (best is None or len(case) > len(best)):
                best = case
        return best

    def gold_for(self, prompt: str) -> str | None:
        """The gold label of the case quoted in ``prompt``."""
        if callable(self.gold):
            return self.gold(prompt)
        case = self.case_for(prompt)
        return None if case is None else self.gold[case]

    def p(self, role: str, case: str | None = None) -> float:
        """Probability that ``role`` answers correctly (on ``case``, if its accuracy is set per case)."""
        own = self.case_accuracy.get(case) if case is not None else None
        if isinstance(own, int | float):
            return float(own)
        if isinstance(own, Mapping) and role in own:
            return float(own[role])
        if isinstance(self.accuracy, Mapping):
            return float(self.accuracy.get(role, self.accuracy.get("default", 0.5)))
        return float(self.accuracy)

    def _stated(self, rng: random.Random, correct: bool) -> float:
        """The probability stated for the chosen label (module docstring, "Stated confidence")."""
        if self.separation is None:
            return 0.9
        z = rng.gauss(self.separation / 2 if correct else -self.separation / 2, 1.0)
        return round(0.5 + 0.5 * NormalDist().cdf(z), 6)

    def _draw(self, role: str, prompt: str) -> str | int:
        """Which draw of ``role`` on ``prompt`` this call is: by its sample (rollout id) where it is known.

        A sample's answer is a function of the prompt, its rollout id and how often that sample was
        asked before (a fresh draw when it is asked again uncached), never of which of several
        concurrent samples reached the fake first: so a run that reads another run's cached samples
        gets the answers it would have drawn itself. Over HTTP (a server's responder) the rollout is
        not sent, and the draws go by how often the prompt was seen, in arrival order.
        """
        rollout = current_rollout()
        key: Any = role + prompt if rollout is None else (role, prompt, rollout)
        with self._lock:
            asked = self._seen[key]
            self._seen[key] += 1
        if rollout is None or rollout == 0:
            return asked
        return rollout if asked == 0 else f"{rollout}.{asked}"

    def answer(self, role: str, schema: dict[str, Any], prompt: str, turn: int) -> dict[str, Any]:
        """The reply fields: each label field right with probability :meth:`p`, a seeded draw (:meth:`_draw`)."""
        prompt = as_asked(prompt)
        digest = hashlib.sha256(f"{self.seed}|{role}|{self._draw(role, prompt)}|{prompt}".encode()).digest()
        rng = random.Random(int.from_bytes(digest[:8], "big"))
        case = self.case_for(prompt)
        gold = self.gold(prompt) if callable(self.gold) else None if case is None else self.gold[case]
        correct = rng.random() < self.p(role, case)
        values: dict[str, Any] = {}
        chosen_index = None
        for name, prop in (schema.get("properties") or {}).items():
            options = prop.get("enum")
            if not options:
                continue
            # By value: an enum narrowed to some labels (Courtroom-LLM's A1/A2) still finds the gold one.
            idx = options.index(gold) if gold in options else None
            if idx is None:
                chosen_index = rng.randrange(len(options))
            elif correct:
                chosen_index = idx
            else:
                chosen_index = rng.choice([i for i in range(len(options)) if i != idx])
            values[name] = options[chosen_index]
        chosen = next((v for v in values.values() if v in self.labels), None)
        top = self._stated(rng, correct)
        for name, prop in (schema.get("properties") or {}).items():
            if prop.get("type") != "number" or name in values:
                continue
            per_label = re.fullmatch(r"p_(\d+)", name)
            if per_label and chosen is not None and 1 <= int(per_label[1]) <= len(self.labels):
                # One probability per label (Debate-Feedback's p_1..p_K): ``top`` on the chosen label.
                share = round((1 - top) / max(len(self.labels) - 1, 1), 6)
                values[name] = top if self.labels[int(per_label[1]) - 1] == chosen else share
                continue
            # A probability for the first (positive) label, agreeing with the chosen answer.
            positive = self.labels.index(gold) == 0 if gold in self.labels else True
            values[name] = top if correct == positive else round(1 - top, 6)
        return answer_for_schema(schema, values, f"oracle {role}: {'correct' if correct else 'wrong'}")
