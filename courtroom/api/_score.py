"""``courtroom score PROGRAM``: a saved program scored on labelled data (:func:`courtroom.api.score`).

The program runs as one row of a comparison, through the harness ``run`` uses (results, transcripts,
cost), and a majority vote at the program's calls per case runs beside it on the same cases, paired
by example with McNemar's exact test, as in ``compare``. The score folder
(``{created}_score_{task}_{id}``) is a comparison folder (``report`` reads it, ``compare --resume``
finishes it); the program's run folder inside it is a run folder (``show``, ``report``).

Data: the options ``run`` takes. With none, the data the program was compiled on, scored on its
test split (the split the compile held out). A ``--dataset`` other than the program's is scored
whole, every row, unless a split option says otherwise. A scored case whose text is also in the
program's train or dev split (as its file records them) is counted, with a warning, in the
summary's ``seen``; ``--exclude-seen`` leaves such cases out of both rows. Models: the program's saved role models,
unless ``lm`` replaces them all or ``roles`` some.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from courtroom.errors import ConfigError
from courtroom.spec import DATA_SOURCE

if TYPE_CHECKING:
    import pandas as pd

    from courtroom.comparison.table import Comparison
    from courtroom.cost.estimate import Estimate
    from courtroom.spec import Experiment

__all__ = ["ScoreOutcome", "run_score", "score_estimate"]

logger = logging.getLogger(__name__)

SPLIT_FIELDS = ("train_data", "dev_data", "test_data", "split_sizes", "seed")


@dataclass
class ScoreOutcome:
    """A scored program: its summary, its row beside the matched vote, and the folders."""

    out_dir: Path
    """The score folder, a comparison folder (``courtroom report``, ``courtroom compare --resume``)."""
    run_dir: Path
    """The program's run folder (``courtroom show``, ``courtroom report``)."""
    row: str
    """The program's row in :attr:`table` (the program file's name)."""
    summary: dict[str, Any]
    """The program's ``summary.json``: accuracy, macro-F1, n, failures, calls, tokens, cost, ..."""
    comparison: Comparison
    """The comparison: ``table`` (the program's row and its matched vote row), ``analyses``, ``failed``."""

    @property
    def table(self) -> pd.DataFrame:
        """One row for the program, one for its matched vote (``matched_vote``, ``mcnemar_p`` on the program's)."""
        return self.comparison.table

    @property
    def accuracy(self) -> float:
        """The program's accuracy on the scored cases (a failed case counts as wrong)."""
        return float(self.summary["accuracy"])

    @property
    def interval(self) -> tuple[float, float]:
        """The 95% Wilson interval of :attr:`accuracy` over the cases (their sampling variance)."""
        from courtroom.eval.metrics import wilson

        return wilson(self.accuracy, int(self.summary["n"]))

    @property
    def seen(self) -> dict[str, int] | None:
        """Scored cases the program saw while compiling (``train``, ``dev``) and those ``left_out``; None: unchecked."""
        return self.summary.get("seen")

    @property
    def matched_vote(self) -> str | None:
        """The vote row at the program's calls per case (e.g. ``self-consistency k=9``), or None."""
        vote = self.table.at[self.row, "matched_vote"] if "matched_vote" in self.table.columns else None
        return None if vote is None or vote != vote else str(vote)


OWN_TASK = ("task", "dataset", "text_field", "label_field", "labels", "dataset_config", "hub_split")
"""The data fields that say which task (and, for a dataset, its shape): the program's own unless named."""
SHAPE = ("text_field", "label_field", "labels")
"""A dataset's fields and labels: a file of the program's shape takes the program's."""


def own_task(spec: Experiment, meta: Mapping[str, Any]) -> Experiment:
    """``spec`` reading the program's own task whenever neither ``--task`` nor ``--dataset`` names one.

    ``--data FILE``, split files and sizes then apply to the program's task, not the default one;
    a ``--dataset`` without fields is read as the program's dataset was (its fields and labels).
    """
    recorded = dict((meta.get("spec") or {}).get("data") or {})
    if not spec.given & {"task", "dataset"}:
        own = {k: recorded[k] for k in OWN_TASK if k in recorded}
        if not own.get("task") and not own.get("dataset"):
            task = str((meta.get("task") or {}).get("name") or "")
            if not task or task.startswith("custom:"):
                raise ConfigError("the program does not record its data: name it with --task or --dataset FILE")
            own = {"task": task}
        spec = spec.replace(**own)
    elif spec.data.dataset and not spec.given & set(SHAPE) and recorded.get("dataset"):
        spec = spec.replace(**{k: recorded[k] for k in SHAPE if recorded.get(k)})
    if spec.data.dataset and not spec.data.dataset.lower().endswith((".yaml", ".yml")):
        spec.data.check_fields()  # none recorded either: the flags to add, as every command says
    return spec


def scored_spec(spec: Experiment, meta: dict[str, Any]) -> Experiment:
    """``spec`` with its data settled: the program's own (test split) when none is named, a new file whole."""
    recorded = dict((meta.get("spec") or {}).get("data") or {})
    if not spec.given & set(DATA_SOURCE):
        if recorded:
            return spec.replace(**{k: recorded[k] for k in DATA_SOURCE if k in recorded})
    spec = own_task(spec, meta)
    d = spec.data
    # A file given with --dataset, or with --data for a registered task's rows.
    file, own = (d.dataset, recorded.get("dataset")) if d.dataset else (d.source, recorded.get("source"))
    if file not in SOURCES and d.split == "test" and not spec.given & set(SPLIT_FIELDS):
        if own and _same_file(own, file):
            # The program's own file: its held-out split, cut as the compile cut it.
            return spec.replace(**{k: recorded.get(k) for k in SPLIT_FIELDS if k in recorded})
        return spec.replace(split_sizes=[0.0, 0.0, 1.0])  # a file of its own: every row is held out
    return spec


SOURCES = ("auto", "generate", "hub")
"""``--data`` values that name no file."""


def _same_file(a: str, b: str) -> bool:
    pa, pb = Path(a).expanduser(), Path(b).expanduser()
    return pa.resolve() == pb.resolve() if pa.exists() and pb.exists() else a == b


def scored_models(spec: Experiment, meta: dict[str, Any], ready: bool = False) -> tuple[str | None, dict[str, Any]]:
    """(default model, role -> model): the program's saved ones, replaced by ``lm`` (all) or ``roles`` (some).

    ``ready``: the models are given as objects (``lms=``), so saved names are only recorded.
    """
    from courtroom.programs import get_framework

    roles_of = get_framework(str(meta["framework"])).roles
    if spec.models.lm:
        return spec.models.default, dict(spec.models.roles)
    saved = dict(meta.get("models") or {})
    default = saved.pop("default", None)
    named = [m for v in saved.values() for m in (v if isinstance(v, list) else [v])]
    if not ready and any(str(m).startswith("fake/") for m in [*named, default]):
        raise ConfigError("the program was compiled on test fakes: pass --lm MODEL (or lms=...)")
    kept = {r: m for r, m in saved.items() if r in roles_of and m != default}
    return default, kept | dict(spec.models.roles)


def _plan(spec: Experiment, program: str | Path, ready: bool = False) -> tuple[Experiment, dict[str, Any]]:
    """The settled spec and ``compare``'s keywords for the program's row."""
    from courtroom.comparison.options import compare_options
    from courtroom.saving import read_program_file

    _, meta = read_program_file(program)
    framework = str(meta["framework"])
    spec = scored_spec(spec, meta)
    lm, roles = scored_models(spec, meta, ready)
    spec = spec.replace(frameworks=[framework], lm=[lm] if lm else [], roles=roles)
    opts = compare_options(spec, [framework])
    for key in ("ambiguity_k", "theta", "debias", "presets"):
        opts.pop(key, None)
    name = Path(program).stem
    saved = {"path": str(Path(program).resolve()), "checksum": meta.get("checksum")}
    opts |= {
        "frameworks": [name],
        "rows": {name: (framework, dict(meta.get("config") or {}), meta.get("preset"), saved)},
        "out": spec.output.out or "runs",
        "lm": lm,
        "roles": roles,
        "knobs": {},
        "repeats": 1,
        "plots": False,
    }
    opts["splits"] = _checked_against(meta, opts.get("splits"), spec.data.exclude_seen, program)
    sizes = spec.data.split_sizes
    if sizes is not None and not sizes[0] and not spec.data.train_data:
        opts["baseline_knobs"] = {"k_shots": 0}  # no train split to draw the vote's demos from: zero-shot samples
    return spec, opts


def _checked_against(
    meta: Mapping[str, Any], splits: Mapping[str, Any] | None, exclude: bool, program: str | Path
) -> dict[str, Any] | None:
    """The rows' ``splits`` with the program's train and dev cases to check the scored ones against.

    Every row (the program's and its vote's) loads its cases with them, so both count (or, with
    ``exclude``, leave out) the same ones (:func:`courtroom.data.tasks.load_task`).
    """
    seen = (meta.get("task") or {}).get("seen_cases")
    if not seen:
        if exclude:
            raise ConfigError(
                f"{program} does not record its train and dev cases (compiled by an earlier version): "
                "recompile it to use --exclude-seen"
            )
        logger.warning("%s does not record its train and dev cases: overlap with them is not checked", program)
        return dict(splits) if splits else None
    base = dict(splits) if splits else {"sizes": None, "files": {}}
    return base | {"seen": {k: list(v) for k, v in seen.items()}, "leave_out_seen": exclude}


def score_estimate(spec: Experiment, program: str | Path) -> dict[str, Estimate]:
    """The dry run of a score: the program's row and its matched vote row, nothing sent."""
    from courtroom.comparison.plan import comparison_configs
    from courtroom.cost.dry_run import estimate_comparison

    _, opts = _plan(spec, program)
    plan = {k: opts.pop(k) for k in ("matched_baselines", "baseline", "match", "baseline_knobs") if k in opts}
    for key in ("repeats", "spec", "out", "plots"):
        opts.pop(key)
    task = opts.pop("task")
    return estimate_comparison(comparison_configs(task, opts.pop("frameworks"), **opts), **plan)


def run_score(
    spec: Experiment, program: str | Path, *, lms: Any = None, budget: Any = None, hooks: Mapping[str, Any]
) -> ScoreOutcome:
    """Score ``program`` as ``spec`` says (validated by :func:`courtroom.api.score`): the row, its vote, the folder."""
    from courtroom._files import read_json
    from courtroom.comparison.compare import compare

    spec, opts = _plan(spec, program, ready=lms is not None)
    comparison = compare(
        opts.pop("task"), opts.pop("frameworks"), kind="score", budget=budget, lms=lms, **hooks, **opts
    )
    row = Path(program).stem
    run_dir = comparison.out_dir / comparison.runs[row]
    summary = read_json(run_dir / "summary.json", "score the program again")
    return ScoreOutcome(comparison.out_dir, run_dir, row, summary, comparison)
