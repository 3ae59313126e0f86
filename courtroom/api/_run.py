"""The parts of the ``run`` command in :mod:`courtroom.api`.

:func:`run_config` is the run a spec describes (what :func:`courtroom.api.run` runs and
:func:`courtroom.api.estimate` prices; :mod:`courtroom.api` re-exports it); :func:`resume_overrides`
is what a resume takes from the options given with it (:data:`RESUMED`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError

if TYPE_CHECKING:
    from courtroom.runner.config import RunConfig
    from courtroom.spec import Experiment

__all__ = ["RESUMED", "resume_overrides", "run_config"]


def run_config(spec: Experiment) -> RunConfig:
    """The run ``spec`` describes: preset applied, knobs typed by the framework, role names checked."""
    from courtroom.programs import check_knobs, check_roles, get_framework
    from courtroom.programs.presets import apply_preset
    from courtroom.runner.config import RunConfig
    from courtroom.spec._values import typed_knobs

    if spec.design.framework is None and spec.design.preset is None:
        raise ConfigError("name a framework (see `courtroom frameworks`), a --preset, or pass --resume RUN_DIR")
    cls = get_framework(apply_preset(spec.design.preset, spec.design.framework)[0])
    framework, knobs = apply_preset(
        spec.design.preset, spec.design.framework, typed_knobs(spec.design.knobs, cls.knobs())
    )
    check_roles(spec.models.roles, cls.roles)
    check_knobs(framework, knobs)  # before the data loads and the display starts
    return RunConfig.from_spec(spec, framework, knobs=knobs)


RESUMED = {"task": "task", "source": "data", "split": "split", "limit": "limit", "seed": "seed",
           "train_limit": "train_limit", "framework": "framework", "knobs": "knobs", "lm": "lm", "roles": "roles",
           "temperature": "temperature", "max_tokens": "max_tokens", "api_base": "api_base", "timeout": "timeout",
           "concurrency": "concurrency", "prices": "prices", "fail_on_error": "fail_on_error", "debias": "debias",
           "dataset": "dataset", "split_sizes": "splits", "train_data": "splits", "dev_data": "splits",
           "test_data": "splits", "batch": "batch", "n_sampling": "n_sampling",
           "prompt_layout": "prompt_layout"}  # fmt: skip
"""Spec field -> the run's config field a resume compares (answer-changing) or takes (safe)."""


def resume_overrides(spec: Experiment) -> dict[str, Any]:
    """The options given with a resume, as run-config fields: safe ones are taken, others must match."""
    from courtroom.runner.config import RunConfig
    from courtroom.spec._values import parse_value

    full = RunConfig.from_spec(spec, spec.design.framework or "")
    out: dict[str, Any] = {}
    for name in spec.given:
        if name in RESUMED:
            out[RESUMED[name]] = getattr(full, RESUMED[name])
    if "api_base" not in out and spec.models.api_base is not None:
        out["api_base"] = spec.models.api_base
    if "prices" in out:
        out["prices"] = spec.budget.table()
    if "knobs" in out:  # texts from --set, typed as the run's own knobs are (the framework is the folder's)
        out["knobs"] = {k: parse_value(v) if isinstance(v, str) else v for k, v in out["knobs"].items()}
    if "fail_on_error" in out:
        out["fail_on_error"] = spec.execution.threshold
    return out
