"""Offline, seeded generators with exact labels, in the format of the real BBH tasks (SPEC §5)."""

from __future__ import annotations

import random
from collections.abc import Callable

Record = dict[str, str]


def _bool_expr(rng: random.Random, n_tokens: int = 8) -> str:
    """A BBH-style expression of ``n_tokens`` tokens over True/False/not/and/or/parentheses."""
    while True:
        expr = _build(rng, n_tokens)
        if expr is not None and len(expr.split()) == n_tokens:
            return expr


def _build(rng: random.Random, budget: int) -> str | None:
    """Grow an expression with exactly ``budget`` tokens, or None if the budget cannot be met."""
    if budget == 1:
        return rng.choice(["True", "False"])
    options: list[str] = []
    if budget >= 2:
        options.append("not")
    if budget >= 3:
        options.append("binop")
    if budget >= 3:
        options.append("paren")
    choice = rng.choice(options)
    if choice == "not":
        inner = _build(rng, budget - 1)
        return None if inner is None else f"not {inner}"
    if choice == "paren":
        inner = _build(rng, budget - 2)
        return None if inner is None else f"( {inner} )"
    left_budget = rng.randint(1, budget - 2)
    left, right = _build(rng, left_budget), _build(rng, budget - 1 - left_budget)
    if left is None or right is None:
        return None
    return f"{left} {rng.choice(['and', 'or'])} {right}"


def boolean_expressions(n: int, seed: int = 0) -> list[Record]:
    """``n`` BBH ``boolean_expressions`` records: ``input`` = "<expr> is", ``target`` = Python's value.

    Labels alternate True/False before a seeded shuffle, so the split is balanced like BBH's.
    """
    rng = random.Random(f"boolean_expressions-{seed}")
    out: list[Record] = []
    seen: set[str] = set()
    while len(out) < n:
        expr = _bool_expr(rng)
        value = str(bool(eval(expr, {"__builtins__": {}}, {})))  # noqa: S307 - only True/False/not/and/or/()
        if (expr in seen and len(seen) < 5000) or value != ("True", "False")[len(out) % 2]:
            continue
        seen.add(expr)
        out.append({"input": f"{expr} is", "target": value})
    rng.shuffle(out)
    return out


GENERATORS: dict[str, Callable[[int, int], list[Record]]] = {
    "boolean_expressions": boolean_expressions,
}
