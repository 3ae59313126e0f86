"""Salted models: the same model, with every call's ``rollout_id`` offset so answers are fresh samples.

Repeats (salt r for repeat r) use them: a salted request has its own cache entry, so it is sent
afresh, while re-running the same salt is free.
"""

from __future__ import annotations

from typing import Any

from courtroom.models.lms import RoleLMs
from courtroom.models.panels import Panel

SALT = 1_000_003
_salted_classes: dict[type, type] = {}


def _salted_class(cls: type) -> type:
    if cls not in _salted_classes:

        def __call__(self: Any, prompt: Any = None, *, messages: Any = None, **kwargs: Any) -> Any:
            kwargs["rollout_id"] = self.courtroom_salt * SALT + int(kwargs.get("rollout_id") or 0)
            return cls.__call__(self, prompt, messages=messages, **kwargs)

        salted = type(f"Salted{cls.__name__}", (cls,), {"__call__": __call__, "__module__": __name__})
        _salted_classes[cls] = salted
    return _salted_classes[cls]


def salted_lm(lm: Any, salt: int) -> Any:
    """A copy of ``lm`` whose calls carry ``rollout_id`` offset by ``salt`` (distinct cache entries)."""
    twin = lm.copy()
    twin.__class__ = _salted_class(type(lm))
    twin.courtroom_salt = int(salt)
    return twin


def salted_roles(lms: RoleLMs, salt: int) -> RoleLMs:
    """The role map with every model salted; roles that shared one model still share its copy."""
    copies: dict[int, Any] = {}

    def salted(lm: Any) -> Any:
        if isinstance(lm, Panel):
            return Panel(salted(m) for m in lm)
        if id(lm) not in copies:
            copies[id(lm)] = salted_lm(lm, salt)
        return copies[id(lm)]

    return RoleLMs({role: salted(lm) for role, lm in lms.items()})
