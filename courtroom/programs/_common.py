"""Small helpers shared by the frameworks: label lists in prompts, length limits, votes, seeded draws."""

from __future__ import annotations

import hashlib
import random
import threading
from collections import Counter
from collections.abc import Sequence
from typing import Any


def labels_text(labels: Sequence[str]) -> str:
    """The label list as it appears in prompts."""
    return ", ".join(f'"{label}"' for label in labels)


_per_thread = threading.local()


def sentence_splitter() -> Any:
    """This thread's pysbd English segmenter, built on its first use in the thread.

    Per thread, not shared: ``Segmenter.segment`` keeps the text being split on the instance
    (``original_text``), so threads sharing one could match one text's sentences against another's.
    Programs that cut sentences call this up front, so pysbd is imported before any worker thread.

    pysbd: rule-based sentence boundaries (abbreviations such as "e.g." and "U.S.", numbers, list
    items), pure Python, no data to download.
    """
    splitter = getattr(_per_thread, "sentence_splitter", None)
    if splitter is None:
        import pysbd

        splitter = _per_thread.sentence_splitter = pysbd.Segmenter(language="en", clean=False)
    return splitter


def sentences(text: str) -> list[str]:
    """``text`` split into sentences by pysbd (whitespace kept with each sentence)."""
    return [s for s in sentence_splitter().segment(text or "") if s.strip()]


def limit_sentences(text: str, n: int) -> tuple[str, bool]:
    """The first ``n`` sentences of ``text`` (``n <= 0``: no limit) and whether it was cut."""
    text = (text or "").strip()
    if n <= 0:
        return text, False
    parts = sentences(text)
    if len(parts) <= n:
        return text, False
    return "".join(parts[:n]).strip(), True


def limit_words(text: str, n: int) -> tuple[str, bool]:
    """The first ``n`` words of ``text`` (``n <= 0``: no limit) and whether it was cut."""
    words = (text or "").split()
    if n <= 0 or len(words) <= n:
        return (text or "").strip(), False
    return " ".join(words[:n]), True


def majority(votes: Sequence[str], order: Sequence[str], prefer: str | None = None) -> str:
    """The most frequent vote; a tie goes to ``prefer`` if tied, else to the first tied in ``order``."""
    counts = Counter(votes)
    top = max(counts.values())
    tied = [v for v in counts if counts[v] == top]
    if prefer in tied:
        return prefer  # type: ignore[return-value]
    return min(tied, key=lambda v: order.index(v) if v in order else len(order))


def settled_majority(
    votes: Sequence[str], remaining: int, candidates: Sequence[str], order: Sequence[str], prefer: str | None = None
) -> str | None:
    """The :func:`majority` once ``remaining`` more votes among ``candidates`` come in, if they cannot change it.

    None while they still could.

    Exact, not a heuristic: the leader's worst case is every remaining vote going to one rival (a
    split gives each rival fewer), so checking the all-to-one completions suffices.
    """
    outcomes = {majority([*votes, *[c] * remaining], order, prefer) for c in candidates}
    return outcomes.pop() if len(outcomes) == 1 else None


def smallest_wave(
    votes: Sequence[str], remaining: int, candidates: Sequence[str], order: Sequence[str], prefer: str | None = None
) -> int:
    """The fewest further votes after which :func:`settled_majority` could hold (``remaining`` at most)."""
    for j in range(1, remaining):
        if any(
            settled_majority([*votes, *[c] * j], remaining - j, candidates, order, prefer) is not None
            for c in candidates
        ):
            return j
    return remaining


def seeded_rng(seed: int, *parts: str) -> random.Random:
    """A ``random.Random`` fixed by ``seed`` and ``parts`` (e.g. the case text), across processes."""
    digest = hashlib.sha256("|".join([str(seed), *parts]).encode()).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
