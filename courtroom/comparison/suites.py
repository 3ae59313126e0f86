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


def _figures(rows: Sequence[Row], table: Mapping[str, Sequence[float | None]]) -> dict[str, dict[str, float | None]]:
    return {task: dict(zip([r.name for r in rows], values, strict=True)) for task, values in table.items()}


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

SUITES: dict[str, Suite] = {
    s.name: s
    for s in (
        Suite(
            "jot-table1",
            "judgment-of-thought",
            "Table 1",
            _JOT_TASKS,
            _JOT_BASELINES,
            # GPT-3.5-Turbo rows for the baselines; JoT: GPT-3.5 advocates, GPT-4o judge. The seed's
            # extraction of Table 1 interleaves the GPT-4o rows for navigate, web of lies and formal
            # fallacies, so only JoT's figures (also in §4.2's text) are kept for those tasks.
            _figures(
                _JOT_BASELINES,
                {
                    "boolean_expressions": (0.67, 0.55, 0.47, 0.43, 0.81, 0.98),
                    "causal_judgement": (0.62, 0.61, 0.61, 0.59, 0.61, 0.74),
                    "navigate": (None, None, None, None, None, 0.88),
                    "web_of_lies": (None, None, None, None, None, 0.90),
                    "formal_fallacies": (None, None, None, None, None, 0.77),
                    "winogrande": (0.60, 0.58, 0.54, 0.63, 0.59, 0.89),
                },
            ),
            "baselines: GPT-3.5-Turbo; averages over 10 runs",
        ),
        Suite(
            "jot-table3",
            "judgment-of-thought",
            "Table 3",
            _JOT_TASKS,
            _JOT_ROLES,
            _figures(
                _JOT_ROLES,
                {
                    "boolean_expressions": (0.95, 0.95, 0.98),
                    "causal_judgement": (0.68, 0.68, 0.74),
                    "navigate": (0.72, 0.65, 0.88),
                    "web_of_lies": (0.69, 0.64, 0.90),
                    "formal_fallacies": (0.65, 0.68, 0.77),
                    "winogrande": (0.85, 0.82, 0.89),
                },
            ),
            "ablation: removing the lawyer or the prosecutor",
        ),
        Suite(
            "jot-table4",
            "judgment-of-thought",
            "Table 4",
            _JOT_TASKS,
            _JOT_LOOPS,
            _figures(
                _JOT_LOOPS,
                {
                    "boolean_expressions": (0.98, 0.98, 0.99),
                    "causal_judgement": (0.65, 0.74, 0.74),
                    "navigate": (0.87, 0.88, 0.91),
                    "web_of_lies": (0.87, 0.90, 0.91),
                    "formal_fallacies": (0.70, 0.77, 0.78),
                    "winogrande": (0.87, 0.89, 0.89),
                },
            ),
            "ablation: 1, 3 and 5 loops",
        ),
        Suite(
            "jot-table5",
            "judgment-of-thought",
            "Table 5",
            _JOT_TASKS,
            _JOT_FEEDBACK,
            _figures(
                _JOT_FEEDBACK,
                {
                    "boolean_expressions": (0.96, 0.98),
                    "causal_judgement": (0.69, 0.74),
                    "navigate": (0.87, 0.88),
                    "web_of_lies": (0.87, 0.90),
                    "formal_fallacies": (0.70, 0.77),
                    "winogrande": (0.87, 0.89),
                },
            ),
            "ablation: the judge's feedback to the advocates",
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
            _figures(
                _DF,
                {"caselaw": (0.638, 0.637, 0.645, 0.662, 0.671), "cail2018": (0.297, 0.312, 0.318, 0.419, 0.448)},
            ),
            "gpt-4o-mini baselines; the paper's CAIL18 task is multi-label article prediction, ours is "
            "single-charge classification, so those figures are not like for like",
        ),
    )
}


def get_suite(name: str) -> Suite:
    """The registered suite called ``name``."""
    if name not in SUITES:
        raise ConfigError(f"unknown suite {name!r}: valid suites are {', '.join(SUITES)}")
    return SUITES[name]


def suite_table(suite: Suite, measured: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Paper figure beside the measured accuracy and its 95% CI, one line per (task, row).

    ``measured`` maps task -> a comparison table (index: row names; columns ``accuracy``, ``n`` and,
    with repeats, ``accuracy_ci_low`` / ``accuracy_ci_high``). Without repeats the CI is Wilson's
    over the examples.
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
            lines.append(
                {
                    "task": task,
                    "row": row.name,
                    "paper": suite.figures.get(task, {}).get(row.name),
                    "measured": acc,
                    "ci_low": low,
                    "ci_high": high,
                    "n": int(table.loc[row.name, "n"]),
                }
            )
    return pd.DataFrame(lines)


def run_suite(
    name: str,
    *,
    tasks: Sequence[str] | None = None,
    compare_fn: Callable[..., Any] | None = None,
    **compare_kwargs: Any,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Run suite ``name`` (optionally only some of its ``tasks``): one comparison per task.

    Returns (the paper-vs-measured table, task -> :class:`courtroom.comparison.compare.Comparison`).
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
    table = suite_table(suite, {task: c.table for task, c in comparisons.items()})
    return table, comparisons
