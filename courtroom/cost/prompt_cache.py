"""How much of a run's prompts would a provider's prompt cache serve, before anything is sent?

The dry run renders the real prompts of a sample of cases (:mod:`courtroom.cost.estimate`); this
module replays them, in order, against each provider's cache rule (SPEC §18):

* OpenAI-wire models (``openai/``, ``hosted_vllm/``): the automatic cache serves the longest prefix
  of a request, in 128-token blocks and from 1,024 tokens, that an earlier request sent;
* ``anthropic/`` models: only up to the ``cache_control`` breakpoints courtroom sends in the cache
  layout (:mod:`courtroom.models._layout`: the end of the system message, and the end of the
  role's own message), each prefix written at its first request and read by later ones, from the
  model's minimum prefix (LiteLLM's ``prompt_cache_min_tokens``, else 1,024): :func:`anthropic_hit`;
  in the classic layout nothing;
* other models: nothing.

Samples that share a request (n-sampling) are not replayed: they send no prompt. Tokens are
cl100k_base (LiteLLM's bundled copy): a share, applied to the dry run's own prompt tokens.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

OPENAI_MIN, OPENAI_BLOCK = 1024, 128


def openai_hit(tokens: Sequence[int], seen: set[bytes]) -> int:
    """Prompt tokens OpenAI's automatic cache serves for ``tokens`` (``seen``: earlier requests' blocks).

    The longest 128-token-block prefix, from 1,024 tokens, that an earlier request sent; ``seen``
    is updated with this request's blocks.
    """
    digest, ends, hit = hashlib.sha256(), [], 0
    for end in range(OPENAI_BLOCK, len(tokens) + 1, OPENAI_BLOCK):
        digest.update(b"".join(t.to_bytes(4, "little") for t in tokens[end - OPENAI_BLOCK : end]))
        key = digest.copy().digest()
        ends.append(key)
        if end >= OPENAI_MIN and key in seen:
            hit = end
    seen.update(ends)
    return hit


def anthropic_hit(prefixes: Sequence[tuple[str, int]], seen: Any, minimum: int) -> tuple[int, int]:
    """(tokens read, tokens written) by Anthropic's cache for one request with ``cache_control`` breakpoints.

    ``prefixes``: (the text up to a breakpoint, its tokens), one per breakpoint, shortest first;
    ``seen``: the prefixes earlier requests cached (updated). A prefix below ``minimum`` tokens is
    not cached. The longest prefix an earlier request cached is read; the rest of the longest
    cacheable prefix is written (at the write price); what follows the breakpoints is plain input.
    """
    cacheable = [(text, size) for text, size in prefixes if size >= minimum]
    read = max((size for text, size in cacheable if text in seen), default=0)
    top = max((size for _, size in cacheable), default=0)
    seen.update(text for text, _ in cacheable)
    return read, max(0, top - read)


def marked_prefixes(messages: Sequence[Mapping[str, str]]) -> list[str]:
    """The texts up to each breakpoint the cache layout puts in ``messages`` (:mod:`courtroom.models._layout`).

    The end of the system message (the preamble and the case: every role's requests share it) and,
    when the role's own text opens the conversation as a message of its own, the end of that
    message (a role's requests share it: cached where the case alone is under the model's minimum).
    """
    system = "".join(m.get("content", "") for m in messages if m.get("role") == "system")
    rest = [m.get("content", "") for m in messages if m.get("role") != "system"]
    return [system, system + "\0" + rest[0]] if len(rest) > 1 else [system]


def _tokens(text: str) -> list[int]:
    from litellm.litellm_core_utils.default_encoding import encoding

    return list(encoding.encode(text, disallowed_special=()))


def _anthropic_minimum(model: str) -> int:
    import litellm

    for key in (model, model.split("/", 1)[-1]):
        info = litellm.model_cost.get(key) or {}
        if info.get("prompt_cache_min_tokens"):
            return int(info["prompt_cache_min_tokens"])
    return OPENAI_MIN


def cached_shares(requests: Iterable[tuple[str, Sequence[Mapping[str, str]]]]) -> dict[str, tuple[float, float]]:
    """Model -> (share of its prompt tokens read from the cache, share written to it).

    ``requests``: (model, messages) in the order sent; each request's layout is read from its
    messages (:func:`is_cache_layout`: under ``auto`` it is chosen per case).
    """
    seen_blocks: dict[str, set[bytes]] = {}
    seen_prefixes: dict[str, set[str]] = {}
    totals: dict[str, list[int]] = {}
    for model, messages in requests:
        toks = _tokens(json.dumps(list(messages)))
        row = totals.setdefault(model, [0, 0, 0])  # tokens, read, written
        row[0] += len(toks)
        if model.startswith(("openai/", "hosted_vllm/")):
            row[1] += openai_hit(toks, seen_blocks.setdefault(model, set()))
        elif model.startswith("anthropic/") and is_cache_layout(messages):
            prefixes = [(p, len(_tokens(p.replace("\0", "")))) for p in marked_prefixes(messages)]
            read, written = anthropic_hit(prefixes, seen_prefixes.setdefault(model, set()), _anthropic_minimum(model))
            row[1] += read
            row[2] += written
    return {m: (r[1] / r[0], r[2] / r[0]) if r[0] else (0.0, 0.0) for m, r in totals.items()}


def prompt_prices(model: str, *, batch: bool = False, prices: Any = None) -> tuple[float, float, float] | None:
    """(input, cache read, cache write) dollars per prompt token of ``model``, live or batch; None: unpriced.

    LiteLLM's table (``prices`` overrides the input price, then nothing is discounted). In batch
    mode an ``anthropic/`` write is the 1-hour cache's (:func:`courtroom.models.usage.cache_price_per_token`).
    """
    from courtroom.models.usage import batch_price_per_token, cache_price_per_token, price_per_token

    table = {k: (float(v[0]), float(v[1])) for k, v in (prices or {}).items()}
    plain = batch_price_per_token(model, table) if batch else price_per_token(model, table)
    if plain is None:
        return None
    read, write = cache_price_per_token(model, table, batch=batch) or (plain[0], plain[0])
    return plain[0], read, write


def is_cache_layout(messages: Sequence[Mapping[str, str]]) -> bool:
    """Whether ``messages`` were laid out by the cache layout (its system message opens the case)."""
    from courtroom.models._layout import CASE_MARKER

    return any(m.get("role") == "system" and CASE_MARKER in (m.get("content") or "") for m in messages)


class _Wave:
    """A cache as the requests of one wave see it: what earlier waves wrote.

    A provider's cache serves a prefix only once a first request with it was processed: the
    wave's own writes land when it ends.
    """

    def __init__(self, seen: set[Any]) -> None:
        self.seen: set[Any] = seen
        self.pending: set[Any] = set()

    def __contains__(self, key: object) -> bool:
        return key in self.seen

    def update(self, keys: Iterable[Any]) -> None:
        self.pending.update(keys)


def replay_dollars(
    requests: Iterable[Sequence[Any]],
    *,
    batch: bool = False,
    prices: Any = None,
    prime: Iterable[tuple[str, Sequence[Mapping[str, str]]]] = (),
) -> float | None:
    """Prompt dollars of ``requests`` ((model, messages) or (model, messages, wave), in the order sent).

    Each provider's cache as documented: OpenAI-wire models' automatic cache (:func:`openai_hit`),
    ``anthropic/`` models' breakpoints in the cache layout (:func:`anthropic_hit`); a prefix is
    served only to a later wave than the one that wrote it (requests of one wave go out at once:
    they all miss), except in the cache layout, whose requests sharing a new prefix courtroom
    sends first one, then the rest (:mod:`courtroom.models._prefix`). Without waves every request
    is a wave of its own. ``prime``: requests sent before (their prefixes cached, not priced).
    Priced by :func:`prompt_prices`; None when a model has no known price.
    """
    blocks: dict[str, set[bytes]] = {}
    marks: dict[str, set[str]] = {}
    for model, messages in prime:
        openai_hit(_tokens(json.dumps(list(messages))), blocks.setdefault(model, set()))
    total, wave = 0.0, object()
    open_waves: list[Any] = []
    for request in requests:
        model, messages = request[0], request[1]
        now = request[2] if len(request) > 2 else object()
        if now != wave:
            for view in open_waves:
                view.seen.update(view.pending)
            wave, open_waves = now, []
        price = prompt_prices(model, batch=batch, prices=prices)
        if price is None:
            return None
        toks = _tokens(json.dumps(list(messages)))
        ordered = is_cache_layout(messages)  # one write, then the reads (the prefix gate)
        read = written = 0
        if model.startswith(("openai/", "hosted_vllm/")):
            seen: Any = blocks.setdefault(model, set())
            if not ordered:
                seen = _Wave(seen)
                open_waves.append(seen)
            read = openai_hit(toks, seen)
        elif model.startswith("anthropic/") and ordered:
            prefixes = [(p, len(_tokens(p.replace("\0", "")))) for p in marked_prefixes(messages)]
            read, written = anthropic_hit(prefixes, marks.setdefault(model, set()), _anthropic_minimum(model))
        total += (len(toks) - read - written) * price[0] + read * price[1] + written * price[2]
    return total


def cache_dollars(model: str, read: float, written: float, prices: Any, *, batch: bool = False) -> float:
    """Dollars the cache saves on ``read`` and ``written`` prompt tokens of ``model`` (a write may cost more).

    Priced by the one path from usage to dollars (:func:`courtroom.cost.bill.dollars`).
    """
    from courtroom.cost.bill import dollars

    table = {k: tuple(float(x) for x in v) for k, v in (prices or {}).items()}
    plain = dollars(model, {"prompt_tokens": read + written}, table, batch=batch)
    cached = dollars(
        model,
        {"prompt_tokens": read + written, "cache_read_tokens": read, "cache_write_tokens": written},
        table,
        batch=batch,
    )
    return 0.0 if plain is None or cached is None else plain - cached
