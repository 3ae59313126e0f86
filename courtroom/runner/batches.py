"""``--cancel-batches``: cancel, at the provider, the batches a run or comparison folder has in flight.

Each run folder records its batches (``batches.jsonl``, :mod:`courtroom.models.batch`); the
folder's own models (and the ``--api-base`` given again: it is never on disk) reach the provider.
"""

from __future__ import annotations

import os
from pathlib import Path

from courtroom.errors import ConfigError
from courtroom.models.batch import FILE, cancel_batches, check_names
from courtroom.models.cache import require_base_url
from courtroom.models.lms import resolve_roles
from courtroom.models.panels import split_models
from courtroom.runner.runs import load_run


def cancel(folder: str | Path, api_base: str | None = None) -> list[tuple[Path, str, str]]:
    """Cancel what every run folder under ``folder`` has in flight: (run folder, batch id, status after)."""
    root = Path(folder)
    logs = sorted(root.rglob(FILE)) if root.is_dir() else []
    if not logs:
        raise ConfigError(f"{root} records no batches ({FILE}): nothing to cancel; was it run with --batch?")
    out = []
    for log in logs:
        run_dir = log.parent
        meta, _, _ = load_run(run_dir)
        config = meta["config"]
        require_base_url(config, api_base, str(run_dir))
        names = [config.get("lm") or os.environ.get("COURTROOM_LM", "local"), *(config.get("roles") or {}).values()]
        base = check_names([m for value in names for m in split_models(str(value))], api_base)
        lms = resolve_roles(config.get("lm"), config.get("roles") or {}, api_base=base)
        out += [(run_dir, batch_id, status) for batch_id, status in cancel_batches(run_dir, lms.models())]
    return out
