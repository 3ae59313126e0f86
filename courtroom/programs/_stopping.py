"""Stop when stable: when may a multi-round design end a case's debate before its last round?

One rule, one name, in every design with a verdict after each round (SPEC §18; D3's budgeted stopping
saves about 40% of tokens): with ``stop_when_stable=s`` (0: off, the
papers' behaviour and every paper preset), a case's debate ends **once its standing verdict has
been the same for s consecutive rounds**; it never runs more rounds than configured. The standing
verdict is what the design would answer if it ended there:

* ``jot``: the judge's decision of the round (the trial ends without a further round; the last
  judgment is the verdict);
* ``debate-feedback``: the label of O after the round (the gate's "no new call" rounds included);
* ``courtroom-llm`` with sequential judges: the latest judge's decision (each judge is a round).

``s`` is a whole number >= 2 (every verdict has held for one round), and below the design's rounds
(otherwise nothing could stop early; refused). The prediction carries ``stopped_early`` and the
turn that stopped says why. While it is on, the calls per case depend on the answers: the dry run
prices the maximum (the rule off), and n-sampling asks no opinion ahead of its round.

The designs' older rules stay, each with its own meaning: Courtroom-LLM's ``early_stop`` (parallel
judges in waves until the majority is fixed: exact, never changes a verdict), Debate-Feedback's
``stop_epsilon`` (O moved less than epsilon) and the Khan debate's ``stop_on_concession`` (it has no
verdict before its judge, so no stability to test).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

KNOB = "stop_when_stable"


def check(design: str, s: Any, rounds: int, unit: str = "rounds", knob: str = "n_rounds") -> int:
    """``s`` validated for a design of ``rounds`` rounds (one line naming the fix otherwise)."""
    if isinstance(s, bool) or not isinstance(s, int) or s < 0 or s == 1:
        raise_config(
            f"{design}: {KNOB} must be 0 (off) or a whole number >= 2, got {s!r} "
            "(the number of consecutive rounds the verdict must hold)"
        )
    if s and s >= int(rounds):
        raise_config(
            f"{design}: {KNOB}={s} cannot shorten {rounds} {unit} (the verdict holds for {s} {unit} at the "
            f"earliest after {unit} {s}): use {knob} >= {s + 1} or {KNOB}=0"
        )
    return s


def raise_config(message: str) -> None:
    from courtroom.errors import ConfigError

    raise ConfigError(message)


def held(verdicts: Sequence[str], s: int) -> bool:
    """Whether the last ``s`` standing verdicts are one (``s`` = 0: off, never)."""
    return bool(s) and len(verdicts) >= s and len(set(verdicts[-s:])) == 1


def note(verdicts: Sequence[str], s: int, done: int, total: int, unit: str = "round") -> str:
    """What the turn that stopped says."""
    return f"verdict {verdicts[-1]} held for {s} {unit}s: stopped after {unit} {done} of {total} ({KNOB}={s})"
