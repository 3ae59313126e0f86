"""The ambiguity split (Courtroom-LLM paper): hear each case K times, split accuracy by agreement.

:func:`run_ambiguity` does it for one run folder, :func:`split_comparison` once for a whole
comparison; the hearing is Courtroom-LLM's clerk (:func:`hearing_votes`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.analysis import papers as analysis
from courtroom.eval.harness import ExampleResult
from courtroom.models.cache import require_base_url
from courtroom.models.lms import RoleLMs
from courtroom.runner.config import RunConfig
from courtroom.runner.runs import RunSetup, load_run

logger = logging.getLogger(__name__)


def hearing_votes(
    config: RunConfig,
    cases: Mapping[str, str],
    k: int = 5,
    *,
    lms: RoleLMs | None = None,
    concurrency: int | None = None,
) -> dict[str, list[str | None]]:
    """The preliminary hearing K times on each case (example id -> labels; None for a failed sample).

    The hearing is Courtroom-LLM's clerk on ``config``'s data and models (its ``clerk`` role), so
    sample 0 shares the cache with a Courtroom-LLM run's own hearing.
    """
    known = {f for f in RunConfig.__dataclass_fields__}
    hearing = RunConfig(
        **{key: v for key, v in vars(config).items() if key in known}
        | {"framework": "courtroom-llm", "knobs": {"k_precedents": 0}, "preset": None, "limit": config.limit}
        | {"debias": None}
    )
    hearing.roles = {r: m for r, m in config.roles.items() if r == "clerk"}
    program = RunSetup.build(hearing, lms).program
    if program.temperature_of("clerk") == 0:
        logger.warning("the ambiguity split hears each case %d times at temperature 0: the samples will agree", k)
    return analysis.run_hearings(
        analysis.clerk_hearing(program), cases, k, concurrency=concurrency or config.concurrency
    )


def run_ambiguity(
    run_dir: str | Path,
    k: int = 5,
    theta: float = 0.5,
    *,
    lms: RoleLMs | None = None,
    concurrency: int | None = None,
    api_base: str | None = None,
) -> pd.DataFrame:
    """Hear every case of a run K times; write ``ambiguity.json``; return the split of its results.

    Any framework's run works: the hearing is Courtroom-LLM's clerk on the run's data and models
    (``lms`` replaces them, e.g. fakes). A run that used an ``api_base`` needs it again (base
    URLs are never written to disk).
    """
    run_dir = Path(run_dir)
    meta, rows, _ = load_run(run_dir)
    known = set(RunConfig.__dataclass_fields__)
    config = RunConfig(**{key: v for key, v in meta["config"].items() if key in known})
    config.api_base = api_base or config.api_base
    if lms is None:
        require_base_url(meta["config"], config.api_base, str(run_dir))
    votes = hearing_votes(config, {r["id"]: r["input"] for r in rows}, k, lms=lms, concurrency=concurrency)
    (run_dir / "ambiguity.json").write_text(json.dumps({"k": k, "theta": theta, "votes": votes}, indent=2))
    mode = (meta.get("framework_config") or {}).get("judge_mode", "parallel")
    return analysis.ambiguity_split(rows, votes, theta, mode)


def split_comparison(
    out_dir: Path,
    analyses: dict[str, dict[str, Any]],
    results: Mapping[str, Sequence[ExampleResult]],
    configs: Mapping[str, RunConfig],
    lms: RoleLMs | None,
    k: int,
    theta: float,
    concurrency: int,
) -> None:
    """Hear each case K times, once for a whole comparison, and split every row's ``results`` by it.

    Writes ``ambiguity.json`` and adds each row's split to ``analyses`` (rewriting ``analyses.json``).
    """
    # A Courtroom-LLM row's models hear the cases (its own hearing is sample 0); else the first row's.
    first = next((f for f, c in configs.items() if c.framework == "courtroom-llm"), next(iter(configs)))
    cases = {r.id: r.input for r in results[first]}
    votes = hearing_votes(configs[first], cases, k, lms=lms, concurrency=concurrency)
    (out_dir / "ambiguity.json").write_text(json.dumps({"k": k, "theta": theta, "votes": votes}, indent=2))
    for f, rows in results.items():
        mode = configs[f].knobs.get("judge_mode", "parallel")
        analyses[f]["ambiguity"] = analysis.ambiguity_split(rows, votes, theta, mode).to_dict("records")
    (out_dir / "analyses.json").write_text(json.dumps(analyses, indent=2))
