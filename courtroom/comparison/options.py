"""What an experiment spec means for :func:`~courtroom.comparison.compare.compare`: its keywords, in one place.

:func:`compare_options` maps a spec to ``compare``'s keywords; :func:`given_options` gives the ones a
``compare --resume`` was given, for the resume to check against the comparison's plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError

if TYPE_CHECKING:
    from courtroom.spec import Experiment


def knob_defaults(names: Sequence[str]) -> dict[str, Any]:
    """``KEY`` and ``FRAMEWORK.KEY`` -> the knob's default, so ``--set`` texts are typed strictly."""
    from courtroom.programs import FRAMEWORKS, load_plugins

    if not set(names) <= set(FRAMEWORKS):
        load_plugins()  # an installed package's framework
    out: dict[str, Any] = {}
    for name in names:
        for key, default in (FRAMEWORKS[name].knobs() if name in FRAMEWORKS else {}).items():
            out.setdefault(key, default)
            out[f"{name}.{key}"] = default
    return out


def compare_options(spec: Experiment, frameworks: Sequence[str] | None = None) -> dict[str, Any]:
    """The keywords of :func:`compare` that ``spec`` describes (``task`` included): the one mapping.

    ``frameworks`` are the frameworks compared when the rows have other names (a suite's rows).
    """
    from courtroom.spec._values import typed_knobs

    d, m, design = spec.data, spec.models, spec.design
    names = list(frameworks or design.frameworks)
    roles_of = {r for f in names if f in _frameworks() for r in _frameworks()[f].roles}
    unknown = sorted(set(m.roles) - roles_of) if names and all(f in _frameworks() for f in names) else []
    if unknown:
        raise ConfigError(f"--role {', '.join(unknown)}: no compared framework has that role")
    return {
        "task": d.task_name,
        "limit": d.limit,
        "repeats": spec.execution.repeats,
        "lm": m.default,
        "roles": dict(m.roles),
        "data": d.source,
        "split": d.split,
        "seed": d.seed,
        "knobs": typed_knobs(design.knobs, knob_defaults(names)),
        "concurrency": spec.execution.concurrency or 4,
        "out": spec.output.out or "comparisons",
        "temperature": m.temperature,
        "max_tokens": m.max_tokens,
        "api_base": m.api_base,
        "timeout": m.timeout,
        "dataset": d.custom(),
        "prices": spec.budget.table(),
        "ambiguity_k": spec.output.ambiguity_k,
        "theta": spec.output.theta,
        "train_limit": d.train_limit,
        "presets": list(design.presets),
        "fail_on_error": spec.execution.threshold,
        "matched_baselines": design.matched_baselines,
        "baseline": design.baseline,
        "match": design.match,
        "debias": design.debias,
        "splits": d.splits(),
        "spec": spec.to_dict(),
    }


GIVEN = {"task": "task", "frameworks": "frameworks", "limit": "limit", "train_limit": "train_limit",
         "source": "data", "split": "split", "seed": "seed", "repeats": "repeats", "lm": "lm",
         "temperature": "temperature", "max_tokens": "max_tokens", "ambiguity_k": "ambiguity_k", "theta": "theta",
         "matched_baselines": "matched_baselines", "baseline": "baseline", "match": "match", "presets": "presets",
         "knobs": "knobs", "roles": "roles", "dataset": "dataset", "text_field": "dataset", "label_field": "dataset",
         "labels": "dataset", "split_sizes": "splits", "train_data": "splits", "dev_data": "splits",
         "test_data": "splits", "api_base": "api_base", "timeout": "timeout", "concurrency": "concurrency",
         "prices": "prices", "fail_on_error": "fail_on_error", "debias": "debias"}  # fmt: skip
"""Spec field -> the :func:`compare` keyword a resume compares (answer-changing) or takes (safe)."""


def given_options(spec: Experiment) -> dict[str, Any]:
    """With ``compare --resume``: the options given, as :func:`compare` names them; the resume checks them."""
    if spec.design.suite or spec.design.suite_tasks:
        raise ConfigError("--resume finishes one comparison folder: drop --suite (resume each task's folder)")
    every = compare_options(spec) if spec.design.frameworks else _light_options(spec)
    out = {GIVEN[n]: every.get(GIVEN[n]) for n in spec.given if n in GIVEN}
    if spec.models.api_base is not None:
        out["api_base"] = spec.models.api_base
    return {k: v for k, v in out.items() if v is not None}


def _light_options(spec: Experiment) -> dict[str, Any]:
    """:func:`compare_options` without knowing the compared frameworks (a resume names none)."""
    from courtroom.spec._values import parse_value

    shadow = spec.replace(frameworks=["zero-shot"])
    out = compare_options(shadow)
    out["knobs"] = {k: parse_value(v) if isinstance(v, str) else v for k, v in spec.design.knobs.items()}
    return out


def _frameworks() -> dict[str, Any]:
    from courtroom.programs import FRAMEWORKS

    return FRAMEWORKS
