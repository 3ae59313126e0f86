"""Repeated runs (``--repeats R``): mean, standard deviation and a 95% confidence interval.

Repeat 0 is an ordinary run (it shares the cache with a plain ``courtroom run``). Repeat r > 0
uses *salted* copies of the role models: every call's ``rollout_id`` is offset by ``r``, so
its answers are fresh samples with their own cache entries (at temperature 0 a deterministic
provider answers the same; the spread then measures nothing but provider noise). Re-running
the same repeats is free, and an interrupted group resumes like a run.

A group folder holds ``group.json``, one run folder per repeat (``repeat-0``, ...) and
``repeats.json`` / ``repeats.md`` with the statistics.
"""

from __future__ import annotations

import datetime as _dt
import math
import statistics
import uuid
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from courtroom import _stop
from courtroom._files import read_json, write_atomic, write_json
from courtroom._lock import FolderLock
from courtroom.errors import ConfigError
from courtroom.eval.harness import ExampleResult
from courtroom.models.cache import require_base_url, without_base_url
from courtroom.models.lms import RoleLMs
from courtroom.runner.config import RunConfig
from courtroom.runner.resume import check_same, resume
from courtroom.runner.runs import RunOutcome, run

STAT_METRICS = ("accuracy", "macro_f1", "failures", "calls", "sent", "tokens", "cost", "wall_seconds")


def mean_sd_ci(
    values: Sequence[float | None],
    level: float = 0.95,
    bounds: tuple[float | None, float | None] = (None, None),
) -> dict[str, float | int | None]:
    """Mean, sample standard deviation and a Student-t confidence interval of the mean.

    ``bounds`` clips the interval to the metric's range (accuracy cannot leave [0, 1]).
    """
    vals = [float(v) for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    n = len(vals)
    if n == 0:
        return {"n": 0, "mean": None, "sd": None, "ci_low": None, "ci_high": None}
    mean = statistics.fmean(vals)
    if n == 1:
        return {"n": 1, "mean": mean, "sd": 0.0, "ci_low": None, "ci_high": None}
    from scipy.stats import t

    sd = statistics.stdev(vals)
    half = float(t.ppf(0.5 + level / 2, n - 1)) * sd / math.sqrt(n)
    low, high = mean - half, mean + half
    if bounds[0] is not None:
        low = max(low, bounds[0])
    if bounds[1] is not None:
        high = min(high, bounds[1])
    return {"n": n, "mean": mean, "sd": sd, "ci_low": low, "ci_high": high}


SCORES = ("accuracy", "macro_f1")
"""Metrics whose interval is a bootstrap over cases and repeats (:func:`case_repeat_ci`)."""
OVER_BOTH = "cases and repeats (bootstrap)"
OVER_REPEATS = "repeats (t)"


def repeat_stats(
    summaries: Sequence[dict[str, Any]],
    results: Sequence[Sequence[ExampleResult]] | None = None,
    labels: Sequence[str] | None = None,
) -> dict[str, dict[str, Any]]:
    """Per metric: mean and sd over the repeats, and a 95% CI.

    With each repeat's ``results`` (and the task's ``labels``), the accuracy and macro-F1 intervals
    are a seeded bootstrap over cases and repeats (:func:`case_repeat_ci`): they cover the case
    sample as well as the answers' spread, as a figure measured on other cases would. The other
    metrics' (calls, tokens, cost, seconds), and every metric's without results, are Student-t
    intervals over the repeats alone. ``over`` says which each is.
    """
    out: dict[str, dict[str, Any]] = {}
    for m in STAT_METRICS:
        stats: dict[str, Any] = dict(
            mean_sd_ci([s.get(m) for s in summaries], bounds=(0.0, 1.0 if m in SCORES else None))
        )
        stats["over"] = OVER_REPEATS
        if m in SCORES and results and labels and stats["mean"] is not None:
            low, high = case_repeat_ci(results, labels, m)
            stats |= {"ci_low": low, "ci_high": high, "over": OVER_BOTH}
        out[m] = stats
    return out


def case_repeat_ci(
    results: Sequence[Sequence[ExampleResult]],
    labels: Sequence[str],
    metric: str = "accuracy",
    *,
    level: float = 0.95,
    draws: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``metric`` over cases and repeats (two stages, seeded).

    Each draw resamples the cases (with replacement), then for each drawn case resamples its
    repeats (with replacement), and scores the pooled answers. Cases are matched across repeats
    by id; a case missing from a repeat is left out of every repeat.
    """
    import numpy as np

    by_id = [{r.id: r for r in rs} for rs in results]
    ids = [i for i in by_id[0] if all(i in b for b in by_id[1:])]
    if not ids:
        return (math.nan, math.nan)
    index = {lab: k for k, lab in enumerate(labels)}
    failed = len(labels)  # a failure or an unknown label counts as a wrong answer of its own
    gold = np.array([index.get(by_id[0][i].gold, failed) for i in ids])
    pred = np.array([[index.get(b[i].prediction or "", failed) for b in by_id] for i in ids])  # case x repeat
    n, reps = pred.shape
    rng = np.random.default_rng(seed)
    width = len(labels) + 1
    values = np.empty(draws)
    block = max(1, min(draws, 2_000_000 // (n * reps)))  # draws scored at once: bounded memory
    for first in range(0, draws, block):
        size = min(block, draws - first)
        cases = np.empty((size, n), dtype=np.int64)
        repeats = np.empty((size, n, reps), dtype=np.int64)
        for d in range(size):  # the draws' order, one draw after another, as the seed gives them
            cases[d] = rng.integers(0, n, n)
            repeats[d] = rng.integers(0, reps, (n, reps))
        picks = pred[cases[:, :, None], repeats].reshape(size, n * reps)
        golds = np.repeat(gold[cases], reps, axis=1)
        if metric == "accuracy":
            values[first : first + size] = np.mean(golds == picks, axis=1)
            continue
        cells = golds * width + picks + (np.arange(size) * width * width)[:, None]
        conf = np.bincount(cells.ravel(), minlength=size * width * width).reshape(size, width, width)
        hit = np.diagonal(conf, axis1=1, axis2=2)[:, : len(labels)]
        denom = conf.sum(axis=1)[:, : len(labels)] + conf.sum(axis=2)[:, : len(labels)]
        f1 = np.divide(2 * hit, denom, out=np.zeros(hit.shape), where=denom > 0)
        values[first : first + size] = f1.mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(values, [tail, 100 - tail])
    return float(low), float(high)


def stats_markdown(stats: dict[str, dict[str, Any]], title: str) -> str:
    """The statistics as a Markdown table."""

    def f(x: Any) -> str:
        return "n/a" if x is None else f"{x:.4g}"

    lines = [f"# {title}", "", "| metric | mean | sd | 95% CI | CI over | n |", "|---|---|---|---|---|---|"]
    for m, s in stats.items():
        ci = "n/a" if s["ci_low"] is None else f"[{f(s['ci_low'])}, {f(s['ci_high'])}]"
        lines.append(f"| {m} | {f(s['mean'])} | {f(s['sd'])} | {ci} | {s.get('over', OVER_REPEATS)} | {s['n']} |")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class RepeatOutcome:
    """A finished group of repeats (``courtroom.run(..., repeats=R)``); read as a run (``run_dir``, ``summary``)."""

    group_dir: Path
    """The group's folder: ``group.json``, ``repeats.json``/``.md`` and one run folder per repeat."""
    outcomes: list[RunOutcome]
    """Each repeat's run, in order."""
    stats: dict[str, dict[str, Any]]
    """Metric -> ``mean``, ``sd``, ``ci_low``, ``ci_high`` (95%) and ``n`` over the repeats."""

    @property
    def run_dir(self) -> Path:
        """The group's folder (``group_dir``), where a single run has its run folder."""
        return self.group_dir

    @property
    def summary(self) -> dict[str, Any]:
        """Each metric's mean over the repeats (``stats`` has the spread), the examples ``n`` and ``repeats``."""
        means = {metric: s["mean"] for metric, s in self.stats.items()}
        n = self.outcomes[0].summary.get("n") if self.outcomes else 0
        return means | {"n": n, "repeats": len(self.outcomes)}


def is_repeat_group(path: str | Path) -> bool:
    """Whether ``path`` is a folder written by :func:`run_repeats`."""
    return (Path(path) / "group.json").is_file()


def _finish(group: Path, config: RunConfig, outcomes: list[RunOutcome]) -> RepeatOutcome:
    meta = outcomes[0].run_dir / "meta.json" if outcomes else None
    task = read_json(meta, "").get("task") if meta is not None and meta.is_file() else None
    labels = list(task.get("labels") or []) if isinstance(task, dict) else None
    stats = repeat_stats([o.summary for o in outcomes], [list(o.results) for o in outcomes], labels)  # read once each
    write_json(group / "repeats.json", {"stats": stats, "runs": [o.run_dir.name for o in outcomes]})
    title = f"{config.framework} on {config.task}: {len(outcomes)} repeats"
    write_atomic(group / "repeats.md", stats_markdown(stats, title))
    return RepeatOutcome(group, outcomes, stats)


def run_repeats(
    config: RunConfig,
    repeats: int,
    *,
    lms: RoleLMs | None = None,
    progress: Callable[[int, ExampleResult], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    budget: Any = None,
    group_dir: Path | None = None,
) -> RepeatOutcome:
    """Run ``config`` ``repeats`` times (repeat r salted by r) into one group folder.

    A ``budget`` (:class:`courtroom.cost.budget.Budget`) is shared by the repeats, run in order.
    ``group_dir`` (a new folder) replaces the generated ``{created}_{framework}_{task}_x{R}_{id}``.
    """
    if repeats < 1:
        raise ConfigError(f"--repeats must be >= 1, got {repeats}")
    created = _dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    name = config.task.replace("/", "-") if not config.dataset else "custom"
    group = group_dir or Path(config.out) / f"{created}_{config.framework}_{name}_x{repeats}_{uuid.uuid4().hex[:6]}"
    group.mkdir(parents=True)
    write_json(group / "group.json", {"repeats": repeats, "config": without_base_url(asdict(config))})
    with FolderLock(group, what="repeat group"):
        return _run_group(group, config, repeats, lms, progress, on_start, resuming=False, budget=budget)


def _run_group(
    group: Path,
    config: RunConfig,
    repeats: int,
    lms: RoleLMs | None,
    progress: Callable[[int, ExampleResult], None] | None,
    on_start: Callable[[int, int], None] | None,
    *,
    resuming: bool,
    budget: Any = None,
    **overrides: Any,
) -> RepeatOutcome:
    """Run (or, ``resuming``, finish) each repeat in order; a stop at the budget names the group."""
    from courtroom.cost.budget import BudgetExhausted

    outcomes = []
    with _stop.saving_to(group):
        for r in range(repeats):
            folder = group / f"repeat-{r}"
            hooks: dict[str, Any] = {
                "progress": (lambda res, r=r: progress(r, res)) if progress else None,
                "on_start": (lambda n, r=r: on_start(r, n)) if on_start else None,
                "budget": budget,
            }
            try:
                if resuming and (folder / "meta.json").is_file():
                    outcomes.append(resume(folder, lms=lms, **hooks, **overrides))
                else:
                    outcomes.append(run(replace(config, repeat=r), lms=lms, run_dir=folder, **hooks))
            except BudgetExhausted as stop:
                raise stop.regroup(group, repeats - r - 1) from None
    return _finish(group, config, outcomes)


def resume_repeats(
    group_dir: str | Path,
    *,
    lms: RoleLMs | None = None,
    progress: Callable[[int, ExampleResult], None] | None = None,
    on_start: Callable[[int, int], None] | None = None,
    budget: Any = None,
    **overrides: Any,
) -> RepeatOutcome:
    """Finish an interrupted group: finished repeats are read back, the others resumed or run."""
    group = Path(group_dir)
    if not is_repeat_group(group):
        raise ConfigError(f"{group} is not a repeat group (no group.json)")
    info = read_json(group / "group.json", "start a new group (its finished runs stay readable)")
    known = set(RunConfig.__dataclass_fields__)
    config = RunConfig(**{k: v for k, v in info["config"].items() if k in known})
    check_same(info["config"], {k: v for k, v in overrides.items() if k != "knobs"}, group)
    for key, value in overrides.items():
        if value is not None and value != {} and key in known and key != "knobs":
            setattr(config, key, value)
    if lms is None:
        require_base_url(info["config"], config.api_base, str(group))
    with FolderLock(group, what="repeat group"):
        return _run_group(
            group, config, int(info["repeats"]), lms, progress, on_start, resuming=True, budget=budget, **overrides
        )
