"""Griffe extension: the docstrings' Sphinx roles (:func:`run`) render as code, linked where they can be.

Our docstrings name other objects the Sphinx way (``:func:`run```, ``:class:`~courtroom.spec.Experiment```,
``:mod:`.compile```), which MkDocs would print as the literal text ``:func:run``. Before mkdocstrings
renders a docstring, each role becomes an optional cross-reference to the name resolved in the
docstring's own scope (as Python would see it there): a link when that object is on the site,
plain code when it is not (a private module, an external name), and never a broken-link warning.
"""

from __future__ import annotations

import html
import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:func|class|mod|meth|data|attr|exc|obj|const):`(?P<target>[^`<>]+)`")


def target_path(obj: Any, name: str) -> str | None:
    """The full path ``name`` stands for in ``obj``'s docstring, or None when it cannot be found."""
    root = obj.package
    try:
        if name.split(".", 1)[0] == root.name:  # an absolute path: courtroom.spec.Experiment
            found = root if name == root.name else root[name.split(".", 1)[1]]
            return str(found.path)
        first, _, rest = name.partition(".")
        scope = obj if obj.is_module or obj.is_class else obj.parent
        members = scope.all_members if scope.is_class else {}  # with a base class's, named in a subclass
        if first in members:
            member = members[first]
            head = member.target_path if member.is_alias else member.path  # where the base defines it
        else:
            head = scope.resolve(first)
        return f"{head}.{rest}" if rest else head
    except (KeyError, griffe.NameResolutionError, griffe.AliasResolutionError, ValueError):
        return None


def replace_roles(text: str, resolve: Any) -> str:
    """``text`` with each role as an optional autorefs link (``resolve(name)``: a path or None) or as code."""

    def one(match: re.Match[str]) -> str:
        target = match["target"].strip()
        short = target.startswith("~")
        name = target.lstrip("~.")
        shown = name.rsplit(".", 1)[-1] if short else name
        code = f"<code>{html.escape(shown)}</code>"
        path = resolve(name)
        if path is None:
            return code
        return f'<autoref identifier="{html.escape(path)}" optional>{code}</autoref>'

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrite every docstring of the package once it is loaded, before any is rendered."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:  # noqa: D102
        stack: list[Any] = [pkg]
        while stack:
            obj = stack.pop()
            if obj.docstring is not None and ":" in obj.docstring.value:
                obj.docstring.value = replace_roles(obj.docstring.value, lambda name, o=obj: target_path(o, name))
            stack += [member for member in obj.members.values() if not member.is_alias]
