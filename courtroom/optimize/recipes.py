"""Recipes: the best trial of a study as a config ``courtroom compile --config`` accepts.

One writer (:func:`export_config`) for single-framework studies and studies across designs, one
reader (:func:`read_config`), and :func:`recipe_models` turning a recipe's models back into
role models. Names only: never keys or URLs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from courtroom.errors import ConfigError
from courtroom.optimize.study.report import best_trial, tied_summary
from courtroom.optimize.study.spaces import split_params


def export_config(
    study: Any,
    framework: str | None,
    task: str,
    path: str | Path,
    *,
    models: Mapping[str, str] | None = None,
    lm: str | None = None,
    spec: Mapping[str, Any] | None = None,
    test: Mapping[int, Mapping[str, Any]] | None = None,
    fixed: Mapping[str, Any] | None = None,
    preset: str | None = None,
) -> dict[str, Any]:
    """Write the best trial as a recipe; ``framework`` None takes the trial's design (a study across designs).

    ``models`` (role -> model name) and ``lm`` (the default model's name) are the models the
    study ran on; a searched model choice replaces its role's. ``spec`` is the study's recorded spec.
    ``test`` (trial number -> scores, ``--test-limit``) adds the trial's test score beside ``values`` (dev).
    ``fixed`` are the knobs every trial ran with outside the space, under the trial's own; ``preset``
    the study's (its role temperatures apply to a compile from the recipe).
    """
    trial = best_trial(study)
    # A design without knobs has an empty config: its params hold only the design's name.
    params = trial.user_attrs["config"] if "config" in trial.user_attrs else trial.params
    knobs, searched, temps = split_params(params)
    config = {
        "kind": "courtroom-config",
        "framework": framework or trial.user_attrs.get("design"),
        "task": task,
        "knobs": dict(fixed or {}) | knobs,
        "preset": preset,
        "lm": lm,
        "roles": dict(models or {}) | searched,
        "temperatures": temps,
        "study": study.study_name,
        "trial": trial.number,
        "values": list(trial.values),
        "spec": dict(spec) if spec else None,
        "data": recorded_data(spec, task),
    }
    from courtroom.optimize.study.tied import dev_score

    scored = dev_score(study, trial)  # the accuracy the tied set reads: all its dev cases (``values``: --dev-limit's)
    if scored is not None:
        config |= {"accuracy": round(scored[0], 4), "dev_cases": scored[1]}
    tied = tied_summary(study)
    if tied is not None:  # the configurations the dev data could not separate from the best, and the rule
        config["tied"] = tied
    if test and trial.number in test:
        config["test"] = dict(test[trial.number])
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_text(json.dumps(config, indent=2))
    return config


def recorded_data(spec: Mapping[str, Any] | None, task: str | None = None) -> dict[str, Any]:
    """The data section that names a recorded spec's examples (:data:`~courtroom.spec.DATA_SOURCE`), whole.

    ``task`` stands in for a spec without one (recorded before the data section travelled), when it
    names a registered task: ``custom:NAME`` names none.
    """
    from courtroom.spec import DATA_SOURCE

    data = dict((spec or {}).get("data") or {})
    out = {k: data[k] for k in DATA_SOURCE if data.get(k) not in (None, [], {})}
    if not out.get("task") and not out.get("dataset") and task and not str(task).startswith("custom:"):
        out["task"] = task
    return out


def recipe_data(recipe: Mapping[str, Any], given: Iterable[str] = ()) -> dict[str, Any]:
    """The data a compile from ``recipe`` uses, unless ``given`` names its own (``--task`` or ``--dataset``).

    Whatever else is ``given`` wins field by field: ``--data FILE`` reads the recipe's task from
    that file (the recipe's own split files are then left out: they belong to its file).
    """
    given = set(given)
    if {"task", "dataset"} & given:
        return {}
    data = dict(recipe.get("data") or recorded_data(recipe.get("spec"), recipe.get("task")))
    if "source" in given:
        data = {k: v for k, v in data.items() if k not in ("train_data", "dev_data", "test_data")}
    return {k: v for k, v in data.items() if k not in given}


def read_config(path: str | Path) -> dict[str, Any]:
    """A config written by :func:`export_config` (``courtroom study --export-best``)."""
    from courtroom._files import read_text

    try:
        data = json.loads(read_text(path, "--config"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"cannot read config {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("kind") != "courtroom-config":
        raise ConfigError(f"{path} is not a courtroom config: write one with `courtroom study --export-best`")
    return data


def recipe_models(
    recipe: Mapping[str, Any],
    lm: str | None = None,
    roles: Mapping[str, Any] | None = None,
    temperature: float | None = None,
) -> tuple[Any, dict[str, Any]]:
    """(default model, role -> model) for a compile from ``recipe``.

    The recipe's models are used unless ``lm`` replaces them all or ``roles`` some of them; a
    searched temperature applies to its role's model unless ``temperature`` is given.
    """
    import os

    from courtroom.models.lms import LMSpec

    merged: dict[str, Any] = ({} if lm else dict(recipe.get("roles") or {})) | dict(roles or {})
    default = lm or recipe.get("lm")
    temps = dict(recipe.get("temperatures") or {})
    if temps and temperature is None:
        name = default or os.environ.get("COURTROOM_LM", "local")
        merged = {r: LMSpec(str(merged.get(r) or name), temperature=float(t)) for r, t in temps.items()} | {
            r: m for r, m in merged.items() if r not in temps
        }
    return default, merged
