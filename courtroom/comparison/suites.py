"""Reproduction suites: the papers' comparison tables, run with the user's models (SPEC §4.5).

``SUITES`` is the one registry, by name. A suite names the table it reproduces, its tasks, its
rows (a framework with knobs, or a preset) and the paper's figure for each (task, row), copied
from the seed papers' tables (the table number is cited on each suite). A figure the paper's
table does not give legibly is None and prints as "n/a". :func:`run_suite` runs one comparison per
task and returns the measured accuracy (with its 95% CI) beside the paper's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from courtroom.errors import ConfigError
from courtroom.eval.metrics import wilson


@dataclass(frozen=True)
class Row:
    """One row of a paper's table: a framework with knobs, or a preset."""

    name: str
    framework: str
    knobs: dict[str, Any] = field(default_factory=dict)
    preset: str | None = None


@dataclass(frozen=True)
class Suite:
    """A paper's comparison table."""

    name: str
    paper: str
    table: str
    tasks: tuple[str, ...]
    rows: tuple[Row, ...]
    figures: dict[str, dict[str, float | None]]
    """Task -> row name -> the paper's accuracy (None: not legible in the seed's table)."""
    note: str = ""
    f1: dict[str, dict[str, float | None]] = field(default_factory=dict)
    """Task -> row name -> the paper's (macro-)F1, where its table gives one."""
    counts: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)
    """Task -> row name -> the paper's prediction corrections and degradations (Debate-Feedback Table 5)."""


def _figures(rows: Sequence[Row], table: Mapping[str, Sequence[float | None]]) -> dict[str, dict[str, float | None]]:
    return {task: dict(zip([r.name for r in rows], values, strict=True)) for task, values in table.items()}


Pair = tuple[float | None, float | None]


def _acc_f1(
    rows: Sequence[Row], table: Mapping[str, Sequence[Pair]]
) -> tuple[dict[str, dict[str, float | None]], dict[str, dict[str, float | None]]]:
    """(accuracy figures, F1 figures) from a table of "acc%/F1" cells written as (acc, f1) pairs."""
    return (
        _figures(rows, {task: [a for a, _ in cells] for task, cells in table.items()}),
        _figures(rows, {task: [f for _, f in cells] for task, cells in table.items()}),
    )


_JOT_TASKS = ("boolean_expressions", "causal_judgement", "navigate", "web_of_lies", "formal_fallacies", "winogrande")
_JOT = Row("jot", "jot", preset="jot-paper")
_JOT_BASELINES = (
    Row("zero-shot", "zero-shot"),
    Row("few-shot", "few-shot", {"k_shots": 3}),
    Row("cot", "cot", {"k_shots": 3}),
    Row("self-consistency", "self-consistency", {"k_shots": 3, "k_samples": 3}),
    Row("khan-debate", "khan-debate", {"n_rounds": 3}),
    _JOT,
)
_JOT_ROLES = (
    Row("jot-without-prosecutor", "jot", {"use_prosecutor": False}, "jot-paper"),
    Row("jot-without-lawyer", "jot", {"use_lawyer": False}, "jot-paper"),
    _JOT,
)
_JOT_LOOPS = tuple(Row(f"jot-{n}-loops", "jot", {"n_loops": n}, "jot-paper") for n in (1, 3, 5))
_JOT_FEEDBACK = (Row("jot-without-feedback", "jot", {"use_feedback": False}, "jot-paper"), _JOT)

_JOT_CLAUDE_TASKS = (
    "boolean_expressions",
    "causal_judgement",
    "navigate",
    "sports_understanding",
    "web_of_lies",
    "formal_fallacies",
    "winogrande",
)
_JOT_CLAUDE = (
    Row("zero-shot", "zero-shot"),
    Row("few-shot", "few-shot", {"k_shots": 3}),
    Row("cot", "cot", {"k_shots": 3}),
    Row("khan-debate", "khan-debate", {"n_rounds": 3}),
    _JOT,
)

_CR_TASKS = ("rte", "boolq", "qnli", "anli_r1", "anli_r2", "anli_r3", "emotion")


def _courtroom_rows(preset: str, shots: int = 1) -> tuple[Row, ...]:
    return (
        Row("single", "few-shot", {"k_shots": shots, "demo_source": "labelled"}),
        Row("parallel-n", "parallel-vote", {"n_models": 5, "k_shots": shots}),
        Row("courtroom-parallel", "courtroom-llm", {"judge_mode": "parallel", "k_precedents": shots}, preset),
        Row("courtroom-sequential", "courtroom-llm", {"judge_mode": "sequential", "k_precedents": shots}, preset),
    )


_EARLY = _courtroom_rows("courtroom-llm-early")
_FINAL = _courtroom_rows("courtroom-llm-final")
_DF = (
    Row("few-shot", "few-shot", {"k_shots": 3, "demo_source": "labelled"}),
    Row("cot", "cot", {"k_shots": 0}),
    Row("reflexion", "reflexion"),
    Row("debate-feedback-single", "debate-feedback", {"variant": "single"}, "debate-feedback-paper"),
    Row("debate-feedback-assistant", "debate-feedback", {}, "debate-feedback-paper"),
)
_DF_SMOOTHING = (
    Row("without-smoothing", "debate-feedback", {"smoothing": 1.0}, "debate-feedback-paper"),
    Row("with-smoothing", "debate-feedback", {"smoothing": 0.5}, "debate-feedback-paper"),
)

# The papers' "acc%/F1" cells as (accuracy, F1). JoT Table 1: GPT-3.5-Turbo baselines; the seed's
# extraction interleaves the GPT-4o rows for navigate, web of lies and formal fallacies, so only
# JoT's figures (also in §4.2's text) are kept for those tasks.
_JOT1 = _acc_f1(
    _JOT_BASELINES,
    {
        "boolean_expressions": ((0.67, 0.76), (0.55, 0.55), (0.47, 0.29), (0.43, 0.17), (0.81, 0.84), (0.98, 0.98)),
        "causal_judgement": ((0.62, 0.55), (0.61, 0.61), (0.61, 0.52), (0.59, 0.48), (0.61, 0.61), (0.74, 0.72)),
        "navigate": ((None, None),) * 5 + ((0.88, 0.87),),
        "web_of_lies": ((None, None),) * 5 + ((0.90, 0.91),),
        "formal_fallacies": ((None, None),) * 5 + ((0.77, 0.77),),
        "winogrande": ((0.60, 0.60), (0.58, 0.60), (0.54, 0.57), (0.63, 0.64), (0.59, 0.43), (0.89, 0.89)),
    },
)
# JoT Table 2, Claude: the baselines' Claude-3-Haiku column; Khan et al. and JoT have one column each.
_JOT2 = _acc_f1(
    _JOT_CLAUDE,
    {
        "boolean_expressions": ((0.62, 0.65), (0.57, 0.49), (0.66, 0.67), (0.45, 0.34), (0.86, 0.88)),
        "causal_judgement": ((0.61, 0.38), (0.64, 0.57), (0.59, 0.44), (0.54, 0.26), (0.67, 0.66)),
        "navigate": ((0.54, 0.47), (0.58, 0.09), (0.56, 0.08), (0.65, 0.49), (0.69, 0.66)),
        "sports_understanding": ((0.71, 0.72), (0.74, 0.74), (0.61, 0.49), (0.44, 0.00), (0.82, 0.79)),
        "web_of_lies": ((0.47, 0.33), (0.45, 0.50), (0.52, 0.57), (0.57, 0.25), (0.58, 0.50)),
        "formal_fallacies": ((0.57, 0.58), (0.49, 0.47), (0.45, 0.30), (0.57, 0.25), (0.71, 0.69)),
        "winogrande": ((0.58, 0.55), (0.58, 0.56), (0.66, 0.59), (0.60, 0.46), (0.71, 0.63)),
    },
)
_JOT3 = _acc_f1(
    _JOT_ROLES,
    {
        "boolean_expressions": ((0.95, 0.96), (0.95, 0.95), (0.98, 0.98)),
        "causal_judgement": ((0.68, 0.70), (0.68, 0.53), (0.74, 0.72)),
        "navigate": ((0.72, 0.76), (0.65, 0.72), (0.88, 0.87)),
        "web_of_lies": ((0.69, 0.74), (0.64, 0.55), (0.90, 0.91)),
        "formal_fallacies": ((0.65, 0.66), (0.68, 0.56), (0.77, 0.77)),
        "winogrande": ((0.85, 0.86), (0.82, 0.82), (0.89, 0.89)),
    },
)
_JOT4 = _acc_f1(
    _JOT_LOOPS,
    {
        "boolean_expressions": ((0.98, 0.98), (0.98, 0.98), (0.99, 0.99)),
        "causal_judgement": ((0.65, 0.60), (0.74, 0.72), (0.74, 0.73)),
        "navigate": ((0.87, 0.83), (0.88, 0.87), (0.91, 0.89)),
        "web_of_lies": ((0.87, 0.88), (0.90, 0.91), (0.91, 0.91)),
        "formal_fallacies": ((0.70, 0.67), (0.77, 0.77), (0.78, 0.78)),
        "winogrande": ((0.87, 0.87), (0.89, 0.89), (0.89, 0.89)),
    },
)
_JOT5 = _acc_f1(
    _JOT_FEEDBACK,
    {
        "boolean_expressions": ((0.96, 0.97), (0.98, 0.98)),
        "causal_judgement": ((0.69, 0.63), (0.74, 0.72)),
        "navigate": ((0.87, 0.83), (0.88, 0.87)),
        "web_of_lies": ((0.87, 0.88), (0.90, 0.91)),
        "formal_fallacies": ((0.70, 0.70), (0.77, 0.77)),
        "winogrande": ((0.87, 0.87), (0.89, 0.89)),
    },
)
_DF3 = _acc_f1(
    _DF,
    {
        "caselaw": ((0.638, 0.641), (0.637, 0.640), (0.645, 0.650), (0.662, 0.657), (0.671, 0.661)),
        "cail2018": ((0.297, 0.0503), (0.312, 0.0617), (0.318, 0.0812), (0.419, 0.161), (0.448, 0.163)),
    },
)

SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite(
            "jot-table1",
            "judgment-of-thought",
            "Table 1",
            _JOT_TASKS,
            _JOT_BASELINES,
            _JOT1[0],
            "baselines: GPT-3.5-Turbo (--lm openai/gpt-3.5-turbo); averages over 10 runs; JoT's judge is GPT-4o "
            "and its advocates GPT-3.5-Turbo (§3: 'a higher-level model (e.g., GPT-4 Omni) is assigned to the judge "
            "role, while lower-level models (e.g., GPT-3.5-turbo) serve as the lawyer and prosecutor'): add "
            "--role judge=openai/gpt-4o",
            _JOT1[1],
        ),
        Suite(
            "jot-table2",
            "judgment-of-thought",
            "Table 2",
            _JOT_CLAUDE_TASKS,
            _JOT_CLAUDE,
            _JOT2[0],
            "Claude: the baselines' figures are the Claude-3-Haiku column (--lm anthropic/claude-3-haiku-20240307); "
            "the table gives Khan et al. and JoT one column, not saying which model judged: as in the GPT runs "
            "(weaker advocates, stronger judge), add --role judge=anthropic/claude-3-5-haiku-20241022",
            _JOT2[1],
        ),
        Suite(
            "jot-table3",
            "judgment-of-thought",
            "Table 3",
            _JOT_TASKS,
            _JOT_ROLES,
            _JOT3[0],
            "ablation: removing the lawyer or the prosecutor",
            _JOT3[1],
        ),
        Suite(
            "jot-table4",
            "judgment-of-thought",
            "Table 4",
            _JOT_TASKS,
            _JOT_LOOPS,
            _JOT4[0],
            "ablation: 1, 3 and 5 loops",
            _JOT4[1],
        ),
        Suite(
            "jot-table5",
            "judgment-of-thought",
            "Table 5",
            _JOT_TASKS,
            _JOT_FEEDBACK,
            _JOT5[0],
            "ablation: the judge's feedback to the advocates",
            _JOT5[1],
        ),
        Suite(
            "courtroom-llm-early-table3",
            "courtroom-llm-early",
            "Table 3",
            _CR_TASKS,
            _EARLY,
            _figures(
                _EARLY,
                {
                    "rte": (0.5523, 0.5704, 0.7000, 0.7870),
                    "boolq": (0.6060, 0.6140, 0.4880, 0.5740),
                    "qnli": (0.7540, 0.6280, 0.7220, 0.8940),
                    "anli_r1": (0.4860, 0.4560, 0.4120, 0.5800),
                    "anli_r2": (0.4380, 0.4320, 0.4380, 0.5380),
                    "anli_r3": (0.3860, 0.3740, 0.4760, 0.5380),
                    "emotion": (0.4900, 0.6180, 0.6820, 0.6620),
                },
            ),
            "GPT-3.5-turbo in every role; 1-shot column, 5 decision makers",
        ),
        Suite(
            "courtroom-llm-final-tables3-5",
            "courtroom-llm",
            "Tables 3, 4 and 5",
            ("rte", "boolq", "qnli", "anli_r1", "emotion"),
            _FINAL,
            _figures(
                _FINAL,
                {
                    "rte": (0.603, 0.567, 0.769, 0.787),
                    "boolq": (0.718, 0.712, 0.800, 0.806),
                    "qnli": (0.724, 0.710, 0.878, 0.874),
                    "anli_r1": (0.582, 0.594, 0.662, 0.676),
                    "emotion": (0.204, 0.176, 0.550, 0.572),
                },
            ),
            "GPT-4o hearing and judges, LLaMA-3.1-8B advocates; 1-shot column",
        ),
        Suite(
            "debate-feedback-table3",
            "debate-feedback",
            "Table 3",
            ("caselaw", "cail2018"),
            _DF,
            _DF3[0],
            "gpt-4o-mini baselines; the paper's CAIL18 task is multi-label article prediction, ours is "
            "single-charge classification, so those figures are not like for like",
            _DF3[1],
        ),
        Suite(
            "debate-feedback-table5",
            "debate-feedback",
            "Table 5",
            ("caselaw",),
            _DF_SMOOTHING,
            _figures(_DF_SMOOTHING, {"caselaw": (0.628, 0.657)}),
            "smoothing: T = 1 (O_i is the judge's latest answer) against T = 0.5; the paper's counts are over "
            "3,000 binary CaseLaw cases",
            counts={
                "caselaw": {
                    "without-smoothing": {"correction": 102, "degradation": 115},
                    "with-smoothing": {"correction": 93, "degradation": 11},
                }
            },
        ),
    )
}


def get_suite(name: str) -> Suite:
    """The registered suite called ``name``."""
    if name not in SUITES:
        raise ConfigError(f"unknown suite {name!r}: valid suites are {', '.join(SUITES)}")
    return SUITES[name]


def suite_table(
    suite: Suite, measured: Mapping[str, pd.DataFrame], analyses: Mapping[str, Mapping[str, Any]] | None = None
) -> pd.DataFrame:
    """Paper figure beside the measured accuracy and its 95% CI, one line per (task, row).

    ``measured`` maps task -> a comparison table (index: row names; columns ``accuracy``, ``n`` and,
    with repeats, ``accuracy_ci_low`` / ``accuracy_ci_high``). Without repeats the CI is Wilson's
    over the examples. Where the paper gives F1, ``paper_f1`` and ``measured_f1`` (macro-F1) follow;
    where it counts corrections and degradations, so do those, measured from ``analyses`` (task ->
    row -> a run's analyses).
    """
    lines = []
    for task, table in measured.items():
        for row in suite.rows:
            line = table.loc[row.name]
            acc = float(line["accuracy"])
            if "accuracy_ci_low" in table.columns and not pd.isna(line["accuracy_ci_low"]):
                low, high = float(line["accuracy_ci_low"]), float(line["accuracy_ci_high"])
            else:
                low, high = wilson(acc, int(table.loc[row.name, "n"]))
            out: dict[str, Any] = {
                "task": task,
                "row": row.name,
                "paper": suite.figures.get(task, {}).get(row.name),
                "measured": acc,
                "ci_low": low,
                "ci_high": high,
                "n": int(table.loc[row.name, "n"]),
            }
            if suite.f1:
                f1 = line.get("macro_f1")
                out |= {
                    "paper_f1": suite.f1.get(task, {}).get(row.name),
                    "measured_f1": None if f1 is None or pd.isna(f1) else float(f1),
                }
            if suite.counts:
                paper = suite.counts.get(task, {}).get(row.name, {})
                seen = ((analyses or {}).get(task, {}).get(row.name) or {}).get("corrections") or {}
                for key in ("correction", "degradation"):
                    out |= {f"paper_{key}": paper.get(key), f"measured_{key}": seen.get(key)}
            lines.append(out)
    return pd.DataFrame(lines)


def run_suite(
    name: str,
    *,
    tasks: Sequence[str] | None = None,
    compare_fn: Callable[..., Any] | None = None,
    **compare_kwargs: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run suite ``name`` (optionally only some of its ``tasks``): one comparison per task.

    Returns (the paper-vs-measured table, task -> :class:`courtroom.comparison.table.Comparison`).
    ``compare_kwargs`` go to :func:`courtroom.comparison.compare.compare` (models, limit, repeats, ...).
    """
    from courtroom.comparison.compare import compare

    suite = get_suite(name)
    chosen = list(tasks) if tasks else list(suite.tasks)
    unknown = [t for t in chosen if t not in suite.tasks]
    if unknown:
        raise ConfigError(f"suite {name} has no task {', '.join(unknown)}: its tasks are {', '.join(suite.tasks)}")
    rows = {r.name: (r.framework, dict(r.knobs), r.preset) for r in suite.rows}
    run = compare_fn or compare
    comparisons = {task: run(task, list(rows), rows=rows, **compare_kwargs) for task in chosen}
    analyses = {task: getattr(c, "analyses", {}) for task, c in comparisons.items()}
    table = suite_table(suite, {task: c.table for task, c in comparisons.items()}, analyses)
    return table, comparisons
