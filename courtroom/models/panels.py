"""Mixed-model panels: one role served by several models (juries of model families, arXiv 2404.18796).

A :class:`Panel` is the value a role takes in the role map when it names several models
(``--role judge=a/x,b/y,c/z``, or ``roles={"judge": [...]}``). The programs tell each call of a
role its index among that role's repeated calls in one decision (the ``rollout`` they already
pass to ``ask``: judge i, sample i, debater i, round r); call ``i`` runs on member
``i mod len(panel)``. Calls without an index (a role called once) run on the first member.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class Panel(tuple):
    """Several LMs for one role, in rotation order."""

    def __new__(cls, members: Iterable[Any]) -> Panel:  # noqa: D102
        return super().__new__(cls, tuple(members))

    def pick(self, call: int | None) -> Any:
        """The member that serves call ``call`` of the role (``None`` -> the first)."""
        return self[int(call or 0) % len(self)]

    def copy(self, **kwargs: Any) -> Panel:
        """Every member copied with ``kwargs`` (as ``dspy.LM.copy`` takes them)."""
        return Panel(m.copy(**kwargs) for m in self)

    def __deepcopy__(self, memo: dict[int, Any]) -> Panel:
        return self

    def __repr__(self) -> str:
        return "Panel(" + ", ".join(str(getattr(m, "model", m)) for m in self) + ")"


def members(value: Any) -> tuple[Any, ...]:
    """The LMs behind a role-map value: a panel's members, or the one LM."""
    return tuple(value) if isinstance(value, Panel) else (value,)


def split_models(text: str) -> list[str]:
    """``"a/x,b/y"`` -> ``["a/x", "b/y"]`` (model names hold no commas)."""
    return [m.strip() for m in text.split(",") if m.strip()]
