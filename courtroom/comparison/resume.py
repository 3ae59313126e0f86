"""Finish an interrupted comparison in its folder (``courtroom compare --resume COMPARISON_DIR``).

``plan.json``, written before the first run, names the task, the rows and the options. Each row
whose folder holds a run (or repeat group) is resumed in it, so nothing finished is sent again;
rows not started are run; then the tables, analyses and plots are written as by ``compare``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from courtroom.comparison.compare import run_comparison
from courtroom.comparison.plan import PLAN, comparison_configs
from courtroom.comparison.table import Comparison
from courtroom.errors import ConfigError
from courtroom.eval.harness import ExampleResult
from courtroom.models.cache import require_base_url
from courtroom.models.lms import RoleLMs
from courtroom.runner.resume import SAFE, check_same

CONFIG_KEYS = (
    "limit", "roles", "data", "split", "seed", "knobs", "lm", "temperature", "max_tokens", "timeout",
    "concurrency", "dataset", "prices", "train_limit", "presets", "rows", "fail_on_error",
)  # fmt: skip
"""Plan options that :func:`~courtroom.comparison.plan.comparison_configs` takes."""


def read_plan(path: str | Path) -> dict[str, Any]:
    """The ``plan.json`` of a comparison folder (one line if ``path`` is not one)."""
    path = Path(path)
    try:
        plan = json.loads((path / PLAN).read_bytes().decode("utf-8"))
    except (OSError, ValueError):
        plan = None
    if not isinstance(plan, dict) or plan.get("kind") != "courtroom-comparison":
        old = " (written before comparisons could be resumed)" if (path / "comparison.json").is_file() else ""
        raise ConfigError(
            f"{path} is not a comparison folder that can be resumed (no {PLAN}{old}): "
            "pass a folder printed by `courtroom compare`"
        )
    return plan


def resume_comparison(
    out_dir: str | Path,
    *,
    lms: RoleLMs | None = None,
    progress: Callable[[str, ExampleResult], None] | None = None,
    on_start: Callable[[str, int], None] | None = None,
    budget: Any = None,
    **given: Any,
) -> Comparison:
    """Finish the comparison in ``out_dir``; ``given`` options must match its plan's, but for safe ones.

    ``given`` uses :func:`courtroom.comparison.compare.compare`'s names (``task``, ``frameworks``,
    ``limit``, ``knobs``, ``lm``, ...). Settings that only change how calls are made
    (``api_base``, ``timeout``, ``concurrency``, ``prices``, ``fail_on_error``) may differ; a
    comparison that ran with an ``api_base`` needs it again (it is never written to disk).
    """
    out_dir = Path(out_dir)
    plan = read_plan(out_dir)
    options = dict(plan["options"])
    stored = options | {"task": plan["task"], "frameworks": plan["frameworks"]}
    if given.get("frameworks") is not None:
        given["frameworks"] = list(dict.fromkeys(f.strip() for f in given["frameworks"] if f.strip()))
    if given.get("presets") is not None:
        given["presets"] = list(given["presets"])
    check_same(stored, {k: v for k, v in given.items() if k not in SAFE | {"out"}}, out_dir, what="comparison")
    for key in ("lm", "roles"):
        if given.get(key) and given[key] != options.get(key):
            from courtroom.spec import typed

            raise ConfigError(
                f"cannot resume {out_dir} with {typed(key, given[key])} (the comparison has "
                f"{typed(key, options.get(key))}): drop --lm/--role, or start a new comparison"
            )
    api_base = given.get("api_base")
    if lms is None:
        require_base_url(options, api_base, str(out_dir))
    safe = {k: given[k] for k in SAFE - {"api_base", "out"} if given.get(k) is not None}
    options |= safe
    rows = {k: tuple(v) for k, v in options["rows"].items()} if options.get("rows") else None
    configs = comparison_configs(
        plan["task"],
        plan["frameworks"],
        api_base=api_base,
        **{k: options[k] for k in CONFIG_KEYS if k != "rows"},
        rows=rows,
        splits=options.get("splits"),
        spec=plan.get("spec"),
    )
    for config in configs.values():
        config.out = str(out_dir)
    return run_comparison(
        out_dir,
        plan["task"],
        configs,
        repeats=int(options["repeats"]),
        roles=options["roles"],
        lms=lms,
        progress=progress,
        on_start=on_start,
        budget=budget,
        matched_baselines=options["matched_baselines"],
        baseline=options["baseline"],
        match=options["match"],
        ambiguity_k=options["ambiguity_k"],
        theta=options["theta"],
        concurrency=options["concurrency"],
        baseline_knobs=options.get("baseline_knobs"),
        plots=options.get("plots", True),
        resuming={"api_base": api_base} | safe,
    )
