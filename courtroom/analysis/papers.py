"""The papers' analyses (SPEC §4.2, §4.3), as pure functions of run results.

Results are run-folder rows (``load_run``) or :class:`ExampleResult` objects; framework outputs
live in their ``fields``: Courtroom-LLM's ``votes``, ``ph_label``; Debate-Feedback's
``initial_label`` and ``probabilities``. Only :func:`run_hearings` calls a model: it repeats the
preliminary hearing K times per case for the ambiguity split.
"""

from __future__ import annotations

import contextvars
import math
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pandas as pd

from courtroom.analysis.bias import length_bias, position_consistency
from courtroom.analysis.flips import flip_lines
from courtroom.eval.harness import ExampleResult
from courtroom.models._concurrency import bounded_requests

Row = Mapping[str, Any]
Hearing = Callable[[str, int], str]
"""``(case, sample index) -> label``: one preliminary-hearing sample."""


def _rows(results: Iterable[ExampleResult | Row]) -> list[dict[str, Any]]:
    return [r.to_dict() if isinstance(r, ExampleResult) else dict(r) for r in results]


def _accuracy(rows: Sequence[Row]) -> float | None:
    return sum(r["prediction"] == r["gold"] for r in rows) / len(rows) if rows else None


# -- ambiguous vs normal ------------------------------------------------------------------------


def clerk_hearing(program: Any) -> Hearing:
    """A :data:`Hearing` from a Courtroom-LLM program: its ``clerk`` on the clerk's model.

    Sample 0 is the program's own hearing (same cache entry); sample i > 0 uses rollout id i.
    """
    from courtroom.programs._common import labels_text

    def hear(case: str, i: int) -> str:
        out = program.ask("clerk", program.clerk, rollout=i, case=case, labels=labels_text(program.labels))
        return str(out.most_likely)

    return hear


def run_hearings(
    hearing: Hearing,
    cases: Mapping[str, str],
    k: int = 5,
    *,
    concurrency: int = 4,
) -> dict[str, list[str | None]]:
    """Example id -> the K hearing labels (None for a sample that failed), ``concurrency`` at a time."""
    if k < 2:
        raise ValueError(f"the ambiguity split needs K >= 2 hearings, got {k}")
    jobs = [(ex_id, case, i) for ex_id, case in cases.items() for i in range(k)]

    def one(job: tuple[str, str, int]) -> str | None:
        try:
            return hearing(job[1], job[2])
        except Exception:  # noqa: BLE001 - a failed sample is recorded as None, not fatal
            return None

    with (
        bounded_requests(concurrency),
        ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool,
    ):
        # Contexts are copied here, in the caller's thread, so the limit and the caller's settings apply.
        futures = [pool.submit(contextvars.copy_context().run, one, job) for job in jobs]
        labels = [f.result() for f in futures]
    out: dict[str, list[str | None]] = {ex_id: [] for ex_id in cases}
    for (ex_id, _, _), label in zip(jobs, labels, strict=True):
        out[ex_id].append(label)
    return out


def d_rate(labels: Sequence[str | None]) -> float | None:
    """(freq(top1) - freq(top2)) / K over the K hearing labels that were heard.

    A failed sample (None) is counted apart: it is not a label, and K is the number of samples
    that answered. None when every sample failed.
    """
    heard = [x for x in labels if x is not None]
    if not heard:
        return None
    counts = Counter(heard).most_common(2)
    top2 = counts[1][1] if len(counts) > 1 else 0
    return (counts[0][1] - top2) / len(heard)


def ambiguity(votes: Mapping[str, Sequence[str | None]], theta: float = 0.5) -> pd.DataFrame:
    """Per example: top label, D_rate, ``ambiguous``, ``changed`` and ``failed``.

    ``ambiguous``: D_rate <= theta. ``changed``: the heard samples disagree. ``failed``: samples
    that gave no label, counted apart. An example whose samples all failed has ``ambiguous`` and
    ``changed`` None: it is in neither part.
    """
    rows = []
    for ex_id, labels in votes.items():
        heard = [x for x in labels if x is not None]
        counts = Counter(heard).most_common()
        rate = d_rate(labels)
        rows.append(
            {
                "id": ex_id,
                "k": len(labels),
                "failed": len(labels) - len(heard),
                "top": counts[0][0] if counts else None,
                "d_rate": rate,
                "ambiguous": None if rate is None else rate <= theta,
                "changed": None if not heard else len(counts) > 1,
            }
        )
    return pd.DataFrame(rows, columns=["id", "k", "failed", "top", "d_rate", "ambiguous", "changed"])


RULES = ("ambiguous", "changed")


def rule_name(column: str, theta: float) -> str:
    """How a rule is labelled in tables: the early paper's D_rate rule or the final paper's stricter one."""
    return f"D_rate <= {theta}" if column == "ambiguous" else "top label changed"


def parts(votes: Mapping[str, Sequence[str | None]], theta: float = 0.5) -> dict[str, dict[str, set[str]]]:
    """Rule name -> part ("normal", "ambiguous") -> example ids; computed once per case, for every row."""
    table = ambiguity(votes, theta)
    out: dict[str, dict[str, set[str]]] = {}
    for column in RULES:
        flags = dict(zip(table["id"], table[column], strict=True)) if len(table) else {}
        out[rule_name(column, theta)] = {
            "normal": {i for i, f in flags.items() if f is False},
            "ambiguous": {i for i, f in flags.items() if f is True},
        }
    return out


def ambiguity_split(
    results: Iterable[ExampleResult | Row],
    votes: Mapping[str, Sequence[str | None]],
    theta: float = 0.5,
    mode: str = "parallel",
) -> pd.DataFrame:
    """Accuracy on the normal and ambiguous parts, under the D_rate rule and the "changed" rule.

    ``votes`` are the hearing's K samples per case (the same for every framework compared). Rows
    with judge ``votes`` also get the judges' agreement per part (``unanimous`` or ``consecutive``).
    ``unheard`` counts the cases whose hearing samples all failed (in neither part).
    """
    rows = {r["id"]: r for r in _rows(results)}
    table = ambiguity({i: v for i, v in votes.items() if i in rows}, theta)
    unheard = int(table["top"].isna().sum()) if len(table) else 0
    heard = max(len(table) - unheard, 1)
    out = []
    for rule, split in parts({i: v for i, v in votes.items() if i in rows}, theta).items():
        for part in ("normal", "ambiguous"):
            part_rows = [rows[i] for i in table["id"] if i in split[part]]
            record: dict[str, Any] = {
                "rule": rule,
                "part": part,
                "n": len(part_rows),
                "share": len(part_rows) / heard,
                "accuracy": _accuracy(part_rows),
                "unheard": unheard,
            }
            if any((r.get("fields") or {}).get("votes") for r in part_rows):
                agree = judge_agreement(part_rows, mode)
                record["agreement"] = agree.get("unanimous", agree.get("consecutive"))
            out.append(record)
    return pd.DataFrame(out)


# -- judges ---------------------------------------------------------------------------------------


def judge_agreement(results: Iterable[ExampleResult | Row], mode: str = "parallel") -> dict[str, Any]:
    """How much the judges agree.

    ``parallel``: ``unanimous`` (share of cases where every judge voted alike) and ``pairwise``
    (mean share of agreeing judge pairs). ``sequential``: ``consecutive`` (share of judge i
    agreeing with judge i-1, pooled) and ``by_judge`` (that share for each i >= 2). Both report
    ``with_verdict``: for each judge position, the share of votes equal to the final verdict.
    """
    rows = [r for r in _rows(results) if (r.get("fields") or {}).get("votes")]
    votes = [list(r["fields"]["votes"]) for r in rows]
    out: dict[str, Any] = {"mode": mode, "n": len(votes)}
    if not votes:
        return out
    width = max(len(v) for v in votes)
    out["with_verdict"] = [
        _share([v[j] == r["prediction"] for v, r in zip(votes, rows, strict=True) if len(v) > j]) for j in range(width)
    ]
    if mode == "sequential":
        by_judge = [_share([v[j] == v[j - 1] for v in votes if len(v) > j]) for j in range(1, width)]
        pairs = [v[j] == v[j - 1] for v in votes for j in range(1, len(v))]
        out.update(consecutive=_share(pairs), by_judge=by_judge)
    else:
        out["unanimous"] = _share([len(set(v)) == 1 for v in votes])
        pair_rates = [
            _share([v[a] == v[b] for a in range(len(v)) for b in range(a + 1, len(v))]) for v in votes if len(v) > 1
        ]
        out["pairwise"] = _share_mean(pair_rates)
    return out


def _share(flags: Sequence[bool]) -> float | None:
    return sum(flags) / len(flags) if flags else None


def _share_mean(values: Sequence[float | None]) -> float | None:
    vals = [v for v in values if v is not None]
    return sum(vals) / len(vals) if vals else None


# -- transitions ----------------------------------------------------------------------------------


def transitions(results: Iterable[ExampleResult | Row], initial_field: str) -> dict[str, int]:
    """Initial answer (a field) -> final verdict, as transition counts.

    Keys: ``wrong_to_correct``, ``correct_to_wrong``,
    ``kept_correct``, ``kept_wrong``; a failed final verdict is wrong. Rows without the field
    (failed before it was produced) are counted in ``skipped``.
    """
    out = {
        "wrong_to_correct": 0,
        "correct_to_wrong": 0,
        "kept_correct": 0,
        "kept_wrong": 0,
        "n": 0,
        "skipped": 0,
    }
    for r in _rows(results):
        first = (r.get("fields") or {}).get(initial_field)
        if first is None:
            out["skipped"] += 1
            continue
        key = {
            (False, True): "wrong_to_correct",
            (True, False): "correct_to_wrong",
            (True, True): "kept_correct",
            (False, False): "kept_wrong",
        }[(first == r["gold"], r["prediction"] == r["gold"])]
        out[key] += 1
        out["n"] += 1
    return out


def ph_transitions(results: Iterable[ExampleResult | Row]) -> dict[str, int]:
    """Courtroom-LLM: preliminary hearing (A1) -> verdict."""
    return transitions(results, "ph_label")


def debate_corrections(results: Iterable[ExampleResult | Row]) -> dict[str, int]:
    """Debate-Feedback: initial judgement O_0 -> final O_n.

    Reported as the paper's ``correction`` and
    ``degradation`` counts (plus the unchanged ones).
    """
    t = transitions(results, "initial_label")
    return {
        "correction": t["wrong_to_correct"],
        "degradation": t["correct_to_wrong"],
        "kept_right": t["kept_correct"],
        "kept_wrong": t["kept_wrong"],
        "n": t["n"],
        "skipped": t["skipped"],
    }


def analyze(
    results: Iterable[ExampleResult | Row],
    framework_config: Mapping[str, Any] | None = None,
    votes: Mapping[str, Sequence[str | None]] | None = None,
    theta: float = 0.5,
) -> dict[str, Any]:
    """Every analysis the results support.

    Agreement (votes), PH transitions (ph_label),
    corrections (initial_label), the ambiguity split (given hearing ``votes``), position
    consistency (a swapped run) and the verdict-to-longer-argument rate (frameworks with
    arguments; :mod:`courtroom.analysis.bias`).
    """
    rows = _rows(results)
    fields = set().union(*[(r.get("fields") or {}).keys() for r in rows]) if rows else set()
    out: dict[str, Any] = {}
    if "votes" in fields:
        out["agreement"] = judge_agreement(rows, (framework_config or {}).get("judge_mode", "parallel"))
    if "ph_label" in fields:
        out["ph_transitions"] = ph_transitions(rows)
    if "initial_label" in fields:
        out["corrections"] = debate_corrections(rows)
    if votes:
        mode = (framework_config or {}).get("judge_mode", "parallel")
        out["ambiguity"] = ambiguity_split(rows, votes, theta, mode)
    consistency, lengths = position_consistency(rows), length_bias(rows)
    if consistency is not None:
        out["position_consistency"] = consistency
    if lengths is not None:
        out["length_bias"] = lengths
    return out


def markdown_table(df: pd.DataFrame) -> str:
    """A DataFrame as a GitHub Markdown table (floats to 4 significant digits)."""

    def cell(v: Any) -> str:
        if v is None or (isinstance(v, float) and math.isnan(v)):
            return "n/a"
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    head = [df.index.name or "", *map(str, df.columns)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += [
        "| " + " | ".join([str(i), *(cell(v) for v in row)]) + " |" for i, row in zip(df.index, df.values, strict=True)
    ]
    return "\n".join(lines) + "\n"


def analyses_lines(name: str, found: dict[str, Any]) -> list[str]:
    """The papers' analyses of one framework as printable lines (the ambiguity split as a table)."""
    lines = []
    if "agreement" in found:
        a = found["agreement"]
        rate = (
            f"unanimous {a['unanimous']:.3f}, pairwise "
            + ("n/a" if a.get("pairwise") is None else f"{a['pairwise']:.3f}")  # one vote: no pairs
            if a.get("unanimous") is not None
            else f"consecutive {a['consecutive']:.3f}"
            if a.get("consecutive") is not None
            else "n/a"
        )
        lines.append(f"{name}: judge agreement ({a['mode']}): {rate}")
    if "ph_transitions" in found:
        t = found["ph_transitions"]
        lines.append(
            f"{name}: preliminary hearing -> verdict: wrong->correct {t['wrong_to_correct']}, "
            f"correct->wrong {t['correct_to_wrong']} (of {t['n']})"
        )
    if "corrections" in found:
        c = found["corrections"]
        lines.append(f"{name}: debate corrections {c['correction']}, degradations {c['degradation']} (of {c['n']})")
    for key, what in (("position_consistency", "position consistency"), ("length_bias", "verdict to longer argument")):
        if key in found:
            b = found[key]
            rate = "n/a" if b["rate"] is None else f"{b['rate']:.3f}"
            ties = f"; {b['ties']} tie(s) not counted" if b.get("ties") else ""
            lines.append(f"{name}: {what} {rate} (n={b['n']}{ties})")
    if "flips" in found:
        lines += flip_lines(name, found["flips"])
    if found.get("ambiguity"):
        table = pd.DataFrame(found["ambiguity"]).set_index("rule")
        lines.append(f"{name}: ambiguous vs normal\n" + markdown_table(table))
    return lines
