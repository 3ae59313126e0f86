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


def _balanced(n: int, yes_share: float) -> list[bool]:
    """Exactly ``round(n * yes_share)`` True values, spread evenly before the final shuffle."""
    n_yes = round(n * yes_share)
    return [(i * n_yes) // n != ((i + 1) * n_yes) // n for i in range(n)]


NAMES = (
    "Fidel",
    "Crista",
    "Jamey",
    "Millicent",
    "Lorine",
    "Vina",
    "Helene",
    "Kandi",
    "Ka",
    "Christie",
    "Delbert",
    "Leda",
    "Shalonda",
    "Sherrie",
    "Jerry",
    "Raymond",
    "Alejandro",
    "Ryan",
    "Yoland",
    "Inga",
    "Osvaldo",
    "Jaymie",
    "Gwenn",
    "Michael",
    "Rashida",
    "Sima",
    "Tamika",
    "Antwan",
    "Elanor",
    "Maybelle",
    "Conception",
    "Willian",
    "Audrie",
    "Bernita",
    "Kristian",
    "Delfina",
    "Teressa",
    "Phoebe",
    "Alexis",
    "Fletcher",
)


def web_of_lies(n: int, seed: int = 0) -> list[Record]:
    """``n`` BBH ``web_of_lies`` records: five people, each statement about the previous one.

    The last person tells the truth iff the number of "lies" (the first fact included) is even.
    Labels are balanced Yes/No, like BBH's.
    """
    rng = random.Random(f"web_of_lies-{seed}")
    out: list[Record] = []
    for want_yes in _balanced(n, 0.5):
        names = rng.sample(NAMES, 5)
        lies = [rng.random() < 0.5 for _ in range(5)]
        if (sum(lies) % 2 == 0) != want_yes:
            lies[rng.randrange(5)] ^= True
        parts = [f"{names[0]} {'lies' if lies[0] else 'tells the truth'}."]
        parts += [f"{names[i]} says {names[i - 1]} {'lies' if lies[i] else 'tells the truth'}." for i in range(1, 5)]
        question = f"Question: {' '.join(parts)} Does {names[4]} tell the truth?"
        out.append({"input": question, "target": "Yes" if want_yes else "No"})
    rng.shuffle(out)
    return out


NAVIGATE_QUESTION = "If you follow these instructions, do you return to the starting point?"
NAVIGATE_OPTIONS = "\nOptions:\n- Yes\n- No"
_HEADINGS = ((0, 1), (1, 0), (0, -1), (-1, 0))  # forward/north, right/east, south, west: clockwise
_ABSOLUTE = {"forward": (0, 1), "right": (1, 0), "backward": (0, -1), "left": (-1, 0)}


def _steps(k: int) -> str:
    return f"Take {k} step{'s' if k != 1 else ''}"


def _chunks(total: int, rng: random.Random) -> list[int]:
    """Split ``total`` (> 0) into parts of 1..10."""
    parts = []
    while total > 0:
        part = min(total, rng.randint(1, 10))
        parts.append(part)
        total -= part
    return parts


def _face_forward_walk(rng: random.Random, returns: bool) -> list[str]:
    moves = [(rng.choice(list(_ABSOLUTE)), rng.randint(1, 10)) for _ in range(rng.randint(2, 6))]
    x = sum(_ABSOLUTE[d][0] * k for d, k in moves)
    y = sum(_ABSOLUTE[d][1] * k for d, k in moves)
    if returns:
        moves += [("left" if x > 0 else "right", k) for k in _chunks(abs(x), rng)]
        moves += [("backward" if y > 0 else "forward", k) for k in _chunks(abs(y), rng)]
        rng.shuffle(moves)  # facing forward, order does not move the end point
    elif x == 0 and y == 0:
        moves.append((rng.choice(list(_ABSOLUTE)), rng.randint(1, 10)))
    return ["Always face forward."] + [f"{_steps(k)} {d}." for d, k in moves]


def _turn_to(heading: int, target: int) -> list[str]:
    return {0: [], 1: ["Turn right."], 2: ["Turn around."], 3: ["Turn left."]}[(target - heading) % 4]


def _turning_walk(rng: random.Random, returns: bool) -> list[str]:
    out: list[str] = []
    heading, x, y = 0, 0, 0
    for _ in range(rng.randint(2, 6)):
        if rng.random() < 0.4:
            turn = rng.choice(["Turn left.", "Turn right.", "Turn around."])
            heading = (heading + {"Turn left.": 3, "Turn right.": 1, "Turn around.": 2}[turn]) % 4
            out.append(turn)
        k = rng.randint(1, 10)
        x, y = x + _HEADINGS[heading][0] * k, y + _HEADINGS[heading][1] * k
        out.append(f"{_steps(k)}.")
    if returns:
        for amount, target in ((x, 3 if x > 0 else 1), (y, 2 if y > 0 else 0)):
            if amount:
                out += _turn_to(heading, target)
                heading = target
                out += [f"{_steps(k)}." for k in _chunks(abs(amount), rng)]
    elif x == 0 and y == 0:
        out.append(f"{_steps(rng.randint(1, 10))}.")
    return out


def navigate(n: int, seed: int = 0) -> list[Record]:
    """``n`` BBH ``navigate`` records (both BBH styles: "Always face forward" and turns).

    Returning walks are built on purpose, so 40% of the labels are Yes (BBH: about 40%).
    """
    rng = random.Random(f"navigate-{seed}")
    out: list[Record] = []
    for want_yes in _balanced(n, 0.4):
        walk = (_face_forward_walk if rng.random() < 0.5 else _turning_walk)(rng, want_yes)
        out.append(
            {
                "input": f"{NAVIGATE_QUESTION} {' '.join(walk)}{NAVIGATE_OPTIONS}",
                "target": "Yes" if want_yes else "No",
            }
        )
    rng.shuffle(out)
    return out


# -- formal fallacies: monadic syllogisms labelled by a model checker ---------------------------

_THEMES = (
    (
        "a schoolmate of Sondra",
        "a stepsister of Pricilla",
        "a close friend of Fernando",
        "a cousin of Lowell",
        "a great-grandfather of Leroy",
        "an ancestor of Ivan",
    ),
    (
        "a fan of FC Porto",
        "a supporter of Celtic",
        "an expert of Everton",
        "a devotee of AS Roma",
        "an opponent to Real Madrid",
        "a follower of SSC Napoli",
    ),
    (
        "an ingredient of Lip Gloss",
        "an ingredient of Eye Shadow",
        "an ingredient of Brow Powder",
        "an ingredient of Night Cream",
        "an ingredient of Sheer Lip",
        "an ingredient of Body Lotion",
    ),
)
_PEOPLE = ("Lesley", "Carmen", "Ira", "Tonda", "Gustavo", "Marisa", "Cristi", "Jeffrey")
# A sentence is (form, a, b): a and b index the three predicates. Models: which of the 8 cells
# (truth values of P0, P1, P2) have members, and the cell of the named individual.
_CELLS = [(i & 1 == 1, i & 2 == 2, i & 4 == 4) for i in range(8)]
_MODELS = [(occ | (1 << c), c) for occ in range(256) for c in range(8)]
_UNIVERSAL = {
    "all": lambda cell, a, b: not cell[a] or cell[b],
    "no": lambda cell, a, b: not (cell[a] and cell[b]),
    "nec": lambda cell, a, b: not cell[b] or cell[a],
    "all_not_to": lambda cell, a, b: cell[a] or cell[b],  # whoever is not an A is a B
}


def _holds(form: str, a: int, b: int, occupied: int, ind: int) -> bool:
    if form in _UNIVERSAL:
        return all(_UNIVERSAL[form](_CELLS[c], a, b) for c in range(8) if occupied >> c & 1)
    if form == "some":
        return any(_CELLS[c][a] and _CELLS[c][b] for c in range(8) if occupied >> c & 1)
    if form == "is":
        return _CELLS[ind][a]
    if form == "is_not":
        return not _CELLS[ind][a]
    raise ValueError(form)


def _mask(sentence: tuple[str, int, int]) -> int:
    bits = 0
    for i, (occ, ind) in enumerate(_MODELS):
        bits |= _holds(*sentence, occ, ind) << i
    return bits


_MASKS: dict[tuple[str, int, int], int] = {}


def is_valid(premises: list[tuple[str, int, int]], conclusion: tuple[str, int, int]) -> bool:
    """Whether the premises entail the conclusion in every model (exhaustive model check)."""
    for s in (*premises, conclusion):
        if s not in _MASKS:
            _MASKS[s] = _mask(s)
    both = (1 << len(_MODELS)) - 1
    for s in premises:
        both &= _MASKS[s]
    return both & ~_MASKS[conclusion] == 0


def _say(s: tuple[str, int, int], preds: list[str], person: str) -> str:
    form, a, b = s
    p, q = preds[a], preds[b]
    bare = p.split(" ", 1)[1]  # without the article: "every fan of FC Porto"
    return {
        "all": f"every {bare} is {q}",
        "no": f"no {bare} is {q}",
        "nec": f"being {p} is necessary for being {q}",
        "all_not_to": f"whoever is not {p} is {q}",
        "some": f"somebody is {p} and {q}",
        "is": f"{person} is {p}",
        "is_not": f"{person} is not {p}",
    }[form]


def _sentence(rng: random.Random) -> tuple[str, int, int]:
    form = rng.choice(["all", "all", "no", "nec", "all_not_to", "some", "is", "is_not"])
    a, b = rng.sample(range(3), 2)
    return form, a, b


def formal_fallacies(n: int, seed: int = 0) -> list[Record]:
    """``n`` BBH ``formal_fallacies`` records, half valid, labelled by :func:`is_valid`.

    The options keep BBH's trailing space (``- valid ``); the task's text builder strips it.
    """
    rng = random.Random(f"formal_fallacies-{seed}")
    out: list[Record] = []
    for want_valid in _balanced(n, 0.5):
        while True:
            premises = [_sentence(rng) for _ in range(rng.choice([1, 2, 2]))]
            conclusion = _sentence(rng)
            if conclusion not in premises and is_valid(premises, conclusion) == want_valid:
                break
        preds = list(rng.sample(rng.choice(_THEMES), 3))
        person = rng.choice(_PEOPLE)
        openers = ["First premise: ", "To begin with, ", "First of all, "]
        links = ["Second premise: ", "Moreover, ", "Next, "]
        said = [_say(s, preds, person) for s in premises]
        body = " ".join(
            (opener := (openers if i == 0 else links)[rng.randrange(3)])
            + (text[0].upper() if opener.endswith(": ") else text[0])
            + text[1:]
            + "."
            for i, text in enumerate(said)
        )
        closing = rng.choice(["Hence, ", "Therefore, ", "So, necessarily, ", "It follows that "])
        argument = f"Here comes a perfectly valid argument: {body} {closing}{_say(conclusion, preds, person)}."
        text = (
            f'"{argument}"\nIs the argument, given the explicitly stated premises, deductively valid or '
            "invalid?\nOptions:\n- valid \n- invalid"
        )
        out.append({"input": text, "target": "valid" if want_valid else "invalid"})
    rng.shuffle(out)
    return out


GENERATORS: dict[str, Callable[[int, int], list[Record]]] = {
    "boolean_expressions": boolean_expressions,
    "web_of_lies": web_of_lies,
    "navigate": navigate,
    "formal_fallacies": formal_fallacies,
}
