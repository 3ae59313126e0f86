"""The chosen trials of a study scored on the test split (``--test-limit N``), beside the dev score.

A study picks its best trial (or its Pareto front) by the dev score, so that score is optimistic:
the maximum of many noisy estimates. Each chosen trial is rebuilt as it ran (its knobs, models,
temperatures and, in a study with ``--compile``, its compile, whose calls come from the cache),
prepared on the same train split, and scored on the first ``test_limit`` test examples whose text
neither the train nor the dev cases the trials saw hold (as compile leaves them out), with the
95% Wilson interval. The results are kept on the study (user attribute :data:`KEY`, by trial
number), so the report and the exported recipe of a continued study carry them too.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.errors import ConfigError

KEY = "courtroom_test"


def chosen(study: Any) -> list[Any]:
    """The trials a study chose: its best trial, or every point of its Pareto front (each configuration once)."""
    from courtroom.optimize.study._dedupe import chosen as distinct_chosen

    return distinct_chosen(study)


def _base_lms(config: Any) -> Any:
    from courtroom.models.lms import resolve_roles
    from courtroom.programs import get_framework

    frameworks = getattr(config, "frameworks", None) or [config.framework]
    roles = {r for fw in frameworks for r in get_framework(fw).roles}
    return resolve_roles(
        config.models[0] if config.models else None,
        config.roles,
        valid_roles=roles,
        temperature=config.temperature,
        max_tokens=config.max_tokens,
        api_base=config.api_base,
        timeout=config.timeout,
        n_sampling=config.n_sampling,
        prompt_layout=config.prompt_layout,
    )


def rebuild(
    trial: Any,
    config: Any,
    base: Any,
    train: list[Any],
    labels: list[str],
    positions: list[str] | None,
    model_objects: Mapping[str, Any],
) -> Any:
    """The program ``trial`` scored: built from its parameters, prepared (and compiled) on ``train``."""
    from courtroom.optimize.study._trials import rebuilt
    from courtroom.optimize.study.designs import rebuilt_design

    if hasattr(config, "frameworks"):
        return rebuilt_design(trial, config, base, train, labels, positions, model_objects)
    return rebuilt(trial, config, base, train, labels, positions, model_objects)


def score_chosen(
    outcome: Any, test_limit: int, *, lms: Any = None, model_objects: Mapping[str, Any] | None = None
) -> dict[int, dict[str, Any]]:
    """Score the study's chosen trials on the first ``test_limit`` test examples; trial number -> scores.

    Each entry: ``n``, ``accuracy``, ``macro_f1``, ``failures``, ``ci_low``/``ci_high`` (95% Wilson
    interval of the accuracy), ``dev`` (the objective's dev value that chose it), ``dev_accuracy`` (and
    ``dev_ci_low``/``dev_ci_high``, its Wilson interval),
    ``objective`` and ``design`` (a study across designs). Stored on the study under :data:`KEY`.
    """
    from courtroom.data.tasks import case_digest, load_task
    from courtroom.eval.harness import evaluate
    from courtroom.eval.metrics import score, wilson
    from courtroom.models.cache import configure_cache
    from courtroom.optimize.study._trials import batch_mode

    if test_limit < 1:
        raise ConfigError(f"--test-limit must be >= 1, got {test_limit}")
    config, study = outcome.config, outcome.study
    where: dict[str, Any] = {"data": config.data, "seed": config.seed, "dataset": config.dataset,
                             "splits": config.splits}  # fmt: skip
    train = load_task(config.task, split="train", limit=config.train, limit_flag="--train-limit", short="warn", **where)
    dev = load_task(config.task, split="dev", limit=dev_cases(study, config), short="warn", **where)
    # Held out means unseen: a test case whose text the trials saw in train or dev is left out (as compile does).
    seen = {name: sorted({case_digest(e.get("case")) for e in part.examples}) for name, part in
            (("train", train), ("dev", dev))}  # fmt: skip
    unseen = where | {"splits": dict(config.splits or {}) | {"seen": seen, "leave_out_seen": True}}
    test = load_task(config.task, split="test", limit=test_limit, limit_flag="--test-limit", short="warn", **unseen)
    labels = list(test.task.labels)
    positions = list(test.task.positions) if test.task.positions else None
    configure_cache()
    base = lms if lms is not None else _base_lms(config)
    found: dict[int, dict[str, Any]] = {}
    for trial in chosen(study):
        program = rebuild(trial, config, base, train.examples, labels, positions, model_objects or {})
        with batch_mode(config):  # --batch: the test cases go out as batches too (the compile above: cached)
            results = evaluate(program, test.examples, concurrency=config.concurrency)
        s = score([r.gold for r in results], [r.prediction for r in results], labels)
        low, high = wilson(float(s["accuracy"]), len(results))
        found[trial.number] = (
            {
                "n": len(results),
                "accuracy": float(s["accuracy"]),
                "ci_low": low,
                "ci_high": high,
                "macro_f1": float(s["macro_f1"]),
                "failures": int(s["failures"]),
                "objective": config.objective,
            }
            | _dev(study, trial)
            | ({"design": trial.user_attrs.get("design")} if hasattr(config, "frameworks") else {})
        )
    kept = {str(k): v for k, v in (study.user_attrs.get(KEY) or {}).items()}
    study.set_user_attr(KEY, kept | {str(k): v for k, v in found.items()})
    return found


def dev_cases(study: Any, config: Any) -> int:
    """How many dev cases the study's trials saw: ``--dev-limit``, or more where the race extended its closest."""
    from courtroom.optimize.study.race import EXTENDED

    longest = max((len(marks) for marks in (study.user_attrs.get(EXTENDED) or {}).values()), default=0)
    return max(int(config.dev), longest)


def _dev(study: Any, trial: Any) -> dict[str, Any]:
    """The dev score that chose ``trial`` (``dev``), its accuracy, cases and 95% Wilson interval.

    Where the race extended the trial's record, the accuracy on all its dev cases, as its tied set
    reads it (:func:`~courtroom.optimize.study.tied.dev_score`): one accuracy per trial everywhere.
    """
    from courtroom.eval.metrics import wilson
    from courtroom.optimize.study.tied import dev_score

    acc, n = trial.user_attrs.get("accuracy"), trial.user_attrs.get("examples")
    out: dict[str, Any] = {"dev": trial.values[0], "dev_accuracy": acc, "dev_n": n}
    scored = dev_score(study, trial)
    if scored is not None:
        acc, n = scored
        out = {"dev": acc, "dev_accuracy": acc, "dev_n": n}
    if acc is not None and n:
        low, high = wilson(float(acc), int(n))
        out |= {"dev_ci_low": low, "dev_ci_high": high}
    return out


def stored(study: Any) -> dict[int, dict[str, Any]]:
    """The test scores kept on ``study`` (trial number -> scores) for its chosen trials."""
    saved = study.user_attrs.get(KEY) or {}
    numbers = {t.number for t in chosen(study)}
    return {int(k): v for k, v in saved.items() if int(k) in numbers}


def test_table(scores: Mapping[int, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per chosen trial: the dev score that chose it beside its test score, each with its 95% interval.

    The dev interval is the dev accuracy's (Wilson); the dev score that chose the trial is the objective's.
    """
    rows = [
        {"trial": number}
        | ({"design": s["design"]} if "design" in s else {})
        | {
            f"dev {s['objective']}": s["dev"],
            "dev 95% CI": f"[{s['dev_ci_low']:.3f}, {s['dev_ci_high']:.3f}]" if "dev_ci_low" in s else "",
            "dev n": s.get("dev_n"),
            "test accuracy": s["accuracy"],
            "test 95% CI": f"[{s['ci_low']:.3f}, {s['ci_high']:.3f}]",
            "test macro_f1": s["macro_f1"],
            "test n": s["n"],
        }
        for number, s in sorted(scores.items())
    ]
    return pd.DataFrame(rows)


def write_test(folder: Path, scores: Mapping[int, Mapping[str, Any]]) -> Path | None:
    """``test.csv`` in the report folder, and each chosen trial's test scores in ``study.json``."""
    if not scores:
        return None
    path = folder / "test.csv"
    test_table(scores).to_csv(path, index=False)
    summary = folder / "study.json"
    if summary.is_file():
        doc = json.loads(summary.read_text())
        for entry in doc.get("best") or []:
            if entry.get("number") in scores:
                entry["test"] = dict(scores[entry["number"]])
        summary.write_text(json.dumps(doc, indent=2, default=str))
    return path
