"""The public API is typed for users: py.typed, real types behind the lazy names, checked by mypy."""

import ast
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import courtroom

PACKAGE = Path(courtroom.__file__).parent
HEAVY = ("dspy", "litellm", "pandas", "optuna", "sklearn")

USER_SCRIPT = """\
import courtroom

program = courtroom.load("program.json")
verdicts = courtroom.predict(program, ["case one", {"case": "case two", "id": "b"}], concurrency=2)
labels: list[str | None] = [v.label for v in verdicts]
spec = courtroom.Experiment.build("run", framework="jot", limit=3)
outcome = courtroom.run(spec=spec)
rows, notes = courtroom.estimate("jot", limit=3)
print(sorted(rows), notes)
"""

# Each line a misuse mypy catches only if it sees the real signature: line -> error code.
MISUSE = {
    "x: int = courtroom.predict(program, 'c')": "assignment",
    "courtroom.predict(program, ['c'], concurrency='two')": "arg-type",
    "courtroom.prdict(program, 'c')": "attr-defined",
    "label: int = courtroom.predict(program, 'c')[0].label": "assignment",
    "n: int = courtroom.run('jot', limit=3)": "assignment",
    "m: int = courtroom.estimate('jot')": "assignment",
}


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute) as ``courtroom/__init__.py`` imports it under TYPE_CHECKING."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for imp in node.body:
                assert isinstance(imp, ast.ImportFrom) and imp.module
                found |= {a.asname or a.name: (imp.module, a.name) for a in imp.names}
    return found


def test_lazy_names_match_the_typed_ones():
    assert _type_checking_imports() == courtroom._LAZY
    eager = {"ConfigError", "CourtroomError", "DataError", "ModelError", "__version__"}
    assert set(courtroom.__all__) == set(courtroom._LAZY) | eager
    for name in ("run", "compare", "compile", "study", "report", "runs", "estimate", "predict", "experiment"):
        assert name in courtroom.__all__
    assert {"Verdict", "Experiment"} <= set(courtroom.__all__)


def test_py_typed_is_shipped():
    assert (PACKAGE / "py.typed").is_file()
    pyproject = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["courtroom"]


def test_import_stays_light():
    code = f"import sys, courtroom; print([m for m in {HEAVY!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_mypy_checks_a_user_script(tmp_path):
    # The package as an installed one: a path entry holding only it, so mypy needs its py.typed
    # (the editable install's import hook is invisible to mypy) and reports no errors inside it.
    site = tmp_path / "site"
    site.mkdir()
    (site / "courtroom").symlink_to(PACKAGE, target_is_directory=True)
    (tmp_path / "good.py").write_text(USER_SCRIPT)
    bad_lines = ["import courtroom", "", "program = courtroom.load('program.json')", *MISUSE]
    (tmp_path / "bad.py").write_text("\n".join(bad_lines) + "\n")
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")} | {"PYTHONPATH": str(site)}
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", "mypy.ini", "--strict-optional", "--no-error-summary",
         "--cache-dir", str(tmp_path / "cache"), "good.py", "bad.py"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    report = out.stdout + out.stderr
    assert out.returncode == 1, report
    good = [line for line in report.splitlines() if line.startswith("good.py")]
    assert not good, "the user script should type-check:\n" + textwrap.indent(report, "  ")
    for n, line in enumerate(bad_lines, 1):
        if line in MISUSE:
            assert any(
                r.startswith(f"bad.py:{n}: error:") and r.endswith(f"[{MISUSE[line]}]") for r in report.splitlines()
            ), f"mypy missed line {n} ({line}):\n{report}"
    flagged = {r.split(":")[1] for r in report.splitlines() if r.startswith("bad.py:") and ": error:" in r}
    assert flagged == {str(n) for n, line in enumerate(bad_lines, 1) if line in MISUSE}, report
