"""``--cancel-batches``, shared by ``run`` and ``compare``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from courtroom.spec import Experiment


def cancel_in_flight(folder: Path | None, spec: Experiment) -> None:
    """``--cancel-batches``: cancel the batches the folder has in flight, one line each."""
    from courtroom.errors import ConfigError
    from courtroom.reporting.tables import to_stderr
    from courtroom.runner.batches import cancel

    if folder is None:
        raise ConfigError("--cancel-batches needs the folder: courtroom run --resume RUN_DIR --cancel-batches")
    done = cancel(folder, spec.models.api_base)
    for run_dir, batch_id, status in done:  # no id: a batch that may exist unrecorded, and what to look for
        to_stderr(f"{run_dir.name}: batch {batch_id} {status}" if batch_id else f"{run_dir.name}: {status}")
    done = [d for d in done if d[1]]
    to_stderr(f"cancelled {len(done)} batch(es) in flight; `--resume` without --cancel-batches sends what is left")
