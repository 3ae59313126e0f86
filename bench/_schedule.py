"""The best schedule of identical decisions under a cap on requests in flight (for critical_path.py).

A decision is a chain of layers: the calls of a layer run together, and a layer starts when the one
before it has finished (JoT: advocates, then the judge). Every call takes one latency. With at most
``slots`` requests in flight, the fewest latencies that ``n`` decisions can take is found here
exactly, by search over the states of the decisions (they are identical, so a state is a sorted
tuple). With unit calls some best schedule never leaves a slot idle while a call is ready (moving
that call earlier breaks no dependency), so each step fills ``min(slots, ready)`` slots; with
``open_cap`` (at most that many decisions started and not finished, as the harness runs
``concurrency`` decisions at once) every number of calls is tried, since opening a decision early
can block another.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

State = tuple[tuple[int, int], ...]
"""Per decision: (its current layer, calls of that layer not yet run); (len(layers), 0) is done."""


def best_steps(
    layers: Sequence[int], n: int, slots: int, open_cap: int | None = None, *, budget: int = 200_000
) -> tuple[int, int]:
    """(lower, upper) bound on the fewest latencies for ``n`` decisions of ``layers`` in ``slots``.

    The two are equal (the exact best) unless the search would visit more than ``budget`` states;
    then ``lower`` is the work or path bound and ``upper`` the best list schedule found.
    """
    shape = tuple(layers)
    bound = max(-(-n * sum(shape) // slots), len(shape))  # all the calls over the slots; one decision's path
    upper = min(_greedy(shape, n, slots, open_cap, ahead) for ahead in (False, True))
    if upper == bound:
        return bound, bound  # a schedule that meets a lower bound is a best one
    memo: dict[State, int] = {}

    def search(state: State) -> int:
        live = [st for st in state if st[0] < len(shape)]
        if not live:
            return 0
        if state in memo:
            return memo[state]
        if len(memo) >= budget:
            raise _TooBig
        done = ((len(shape), 0),) * (len(state) - len(live))
        memo[state] = 1 + min(
            search(tuple(sorted(nxt + done))) for nxt in _moves(shape, slots, open_cap, tuple(sorted(live)))
        )
        return memo[state]

    try:
        best = search(tuple((0, shape[0]) for _ in range(n)))
    except _TooBig:
        return bound, upper
    return best, best


class _TooBig(Exception):
    """The exact search passed its budget of states."""


def _greedy(layers: tuple[int, ...], n: int, slots: int, open_cap: int | None, ahead: bool) -> int:
    """Latencies of a list schedule: open decisions first, the most (``ahead``) or least advanced first."""
    state = [(0, layers[0]) for _ in range(n)]
    steps = 0
    while any(layer < len(layers) for layer, _ in state):
        steps += 1
        free = slots
        opened = sum(1 for s in state if s != (0, layers[0]) and s[0] < len(layers))
        order = sorted(range(n), key=lambda i: (state[i] == (0, layers[0]), -state[i][0] if ahead else state[i][0]))
        for i in order:
            layer, left = state[i]
            if layer >= len(layers) or free == 0:
                continue
            if state[i] == (0, layers[0]):
                if open_cap is not None and opened >= open_cap:
                    continue
                opened += 1
            run = min(left, free)
            free -= run
            left -= run
            if left == 0:
                layer += 1
                left = layers[layer] if layer < len(layers) else 0
            state[i] = (layer, left)
    return steps


def _moves(layers: tuple[int, ...], slots: int, open_cap: int | None, live: State) -> Iterator[State]:
    """Each next state: ``k`` calls run, split over the decisions (identical ones: amounts non-increasing)."""
    ready = sum(left for _, left in live)
    if open_cap is None:
        totals: Sequence[int] = [min(slots, ready)]
    else:
        totals = range(min(slots, ready), 0, -1)

    def fresh(s: tuple[int, int]) -> bool:
        return s == (0, layers[0])

    opened = sum(1 for s in live if not fresh(s))

    def split(i: int, k: int, cap: int, prev: tuple[int, int] | None, limit: int) -> Iterator[list[int]]:
        if i == len(live):
            if k == 0:
                yield []
            return
        s = live[i]
        top = min(s[1], k, limit if s == prev else s[1])
        if fresh(s) and cap <= 0:
            top = 0
        for a in range(top, -1, -1):
            for rest in split(i + 1, k - a, cap - (1 if fresh(s) and a else 0), s, a):
                yield [a, *rest]

    cap = (open_cap - opened) if open_cap is not None else len(live)
    for k in totals:
        for amounts in split(0, k, cap, None, k):
            out = []
            for (layer, left), a in zip(live, amounts, strict=True):
                left -= a
                if left == 0:
                    layer += 1
                    left = layers[layer] if layer < len(layers) else 0
                out.append((layer, left))
            yield tuple(out)
