"""Generators: BBH format, exact labels (recomputed independently), balance, determinism."""

from __future__ import annotations

import itertools
import re

import pytest

from courtroom.data.generators import GENERATORS, formal_fallacies, navigate, web_of_lies


def truth_of_last(question: str) -> bool:
    m = re.fullmatch(r"Question: (.*) Does (\w+) tell the truth\?", question)
    assert m, question
    facts, asked = m.group(1), m.group(2)
    truth: dict[str, bool] = {}
    sentences = [s for s in facts.split(". ") if s]
    first = re.fullmatch(r"(\w+) (lies|tells the truth)\.?", sentences[0])
    assert first
    truth[first.group(1)] = first.group(2) == "tells the truth"
    for s in sentences[1:]:
        said = re.fullmatch(r"(\w+) says (\w+) (lies|tells the truth)\.?", s)
        assert said, s
        claim_true = truth[said.group(2)] == (said.group(3) == "tells the truth")
        truth[said.group(1)] = claim_true
    assert len(truth) == 5
    return truth[asked]


def returns_to_start(text: str) -> bool:
    head = "If you follow these instructions, do you return to the starting point? "
    assert text.startswith(head) and text.endswith("\nOptions:\n- Yes\n- No")
    steps = text[len(head) :].split("\n")[0]
    x = y = 0
    dx, dy = 0, 1
    for instr in re.findall(r"[^.]+\.", steps):
        instr = instr.strip()
        if instr == "Always face forward.":
            continue
        if instr == "Turn left.":
            dx, dy = -dy, dx
        elif instr == "Turn right.":
            dx, dy = dy, -dx
        elif instr == "Turn around.":
            dx, dy = -dx, -dy
        else:
            m = re.fullmatch(r"Take (\d+) steps?( forward| backward| left| right)?\.", instr)
            assert m, instr
            k, way = int(m.group(1)), (m.group(2) or "").strip()
            vx, vy = {"": (dx, dy), "forward": (0, 1), "backward": (0, -1), "left": (-1, 0), "right": (1, 0)}[way]
            x, y = x + k * vx, y + k * vy
    return (x, y) == (0, 0)


PATTERNS = [
    ("all", r"every (.+) is (an? .+)"),
    ("no", r"no (.+) is (an? .+)"),
    ("nec", r"being (an? .+) is necessary for being (an? .+)"),
    ("notall", r"whoever is not (an? .+) is (an? .+)"),
    ("some", r"somebody is (an? .+) and (an? .+)"),
    ("isnot", r"(\w+) is not (an? .+)"),
    ("is", r"(\w+) is (an? .+)"),
]


def parse_sentence(s: str) -> tuple[str, str, str]:
    s = s.strip().rstrip(".")
    s = re.sub(
        r"^(First premise: |Second premise: |To begin with, |First of all, |Moreover, |Next, |Hence, |"
        r"Therefore, |So, necessarily, |It follows that )",
        "",
        s,
    )
    s = s[0].lower() + s[1:]
    for form, pat in PATTERNS:
        m = re.fullmatch(pat, s)
        if m:
            return form, *(re.sub(r"^an? ", "", g) for g in m.groups())
    raise AssertionError(s)


def valid_by_small_models(premises: list[tuple[str, str, str]], conclusion: tuple[str, str, str]) -> bool:
    """Search explicit domains of up to 4 individuals (element 0 is the named person) for a countermodel."""
    preds = sorted(
        {p for s in (*premises, conclusion) for p in s[1:] if s[0] not in ("is", "isnot")}
        | {s[2] for s in (*premises, conclusion) if s[0] in ("is", "isnot")}
    )

    def holds(s: tuple[str, str, str], dom: list[dict[str, bool]]) -> bool:
        form, a, b = s
        return {
            "all": lambda: all(not d[a] or d[b] for d in dom),
            "no": lambda: all(not (d[a] and d[b]) for d in dom),
            "nec": lambda: all(not d[b] or d[a] for d in dom),
            "notall": lambda: all(d[a] or d[b] for d in dom),
            "some": lambda: any(d[a] and d[b] for d in dom),
            "is": lambda: dom[0][b],
            "isnot": lambda: not dom[0][b],
        }[form]()

    kinds = [dict(zip(preds, bits, strict=True)) for bits in itertools.product([False, True], repeat=len(preds))]
    for size in range(1, 5):
        for dom in itertools.product(kinds, repeat=size):
            if all(holds(p, list(dom)) for p in premises) and not holds(conclusion, list(dom)):
                return False
    return True


def test_registry_has_the_generators() -> None:
    assert set(GENERATORS) == {"boolean_expressions", "web_of_lies", "navigate", "formal_fallacies"}


@pytest.mark.parametrize("name", sorted(GENERATORS))
def test_generators_are_seeded_and_deterministic(name: str) -> None:
    gen = GENERATORS[name]
    assert gen(40, 3) == gen(40, 3)
    assert gen(40, 3) != gen(40, 4)
    assert len({r["input"] for r in gen(200, 0)}) >= 190  # essentially no duplicates


def test_web_of_lies_labels_and_balance() -> None:
    records = web_of_lies(400, seed=1)
    for r in records:
        assert r["target"] == ("Yes" if truth_of_last(r["input"]) else "No")
    assert sum(r["target"] == "Yes" for r in records) == 200


def test_navigate_labels_and_balance() -> None:
    records = navigate(500, seed=2)
    for r in records:
        assert r["target"] == ("Yes" if returns_to_start(r["input"]) else "No"), r["input"]
    assert sum(r["target"] == "Yes" for r in records) == 200  # 40% Yes, as in BBH
    styles = {"Always face forward." in r["input"] for r in records}
    assert styles == {True, False}  # both BBH styles occur


def test_formal_fallacies_labels_agree_with_an_independent_checker() -> None:
    records = formal_fallacies(120, seed=5)
    assert sum(r["target"] == "valid" for r in records) == 60
    for r in records:
        text = r["input"]
        assert text.endswith("deductively valid or invalid?\nOptions:\n- valid \n- invalid")  # BBH's trailing space
        argument = text.split('"')[1].removeprefix("Here comes a perfectly valid argument: ")
        sentences = [parse_sentence(s) for s in re.split(r"(?<=\.) ", argument)]
        expected = valid_by_small_models(sentences[:-1], sentences[-1])
        assert r["target"] == ("valid" if expected else "invalid"), text
