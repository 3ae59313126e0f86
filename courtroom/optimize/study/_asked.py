"""Which models did a trial's mixed panel ask? A panel that asked only its first model is that model.

A study with several models lets a role that is called several times in one decision choose the
mixed panel of them all (``model:judge=a,b``, :func:`~courtroom.optimize.study.spaces.build_space`):
call ``i`` of the role goes to member ``i mod n`` (:mod:`courtroom.models.panels`). A configuration
that calls the role once per decision (one voter, one judge) asks only the panel's first member:
its questions and answers are those of the configuration that names that model alone, so the two
are one configuration, and the tied set counts them once (:mod:`.tied`).

Whether a role is called more than once depends on the framework and its knobs, so it is recorded
as it happens rather than predicted: each searched panel of a trial's program notes the members
that served a call (user attribute :data:`ASKED`, role -> member indices), a call answered from
the cache included. A trial without the record (made before it was kept) keeps its panel.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any

from courtroom.models.panels import Panel, split_models
from courtroom.optimize.study.spaces import MODEL

ASKED = "asked"
"""User attribute: role -> the indices of its searched panel's members that served a call."""


class _Noting(Panel):
    """A panel that notes on its trial each member the first time it serves a call."""

    note: Callable[[int], None]

    def __new__(cls, members: Any, note: Callable[[int], None]) -> _Noting:  # noqa: D102
        self = tuple.__new__(cls, tuple(members))
        self.note = note
        return self

    def pick(self, call: int | None) -> Any:  # noqa: D102
        self.note(int(call or 0) % len(self))
        return super().pick(call)


def noting(build: Callable[[Any, Mapping[str, Any]], Any]) -> Callable[[Any, Mapping[str, Any]], Any]:
    """``build(trial, params) -> program``, whose searched panels note the members they ask (:data:`ASKED`)."""

    def wrapped(trial: Any, params: Mapping[str, Any]) -> Any:
        program = build(trial, params)
        lms: Any = getattr(program, "lms", None)
        searched = {_role(k) for k, v in params.items() if len(split_models(str(v))) > 1} - {None}
        roles = sorted(str(r) for r in searched if lms is not None and isinstance(lms.get(r), Panel))
        if not roles:
            return program
        lock = threading.Lock()
        asked: dict[str, set[int]] = {r: set() for r in roles}

        def note_for(role: str) -> Callable[[int], None]:
            def note(member: int) -> None:
                if member in asked[role]:
                    return
                with lock:
                    asked[role].add(member)
                    trial.set_user_attr(ASKED, {r: sorted(s) for r, s in asked.items()})

            return note

        # The trial's role map is its own when a role's model is searched (see _trials._trial_lms).
        for role in roles:
            lms[role] = _Noting(lms[role], note_for(role))
        trial.set_user_attr(ASKED, {r: [] for r in roles})
        return program

    return wrapped


def _role(name: str) -> str | None:
    """The role of a searched model choice (``model:ROLE``, or ``DESIGN.model:ROLE`` across designs), else None."""
    own = name.split(".", 1)[1] if "." in name.split(":", 1)[0] else name
    return own[len(MODEL) :] if own.startswith(MODEL) else None


def effective(trial: Any) -> dict[str, Any]:
    """The trial's configuration with each searched panel that asked only its first member as that member."""
    config = dict(trial.user_attrs.get("config", trial.params))
    asked = trial.user_attrs.get(ASKED) or {}
    for role, members in asked.items():
        key = MODEL + role
        if key in config and list(members) == [0]:
            config[key] = split_models(str(config[key]))[0]
    return config
