"""Fake models for tests and offline checks of your own pipelines.

Both fakes are real ``dspy.LM`` objects with a custom engine, so every call goes through the
same adapter, JSON schema, parse step, cache and usage accounting as a real model. They read
the output schema the adapter sends (as a constrained-decoding server would) and answer in it.

* :func:`scripted_lm` replies by role and turn::

      lm = scripted_lm({"judge": [{"decision": "True"}], "lawyer": lambda role, turn, text: {...}})

  A role's script is a list (turn ``i`` gets item ``i``; the last item repeats) or a callable
  ``(role, turn, prompt_text) -> dict``. Fields you leave out are filled: text fields with
  ``"<role> turn <n>"``, label fields with the first allowed value, numbers with 0.5.

* :func:`oracle_lm` answers each role correctly with a probability set per role::

      lm = oracle_lm(gold={"case text": "True", ...}, labels=["True", "False"], accuracy={"judge": 0.7})

  The gold label is found by looking up which known case text appears in the prompt. Draws are
  seeded by the prompt, the sample (the call's ``rollout_id``) and how often that sample was asked,
  so runs are reproducible, repeated identical prompts (several judges) are independent draws,
  and a sample's answer does not depend on which of several concurrent samples came first (a run
  reading another's cached samples gets the answers it would have drawn). Over HTTP
  (:class:`FakeServer`) the rollout id is not sent: draws go by how often the prompt was seen.

  **Case difficulty**: ``case_accuracy={case text: {role: p}}`` (or ``{case text: p}``) sets the
  accuracies for the prompts quoting that case, over ``accuracy``; a role it leaves out falls back
  to ``accuracy``. So "easy" cases can have every role right at 0.95 while "hard" ones have single
  answers near chance and a judge that is right more often after the trial, e.g.
  ``{hard_case: {"panel": 0.55, "judge": 0.8}}``. The fake does not reason: a role's accuracy on a
  case *is* the model of what that role achieves there, so figures measured on it show what a
  design does with such answers, not that a trial helps.

  **Stated confidence**: a probability field (Debate-Feedback's ``p_1..p_K``, a settle panel's
  confidence, a judge's probability) puts 0.9 on the chosen label by default, whether the answer
  is right or not: confidence says nothing. ``confidence_auroc=a`` makes it informative: the
  probability of the chosen label is ``0.5 + 0.5 * Phi(z)``, ``z ~ N(+d/2, 1)`` for a right
  answer and ``N(-d/2, 1)`` for a wrong one, ``d = sqrt(2) * Phi^-1(a)``, so a right answer
  states more confidence than a wrong one with probability ``a`` (the AUROC of confidence for
  correctness; 0.5: none). The probability is monotone in ``z``, not calibrated.

* :func:`learnable_lm` is an oracle whose roles can learn, so a test can see an optimizer work::

      lm = learnable_lm(gold, labels=["True", "False"], accuracy={"judge": 0.55},
                        with_demos={"judge": 0.9}, phrase={"judge": ("weigh both sides", 0.9)})

  **Learnable oracle**: a role answers right with probability ``accuracy[role]``; it is
  ``with_demos[role]`` instead when its own prompt holds demos (few-shot examples, which DSPy's
  adapter renders as user/assistant turns before the case; ``min_demos`` of them, default 1; a
  value below the base models demos that hurt), and the ``p`` of ``phrase[role] = (text, p)`` when
  its own instructions (the system message) contain ``text``, case-insensitive; with both, the
  higher. ``lm.engine_impl.calls`` lists, per call, ``(role, demos in its prompt, phrase held)``.
  Only the calling role's own request counts:
  demos or instructions put on another role's predictor do not help. With neither ``with_demos``
  nor ``phrase`` nothing is learnable (the **no-signal mode**): accuracy is the same whatever the
  prompt holds, so any "gain" an optimizer reports is noise. :func:`proposer_lm` is the
  optimizers' own model (``prompt_lm``) for such tests: it proposes instructions from a list.

Which role is calling comes from :func:`courtroom.models.lms.current_role`, set by the programs. Each
fake records its calls on ``lm.engine_impl``: ``turns`` (the roles, in call order), ``counts``
(calls per role) and ``prompts`` (``(role, prompt text)`` in call order).
:class:`FakeServer` (an OpenAI-compatible HTTP server on loopback, with latency and faults) is
re-exported here too, with :func:`fault_prompts` (faults that hit the same prompts in every run).
``FakeServer(engine=lm.engine_impl)`` answers over HTTP as an oracle (or learnable oracle) does,
the role being the model name as sent: ``--role judge=openai/judge`` calls come as role ``judge``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

# _response and _schema: tests build raw replies with them.
from courtroom.testing._engines import OracleEngine, ScriptedEngine, _response, _schema  # noqa: F401
from courtroom.testing._fake_server import FakeServer, fault_prompts
from courtroom.testing._fakes import FakeLM, answer_for_schema
from courtroom.testing._learnable import LearnableEngine, learnable_lm, proposer_lm

__all__ = [
    "FakeLM",
    "FakeServer",
    "LearnableEngine",
    "OracleEngine",
    "ScriptedEngine",
    "answer_for_schema",
    "fault_prompts",
    "learnable_lm",
    "oracle_lm",
    "oracle_responder",
    "proposer_lm",
    "scripted_lm",
]


def scripted_lm(script: Mapping[str, Any], *, latency: float = 0.0, model: str = "fake/scripted") -> FakeLM:
    """A fake LM that replies from ``script`` by role and turn (see the module docstring)."""
    engine = ScriptedEngine(script, latency=latency)
    lm = FakeLM(model, engine=engine, cache=False)
    lm.engine_impl = engine
    return lm


def oracle_lm(
    gold: Mapping[str, str] | Callable[[str], str | None],
    labels: Sequence[str],
    accuracy: Mapping[str, float] | float = 0.7,
    *,
    seed: int = 0,
    latency: float = 0.0,
    model: str = "fake/oracle",
    cache: bool = False,
    case_accuracy: Mapping[str, Mapping[str, float] | float] | None = None,
    confidence_auroc: float | None = None,
) -> FakeLM:
    """A seeded statistical fake: each role is right with probability ``accuracy[role]``.

    ``case_accuracy`` (case text -> role -> probability) models case difficulty, ``confidence_auroc``
    how much a stated probability says about being right (module docstring).
    """
    engine = OracleEngine(
        gold,
        labels,
        accuracy,
        seed=seed,
        latency=latency,
        case_accuracy=case_accuracy,
        confidence_auroc=confidence_auroc,
    )
    lm = FakeLM(model, engine=engine, cache=cache)
    lm.engine_impl = engine
    return lm


def oracle_responder(
    gold: Mapping[str, str] | Callable[[str], str | None],
    labels: Sequence[str],
    accuracy: float = 0.7,
    *,
    seed: int = 0,
) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    """The oracle's answers for :class:`FakeServer` (``FakeServer(oracle_responder(...))``).

    A server does not know the calling role, so every role is right with probability
    ``accuracy``; draws are seeded by the prompt and how often it was seen, as in :func:`oracle_lm`,
    so the same requests get the same answers whether they arrive live or in a batch.
    """
    engine = OracleEngine(gold, labels, accuracy, seed=seed)

    def respond(prompt: str, schema: dict[str, Any]) -> dict[str, Any]:
        return engine.answer("default", schema, prompt, 0)

    return respond
