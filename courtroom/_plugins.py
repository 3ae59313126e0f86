"""What do installed packages add? Entry points, loaded into each extension point's one registry.

A package adds a framework, a task, an optimizer or a metric by naming it in an entry-point
group (SPEC §19), as pytest and llm plugins do::

    [project.entry-points."courtroom.frameworks"]
    my-debate = "my_pkg.frameworks:MyDebate"

=========================  ===========================================  ==============================
group                      the object named                              its registry
=========================  ===========================================  ==============================
``courtroom.frameworks``   a :class:`~courtroom.programs.CourtroomProgram`  :data:`courtroom.programs.FRAMEWORKS`
``courtroom.tasks``        a :class:`~courtroom.data.catalog.Task`        :data:`courtroom.data.tasks.TASKS`
``courtroom.optimizers``   an :class:`~courtroom.optimize.optimizers.Optimizer`  ``OPTIMIZERS``
``courtroom.metrics``      ``metric(example, prediction, trace=None)``   :data:`courtroom.eval.metrics.METRICS`
=========================  ===========================================  ==============================

A task or an optimizer may also be a function of no arguments returning one. The entry point's
name is the name a command line uses. Nothing is read while only built-in names are used: a
registry loads its group when a name is not found in it (``get_framework``, ``get_task``,
``get_optimizer``, ``get_metric``) and when ``courtroom frameworks`` or ``tasks`` lists it; the
packages' metadata is scanned once per ``sys.path`` (176 packages: 126-323 ms at load 13), and
each entry point is loaded once. A plugin that fails to load is one warning line naming its
package, never a crash: the built-in names keep working.
"""

from __future__ import annotations

import importlib.metadata
import logging
import sys
import threading
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)

GROUPS = {
    "frameworks": "courtroom.frameworks",
    "tasks": "courtroom.tasks",
    "optimizers": "courtroom.optimizers",
    "metrics": "courtroom.metrics",
}
"""Extension point -> its entry-point group."""

_loaded: set[tuple[str, str, str]] = set()
_lock = threading.RLock()
_scanned: tuple[tuple[str, ...], Any] | None = None
"""(``sys.path`` when scanned, every installed entry point): one scan of the packages' metadata serves
the four groups until the path changes (a test, or a user, putting a package on it)."""


def entry_points(kind: str) -> list[importlib.metadata.EntryPoint]:
    """The installed entry points of ``kind`` (``frameworks``, ``tasks``, ...): read, not imported."""
    global _scanned
    with _lock:
        path = tuple(sys.path)
        if _scanned is None or _scanned[0] != path:
            _scanned = (path, importlib.metadata.entry_points())
        return list(_scanned[1].select(group=GROUPS[kind]))


def names(kind: str) -> list[str]:
    """The names installed packages give ``kind``, without importing them (a command line's check)."""
    return sorted({ep.name for ep in entry_points(kind)})


def package(ep: importlib.metadata.EntryPoint) -> str:
    """The distribution that declares ``ep`` (its module's top package when unknown)."""
    dist = getattr(ep, "dist", None)
    return str(dist.name) if dist is not None and dist.name else ep.value.split(":")[0].split(".")[0]


def load(kind: str, add: Callable[[str, Any], object]) -> None:
    """Load the entry points of ``kind`` not loaded yet, handing each (name, object) to ``add``.

    ``add`` puts the object in the registry (raising when it is not of the kind's type). A plugin
    that fails to import or to register is logged once, in one line naming its package.
    """
    with _lock:
        for ep in entry_points(kind):
            key = (kind, ep.name, ep.value)
            if key in _loaded:
                continue
            _loaded.add(key)
            try:
                add(ep.name, ep.load())
            except Exception as exc:  # noqa: BLE001 - someone else's package must not stop a command
                text = str(exc).strip().splitlines()
                why = f"{type(exc).__name__}: {text[0][:100]}" if text else type(exc).__name__
                log.warning(
                    "plugin %s of package %s not loaded (%s): fix or uninstall %s",
                    ep.name,
                    package(ep),
                    why,
                    package(ep),
                )


def made(obj: Any, cls: type) -> Any:
    """``obj`` itself when it is a ``cls``, else what calling it (no arguments) returns."""
    if isinstance(obj, cls):
        return obj
    if callable(obj):
        obj = obj()
    if not isinstance(obj, cls):
        raise TypeError(f"expected a {cls.__name__} (or a function returning one), got {type(obj).__name__}")
    return obj


def named(obj: Any, cls: type, name: str, what: str) -> Any:
    """:func:`made`'s ``cls`` object, refused unless its ``name`` is the entry point's (``what``: task, optimizer)."""
    made_obj = made(obj, cls)
    if made_obj.name != name:
        raise TypeError(f"its {what} is named {made_obj.name!r}: name the entry point {made_obj.name!r} too")
    return made_obj
