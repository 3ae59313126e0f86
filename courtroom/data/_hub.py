"""Loading a Hub dataset, and failing in seconds, with the fix, when there is no network.

Without a network ``datasets`` retries each request for about half a minute. One quick
connection attempt to the Hub decides instead: when it fails, the Hub libraries go offline
(their local cache still serves a dataset loaded before) and a miss is one line naming the fix.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from typing import Any
from urllib.parse import urlparse

from courtroom.errors import DataError

PROBE_SECONDS = 3.0


def hub_reachable(timeout: float = PROBE_SECONDS) -> bool:
    """Whether a TCP connection to the Hub (``HF_ENDPOINT``) opens within ``timeout`` seconds.

    False at once in offline mode (``HF_HUB_OFFLINE``). The attempt runs in a thread, so a
    name lookup that hangs is bounded too.
    """
    if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    address = (url.hostname or "huggingface.co", url.port or (443 if url.scheme == "https" else 80))
    ok = threading.Event()

    def attempt() -> None:
        try:
            socket.create_connection(address, timeout=timeout).close()
            ok.set()
        except OSError:
            pass

    thread = threading.Thread(target=attempt, daemon=True, name="courtroom-hub-probe")
    thread.start()
    thread.join(timeout)
    return ok.is_set()


def go_offline() -> None:
    """Put ``huggingface_hub`` and ``datasets`` in offline mode (cache only, no retries)."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["HF_DATASETS_OFFLINE"] = "1"
    # Modules imported earlier read the variables at import time.
    hub: Any = sys.modules.get("huggingface_hub.constants")
    if hub is not None:
        hub.HF_HUB_OFFLINE = True
    config: Any = sys.modules.get("datasets.config")
    if config is not None:
        config.HF_HUB_OFFLINE = True
        if hasattr(config, "HF_DATASETS_OFFLINE"):
            config.HF_DATASETS_OFFLINE = True


def load_hub(path: str, config: str | None, split: str, *, task: str, has_generator: bool) -> Any:
    """``datasets.load_dataset(path, config, split=split)``, failing fast and clearly offline."""
    online = hub_reachable()
    if not online:
        go_offline()
    import datasets

    try:
        return datasets.load_dataset(path, config, split=split)
    except Exception as exc:
        fix = "pass --data PATH (a json, jsonl, csv or parquet file with the task's fields)"
        if has_generator:
            fix += " or --data generate"
        if not online:
            raise DataError(
                f"task {task} reads {path} ({config}) from the Hugging Face Hub, which is not reachable "
                f"and not in the local cache: {fix}"
            ) from exc
        raise DataError(
            f"cannot load {path} ({config}, split {split}) from the Hub: {str(exc).splitlines()[0][:160]}; {fix}"
        ) from exc
