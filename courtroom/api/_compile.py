"""The parts of :func:`courtroom.api.compile` (and of its dry run, :func:`courtroom.api.estimate`).

:func:`with_recipe` fills the spec from a study's recipe (``--config best.json``) and gives its models
per role; :func:`compile_estimate` prices the compile before any request; :func:`write_score_runs`
writes the dev and test evaluations before and after as run folders next to the saved program.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError

if TYPE_CHECKING:
    from courtroom.optimize.compile import CompileResult
    from courtroom.spec import Experiment

__all__ = ["compile_estimate", "with_recipe", "write_score_runs"]


def with_recipe(spec: Experiment, config: str | Path | Mapping[str, Any] | None) -> tuple[Experiment, Any]:
    """The spec with a study recipe's framework, task and knobs filled in; and its models per role."""
    from courtroom.optimize.recipes import read_config, recipe_data, recipe_models
    from courtroom.programs import check_roles, get_framework
    from courtroom.programs.presets import apply_preset, role_specs, sampling_temperatures

    recipe: Mapping[str, Any] = (read_config(config) if isinstance(config, str | Path) else config) or {}
    framework = spec.design.framework or recipe.get("framework")
    if spec.design.preset:
        framework = apply_preset(spec.design.preset, framework)[0]
    if not framework:
        raise ConfigError("name a framework: `courtroom compile jot ...`, a --preset, or --config best.json")
    if recipe.get("framework") and recipe["framework"] != framework:
        raise ConfigError(f"--config is for {recipe['framework']}, not {framework}")
    cls = get_framework(framework)
    check_roles(spec.models.roles, cls.roles)
    _, preset_knobs = apply_preset(spec.design.preset, framework) if spec.design.preset else (framework, {})
    from courtroom.spec._values import typed_knobs

    knobs = preset_knobs | dict(recipe.get("knobs") or {}) | typed_knobs(spec.design.knobs, cls.knobs())
    filled = {"framework": framework, "knobs": knobs}
    recorded_metric = ((recipe.get("spec") or {}).get("design") or {}).get("metric")
    if spec.design.metric is None and recorded_metric:  # what the study chose with, the compile optimises
        filled["metric"] = recorded_metric
    if not spec.data.task and not spec.data.dataset:
        filled |= recipe_data(recipe, spec.given)  # the study's data section, whole
    spec = spec.replace(**filled)
    m = spec.models
    default, roles = recipe_models(recipe, m.default, m.roles, m.temperature)
    if m.temperature is None and not recipe.get("temperatures"):
        # Roles the framework samples run at its (or the preset's, or the study's) temperature, as in `run`.
        roles = role_specs(roles, default, sampling_temperatures(cls, spec.design.preset or recipe.get("preset")))
    return spec, (default, roles)


def compile_estimate(spec: Experiment, models: tuple[Any, Mapping[str, Any]]) -> tuple[Any, str]:
    """The dry run of a compile: dev scored before and after, plus the optimizer's program runs."""
    from courtroom.cost.dry_run import estimate_compile
    from courtroom.optimize.optimizers import get_optimizer
    from courtroom.runner.config import RunConfig

    default, roles = models
    config = RunConfig.from_spec(spec, spec.design.framework)
    config.lm = None if default is None else str(getattr(default, "model", default))
    config.roles = {r: str(getattr(m, "model", m)) for r, m in roles.items()}
    optimizer = spec.design.optimizer or "bootstrap"
    settings = {**get_optimizer(optimizer).defaults, **dict(spec.design.optimizer_settings)}
    from courtroom.optimize.proof import DEFAULT_TEST_LIMIT

    train, dev = spec.data.train_limit or 20, spec.data.dev_limit or 20
    test = DEFAULT_TEST_LIMIT if spec.data.test_limit is None else spec.data.test_limit
    return estimate_compile(config, optimizer, settings, train=train, dev=dev, test=test, prices=spec.budget.table())


def write_score_runs(result: CompileResult, out: Path, spec: Experiment) -> dict[str, Path]:
    """The dev and test evaluations before and after as run folders next to the program (``show``, ``report``).

    Each folder's ``meta.json`` records the split's comparison (``compile_proof``: both accuracies
    with intervals, the difference with its interval, McNemar's p, the sentence).
    """
    import json
    import shutil

    from courtroom.eval.harness import summarize
    from courtroom.runner.config import RunConfig
    from courtroom.runner.runs import write_meta
    from courtroom.runner.summaries import summary_markdown
    from courtroom.saving import role_models

    task = result.metadata["task"]
    framework = str(spec.design.framework)
    limits = {"dev": spec.data.dev_limit, "test": spec.data.test_limit}
    written = {}
    for split, by_when in result.results.items():
        proof = result.gains[split].to_dict()
        for when, results in by_when.items():
            folder = out.with_name(f"{out.stem}-{split}-{when}")
            if (folder / "meta.json").is_file():
                shutil.rmtree(folder)  # the folder of an earlier compile to the same file
            folder.mkdir(parents=True, exist_ok=True)
            config = RunConfig.from_spec(spec, framework)
            config.split, config.limit = split, limits[split]
            compiled = when == "after" and result.kept == "optimized"
            write_meta(
                folder,
                config,
                framework_config=result.program.config(),
                models=role_models(result.program),
                task={"name": task["name"], "labels": task["labels"], "split": split, "source": task.get("source")},
                example_ids=[r.id for r in results],
                extra={"compiled": compiled, "compile_proof": proof, "kept": result.kept},
            )
            (folder / "results.jsonl").write_text("".join(json.dumps(r.to_dict()) + "\n" for r in results))
            summary = summarize(results, task["labels"], result.walls.get(split, {}).get(when, 0.0))
            (folder / "summary.json").write_text(json.dumps(summary, indent=2))
            title = f"{framework} on {task['name']}, {split} {when} compiling"
            (folder / "summary.md").write_text(summary_markdown(summary, title))
            written[f"{split} {when}"] = folder
    return written
