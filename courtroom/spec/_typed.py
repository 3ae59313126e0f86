"""A setting as a user types it, for error texts: ``--dataset task.yaml``, ``--role judge=m``, ``no --role``.

Errors that compare settings (a resume, a continued study) name what differs in the words of the
command line, never as the Python value it is stored as (``{'task_file': 'task.yaml'}``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from courtroom.spec._experiment import FLAGS, _text

_STORED = {
    "splits": "--split-sizes",
    "models": "--lm",
    "train": "--train-limit",
    "dev": "--dev-limit",
    "preset": "--preset",
    "cost": "--cost-unit",
}
"""Keys of stored configs (``RunConfig``, ``StudyConfig``) whose flag is not ``--key``."""

BARE = frozenset({"framework", "frameworks", "task"})
"""Settings given as arguments or names, not flags: shown as ``framework jot``."""


def typed(name: str, value: Any) -> str:
    """``name`` (a flag, a spec field or a stored config's key) set to ``value``, as it is typed."""
    if name in BARE:
        return f"{name} {'none' if value in (None, '') else _text(value)}"
    flag = name if name.startswith("--") else FLAGS.get(name) or _STORED.get(name) or "--" + name.replace("_", "-")
    if flag == "--dataset" and isinstance(value, Mapping):
        return _dataset(value)
    if flag == "--split-sizes" and isinstance(value, Mapping):
        sizes = [f"--split-sizes {_text(value['sizes'])}"] if value.get("sizes") else []
        files = [f"--{split}-data {path}" for split, path in (value.get("files") or {}).items()]
        return " ".join(sizes + files) or "no --split-sizes"
    if value is None or value == "" or (isinstance(value, Mapping | list | tuple) and not value):
        return f"no {flag}"
    if isinstance(value, bool):
        return flag if value else f"no {flag}"
    if isinstance(value, Mapping):
        return " ".join(f"{flag} {k}={_text(v)}" for k, v in value.items())
    if isinstance(value, list | tuple) and flag in ("--lm", "--preset"):
        return " ".join(f"{flag} {_text(v)}" for v in value)
    return f"{flag} {_text(value)}"


def _dataset(value: Mapping[str, Any]) -> str:
    """``--dataset``'s stored arguments (a task file, or a file or Hub id with its fields) as flags."""
    if "task_file" in value:
        return f"--dataset {value['task_file']}"
    out = [f"--dataset {value.get('dataset')}"]
    for key, flag in (("text_fields", "--text-field"), ("label_field", "--label-field"), ("labels", "--labels"),
                      ("config", "--dataset-config")):  # fmt: skip
        if value.get(key):
            out.append(f"{flag} {_text(value[key])}")
    if value.get("hub_split") not in (None, "train"):
        out.append(f"--hub-split {value['hub_split']}")
    return " ".join(out)


__all__ = ["typed"]
