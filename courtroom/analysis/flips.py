"""What the trial changed: from the first answers to the verdict, as a flip matrix (SPEC §13).

"Debate or Vote" (NeurIPS 2025) models debate as a martingale over the agents' beliefs: on
average it should not move them. The direct test is to count, case by case, how the verdict
relates to the answers given before any argument was heard:

* ``wrong_to_right`` and ``right_to_wrong``: the first answers' majority was wrong (right) and
  the verdict is right (wrong);
* ``kept_right`` and ``kept_wrong``: the verdict is the same kind as the first majority;
* ``followed_majority``: the verdict is the first answers' majority label (a tie goes to the
  first answer, as the vote baselines break it).

The first answers of each framework, from its run records:

=================  =========================================================================
settle             the panel's votes, on the cases tried (a settled verdict *is* the panel's)
jot                the judge's first judgment (a position, read as its label)
debate-feedback    the judge's initial prediction O_0 (``initial_label``)
courtroom-llm      the preliminary hearing's A1 (``ph_label``)
khan-debate        the answers the debaters hold after round 1 (``stop_on_concession``), else,
                   on multi-class tasks, the classifier's most likely label; binary debates
                   without concessions have none
reflexion          the solver's first attempt
=================  =========================================================================

Rates are shares of the cases with first answers (``n``); failed cases have none and are
counted in ``skipped``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

Row = Mapping[str, Any]
KEYS = ("wrong_to_right", "right_to_wrong", "kept_right", "kept_wrong")


def _jot(row: Row, labels: Sequence[str], positions: Sequence[str]) -> list[str] | None:
    decisions = (row.get("fields") or {}).get("judge_decisions") or []
    if not decisions:
        return None
    first = decisions[0]
    return [labels[list(positions).index(first)] if first in positions else first]


def _field(name: str) -> Callable[[Row, Sequence[str], Sequence[str]], list[str] | None]:
    def read(row: Row, labels: Sequence[str], positions: Sequence[str]) -> list[str] | None:
        value = (row.get("fields") or {}).get(name)
        return None if value is None else [str(value)]

    return read


def _khan(row: Row, labels: Sequence[str], positions: Sequence[str]) -> list[str] | None:
    turns = row.get("transcript") or []
    held = [
        str(t["extra"]["now_holds"])
        for t in turns
        if str(t.get("role", "")).startswith("debater")
        and t.get("round") == 1
        and "now_holds" in (t.get("extra") or {})
    ]
    if held:
        return held
    top = [t.get("decision") for t in turns if t.get("role") == "classifier" and t.get("decision") is not None]
    return [str(top[0])] if top else None


def _settle(row: Row, labels: Sequence[str], positions: Sequence[str]) -> list[str] | None:
    fields = row.get("fields") or {}
    if fields.get("decided_by") != "trial":
        return None
    return [str(v) for v in fields.get("panel_votes") or []] or None


def _reflexion(row: Row, labels: Sequence[str], positions: Sequence[str]) -> list[str] | None:
    attempts = (row.get("fields") or {}).get("attempts") or []
    return [str(attempts[0])] if attempts else None


FIRST_ANSWERS: dict[str, tuple[str, Callable[[Row, Sequence[str], Sequence[str]], list[str] | None]]] = {
    "settle": ("the panel's votes (tried cases)", _settle),
    "jot": ("the judge's first judgment", _jot),
    "debate-feedback": ("the initial prediction O_0", _field("initial_label")),
    "courtroom-llm": ("the preliminary hearing (A1)", _field("ph_label")),
    "khan-debate": ("the debaters' answers after round 1", _khan),
    "reflexion": ("the first attempt", _reflexion),
}
"""Framework -> (what its first answers are, how to read them from a run record)."""


def _majority(answers: Sequence[str]) -> str:
    counts = Counter(answers)
    top = max(counts.values())
    return next(a for a in answers if counts[a] == top)


def flip_matrix(
    rows: Iterable[Any],
    framework: str,
    labels: Sequence[str],
    positions: Sequence[str] | None = None,
) -> dict[str, Any] | None:
    """The flip matrix of ``framework``'s run records or results (None: it has no first answers).

    Returns counts (:data:`KEYS`, ``followed_majority``), their rates, ``n`` (cases with first
    answers), ``skipped`` and ``first_answers`` (what they are). A settle design also reports
    ``settled`` (cases the panel decided, not in ``n``).
    """
    if framework not in FIRST_ANSWERS:
        return None
    what, read = FIRST_ANSWERS[framework]
    out: dict[str, Any] = {"first_answers": what, "n": 0, "skipped": 0} | dict.fromkeys(KEYS, 0)
    out["followed_majority"] = 0
    settled = 0
    for row in rows:
        row = row if isinstance(row, Mapping) else row.to_dict()
        fields = row.get("fields") or {}
        if framework == "settle" and fields.get("decided_by") == "panel":
            settled += 1
            continue
        first = read(row, labels, positions or labels)
        if not first:
            out["skipped"] += 1
            continue
        majority, final, gold = _majority(first), row.get("prediction"), row.get("gold")
        key = {
            (False, True): "wrong_to_right",
            (True, False): "right_to_wrong",
            (True, True): "kept_right",
            (False, False): "kept_wrong",
        }[(majority == gold, final == gold)]
        out[key] += 1
        out["followed_majority"] += final == majority
        out["n"] += 1
    if out["n"] == 0 and not settled:
        return None
    for key in (*KEYS, "followed_majority"):
        out[f"{key}_rate"] = out[key] / out["n"] if out["n"] else None
    if framework == "settle":
        out["settled"] = settled
    return out


def run_flips(run_dir: Any, results: Iterable[Any]) -> dict[str, Any] | None:
    """The flip matrix of one run folder's results (its framework and labels from ``meta.json``)."""
    from pathlib import Path

    from courtroom._files import read_json

    meta = read_json(Path(run_dir) / "meta.json")
    framework = str((meta.get("config") or {}).get("framework"))
    task = meta.get("task") or {}
    return flip_matrix(results, framework, task.get("labels") or [], task.get("positions"))


def _pct(rate: float | None) -> str:
    return "n/a" if rate is None else f"{rate:.1%}"


def flip_lines(name: str, flips: Mapping[str, Any]) -> list[str]:
    """The flip matrix of one framework as printable lines."""
    f = flips
    settled = f" ({f['settled']} settled by the panel, not counted)" if f.get("settled") is not None else ""
    return [
        f"{name}: what the trial changed, from {f['first_answers']} (n={f['n']}){settled}: "
        f"wrong->right {f['wrong_to_right']} ({_pct(f['wrong_to_right_rate'])}), "
        f"right->wrong {f['right_to_wrong']} ({_pct(f['right_to_wrong_rate'])}), "
        f"unchanged right {f['kept_right']} ({_pct(f['kept_right_rate'])}), "
        f"unchanged wrong {f['kept_wrong']} ({_pct(f['kept_wrong_rate'])}); "
        f"verdict followed the first answers' majority {f['followed_majority']} ({_pct(f['followed_majority_rate'])})"
    ]


def flip_table(by_framework: Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per framework with a flip matrix: counts and rates, for reports."""
    import pandas as pd  # reports only: a run that prints its flips does not load pandas

    rows = {}
    for name, f in by_framework.items():
        rows[name] = {
            "first answers": f["first_answers"],
            "n": f["n"],
            **{k.replace("_", " "): f"{f[k]} ({_pct(f[f'{k}_rate'])})" for k in (*KEYS, "followed_majority")},
        }
        if f.get("settled") is not None:
            rows[name]["settled (not counted)"] = f["settled"]
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("framework")
