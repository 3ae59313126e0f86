"""The batch and kill tests' oracle: every boolean_expressions case answered right at ``accuracy``, seeded."""

from __future__ import annotations

from typing import Any

from courtroom.data.tasks import load_splits
from courtroom.testing import oracle_responder


def oracle(accuracy: float = 0.7) -> Any:
    """A FakeServer responder that knows every case's gold label (all splits) and is right at ``accuracy``."""
    _, splits, _ = load_splits("boolean_expressions", seed=0)
    gold = {ex.case: ex.label for examples in splits.values() for ex in examples}
    return oracle_responder(gold, ["True", "False"], accuracy, seed=1)
