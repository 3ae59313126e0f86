"""Layout: no import circles inside the package, and one registry per extension point.

The graph counts every ``import`` in a module, at top level or inside a function: a circle
through a function-level import still ties two modules together. ``from pkg import name``
is an edge to ``pkg.name`` when that is a module, else to ``pkg``. A submodule's implicit
import of its parent package is not counted (Python does that for every submodule).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "courtroom"


def _modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def import_graph() -> dict[str, set[str]]:
    """Module -> the package modules it imports (anywhere in its body)."""
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    pkg = name.split(".") if is_pkg else name.split(".")[:-1]
                    pkg = pkg[: len(pkg) - node.level + 1]
                    base = ".".join([*pkg, base] if base else pkg)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_checker_sees_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_circles() -> None:
    found = cycles(import_graph())
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


@pytest.mark.parametrize(
    ("module", "forbidden"),
    [
        ("courtroom.models.lms", "courtroom.models.local._server"),  # lms asks local for an LM, knows no llama.cpp
        ("courtroom.optimize.compile", "courtroom.runner.runs"),  # programs are built by the registry
        ("courtroom.optimize.study", "courtroom.runner.runs"),
    ],
)
def test_layering(module: str, forbidden: str) -> None:
    assert forbidden not in import_graph()[module]


def test_llama_cpp_lm_lives_in_local() -> None:
    import courtroom.models.lms as lms
    from courtroom.models.local import LlamaCppLM

    assert LlamaCppLM.__module__.startswith("courtroom.models.local")
    assert not hasattr(lms, "LlamaCppLM")
    assert "llama_cpp" not in Path(lms.__file__).read_text() and "LlamaCpp" not in Path(lms.__file__).read_text()


def test_one_registry_per_extension_point() -> None:
    """Frameworks, tasks and optimizers: each a plain dict by name, each with one lookup that names the valid ones."""
    import courtroom.programs as frameworks
    from courtroom.data import tasks
    from courtroom.errors import ConfigError
    from courtroom.optimize import compile as optimizers
    from courtroom.programs import FRAMEWORKS, build_program, get_framework

    for registry, get, kind in (
        (frameworks.FRAMEWORKS, frameworks.get_framework, "frameworks"),
        (tasks.TASKS, tasks.get_task, "tasks"),
        (optimizers.OPTIMIZERS, optimizers.get_optimizer, "optimizers"),
    ):
        assert type(registry) is dict and registry
        name, entry = next(iter(registry.items()))
        assert get(name) is entry
        with pytest.raises(ConfigError, match=f"valid {kind} are"):
            get("no-such-entry")
    assert get_framework("jot") is FRAMEWORKS["jot"]
    with pytest.raises(ConfigError, match="valid frameworks are"):
        get_framework("nope")
    program = build_program("zero-shot", ["True", "False"], lm="fake/x")
    assert type(program) is FRAMEWORKS["zero-shot"]
    with pytest.raises(ConfigError, match="has no knob"):
        build_program("zero-shot", ["True", "False"], knobs={"n_loops": 2}, lm="fake/x")


def test_a_registered_framework_is_built_by_name() -> None:
    from courtroom.programs import FRAMEWORKS, ZeroShot, build_program, register

    @register
    class MyZeroShot(ZeroShot):
        name = "my-zero-shot"

    try:
        assert type(build_program("my-zero-shot", ["yes", "no"], lm="fake/x")) is MyZeroShot
    finally:
        FRAMEWORKS.pop("my-zero-shot")
