"""What a comparison runs, settled before any row does: each row's run config, and ``plan.json``.

:func:`comparison_configs` turns the compared frameworks (or named rows), presets and ``--set``
knobs into one :class:`~courtroom.runner.runs.RunConfig` per row; :func:`write_plan` records
what will run, so that ``courtroom compare --resume`` can finish it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from courtroom._files import write_json
from courtroom.analysis.bias import check_debias, swappable_frameworks
from courtroom.errors import ConfigError
from courtroom.eval.status import DEFAULT_FAIL_ON_ERROR
from courtroom.models.cache import without_base_url
from courtroom.programs import get_framework
from courtroom.runner.config import RunConfig


def split_knobs(
    sets: Mapping[str, Any] | None, frameworks: Sequence[str], of: Mapping[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """``{"jot.n_loops": 2, "seed": 1}`` -> knobs per framework (or per row, ``of`` naming its framework).

    An unprefixed knob goes to every
    framework that has it, and must belong to at least one.
    """
    of = dict(of or {})
    out: dict[str, dict[str, Any]] = {f: {} for f in frameworks}
    for key, value in (sets or {}).items():
        fw, dot, knob = key.rpartition(".")
        if dot:
            if fw not in out:
                raise ConfigError(f"--set {key}: {fw!r} is not one of the compared frameworks {', '.join(frameworks)}")
            out[fw][knob] = value
            continue
        takers = [f for f in frameworks if key in get_framework(of.get(f, f)).knobs()]
        if not takers:
            raise ConfigError(f"--set {key}: no compared framework has that knob; write FRAMEWORK.{key}=VALUE")
        for f in takers:
            out[f][key] = value
    return out


def comparison_configs(
    task: str,
    frameworks: Sequence[str],
    *,
    limit: int | None = None,
    roles: Mapping[str, str] | None = None,
    data: str = "auto",
    split: str = "test",
    seed: int = 0,
    knobs: Mapping[str, Any] | None = None,
    lm: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    api_base: str | None = None,
    timeout: float | None = None,
    concurrency: int = 4,
    out: str | Path = "comparisons",
    dataset: Mapping[str, Any] | None = None,
    prices: Mapping[str, Sequence[float]] | None = None,
    train_limit: int | None = None,
    presets: Sequence[str] = (),
    rows: Mapping[str, tuple[Any, ...]] | None = None,
    fail_on_error: float = DEFAULT_FAIL_ON_ERROR,
    debias: str | None = None,
    splits: Mapping[str, Any] | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, RunConfig]:
    """The run config of each compared row (same examples, models and settings).

    ``presets`` apply to the compared frameworks they name. ``rows`` (row name -> (framework,
    knobs, preset)) compares named configurations, several of one framework if need be (suites);
    ``frameworks`` then lists row names. ``debias`` applies to the rows whose framework has sides
    to swap (:mod:`courtroom.analysis.bias`); the others run once per case, as usual.
    """
    from courtroom.programs.presets import apply_preset, get_preset

    frameworks = list(dict.fromkeys(f.strip() for f in frameworks if f.strip()))
    if not frameworks:
        raise ConfigError("--frameworks is empty: e.g. --frameworks jot,zero-shot,cot")
    planned = {f: (tuple(rows[f][:3]) if rows and f in rows else (f, {}, None)) for f in frameworks}
    saved = {f: rows[f][3] for f in frameworks if rows and f in rows and len(rows[f]) > 3}
    for name in presets:
        matched = [f for f in frameworks if planned[f][0] == get_preset(name).framework]
        if not matched:
            raise ConfigError(f"--preset {name} is for {get_preset(name).framework}, which is not compared")
        for f in matched:
            planned[f] = (planned[f][0], planned[f][1], name)
    base = {f: apply_preset(p, fw, k) for f, (fw, k, p) in planned.items()}
    classes = {f: get_framework(fw) for f, (fw, _) in base.items()}
    per_fw = split_knobs(knobs, frameworks, {f: fw for f, (fw, _) in base.items()})
    check_debias(debias)
    swapped = {f for f, c in classes.items() if c.swappable} if debias is not None else set()
    if debias is not None and not swapped:
        raise ConfigError(
            f"--debias {debias}: none of {', '.join(frameworks)} has sides to swap; "
            f"position swap works with {', '.join(swappable_frameworks())}"
        )
    unknown_roles = sorted(set(roles or {}) - {r for c in classes.values() for r in c.roles})
    if unknown_roles:
        raise ConfigError(f"--role {', '.join(unknown_roles)}: no compared framework has that role")
    models = dict((spec or {}).get("models") or {})  # --n-sampling, --prompt-layout: how requests go
    return {
        f: RunConfig(
            base[f][0],
            task,
            data=data,
            split=split,
            limit=limit,
            seed=seed,
            knobs=base[f][1] | per_fw[f],
            lm=lm,
            roles={r: m for r, m in (roles or {}).items() if r in classes[f].roles},
            temperature=temperature,
            max_tokens=max_tokens,
            api_base=api_base,
            timeout=timeout,
            concurrency=concurrency,
            out=str(out),
            dataset=dict(dataset) if dataset else None,
            prices={k: list(v) for k, v in prices.items()} if prices else None,
            train_limit=train_limit,
            preset=planned[f][2],
            fail_on_error=fail_on_error,
            debias=debias if f in swapped else None,
            splits=dict(splits) if splits else None,
            batch=bool(((spec or {}).get("execution") or {}).get("batch")),
            n_sampling=models.get("n_sampling"),
            prompt_layout=models.get("prompt_layout"),
            spec=dict(spec) if spec else None,
            program=saved.get(f),
        )
        for f in frameworks
    }


PLAN = "plan.json"
"""What a comparison will run, written before its first run: enough for ``compare --resume``."""


def write_plan(
    out_dir: Path,
    task: str,
    frameworks: Sequence[str],
    options: Mapping[str, Any],
    spec: Mapping[str, Any] | None = None,
) -> None:
    """Write ``plan.json``: the task, the compared rows, the options and the spec (never the base URL)."""
    plan = {"kind": "courtroom-comparison", "task": task, "frameworks": list(frameworks), "spec": spec}
    write_json(out_dir / PLAN, plan | {"options": without_base_url(options)})
