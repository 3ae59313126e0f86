"""The public API is typed for users: py.typed, real types behind the lazy names, checked by mypy."""

import ast
import os
import re
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import courtroom

PACKAGE = Path(courtroom.__file__).parent
HEAVY = ("dspy", "litellm", "pandas", "optuna", "sklearn")

ROOT = PACKAGE.parent
GUIDE = ROOT / "docs" / "guides" / "python.md"
COMPILE_GUIDE = ROOT / "docs" / "guides" / "compile.md"

USER_SCRIPT = """\
import courtroom

program = courtroom.load("program.json")
verdicts = courtroom.predict(program, ["case one", {"case": "case two", "id": "b"}], concurrency=2)
labels: list[str | None] = [v.label for v in verdicts]
ids: list[str] = [v.id for v in verdicts]
spec = courtroom.Experiment.build("run", framework="jot", limit=3)
outcome = courtroom.run(spec=spec)
rows, notes = courtroom.estimate("jot", limit=3)
print(sorted(rows), notes, outcome.summary, outcome.run_dir)
"""

# Each line a misuse mypy catches only if it sees the real signature and records: line -> error code.
MISUSE = {
    "courtroom.study('jot', dev_limt=4)": "call-arg",  # a misspelt keyword
    "courtroom.run('jot', trials=3)": "call-arg",  # another command's keyword
    "courtroom.run('jot', limit='4')": "arg-type",  # a wrong type
    "courtroom.Experiment.build('run', limt=3)": "call-arg",
    "courtroom.compile('jot', settings=['k=1'])": "arg-type",
    "print(courtroom.predict(program, 'c')[0].confidence)": "attr-defined",  # a field a verdict lacks
    "print(courtroom.run('jot').sumary)": "union-attr",
    "x: int = courtroom.predict(program, 'c')": "assignment",
    "courtroom.predict(program, ['c'], concurrency='two')": "arg-type",
    "courtroom.prdict(program, 'c')": "attr-defined",
    "label: int = courtroom.predict(program, 'c')[0].label": "assignment",
    "n: int = courtroom.run('jot', limit=3)": "assignment",
    "m: int = courtroom.estimate('jot')": "assignment",
    "courtroom.score('program.json', text_feld='q')": "call-arg",  # was **options: Any
    "courtroom.load('program.json', api_bse='http://127.0.0.1:8000/v1')": "call-arg",  # was **lm_options: Any
    "courtroom.score('program.json', limit='3')": "arg-type",
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


def guide_scripts() -> list[str]:
    """The Python blocks of ``docs/guides/python.md`` and ``compile.md``: each a script as a user would write it."""
    return [block for guide in (GUIDE, COMPILE_GUIDE)
            for block in re.findall(r"^```python\n(.*?)^```$", guide.read_text(), flags=re.S | re.M)]  # fmt: skip


def test_mypy_strict_checks_user_scripts_from_outside_the_repository(tmp_path: Path) -> None:
    # As a user runs it: from a folder of their own, the package found as installed (`make setup`),
    # `mypy --strict`; no path into the repository. One mypy run for every script (mypy is slow to
    # start); its cache is kept between runs beside the repository's own.
    scripts = {f"guide_{n}.py": body for n, body in enumerate(guide_scripts(), 1)}
    assert len(scripts) >= 7, "the guide's scripts: run, compare, study, compile, predict, result fields, ..."
    scripts["user.py"] = USER_SCRIPT
    bad_lines = ["import courtroom", "", "program = courtroom.load('program.json')", *MISUSE]
    scripts["bad.py"] = "\n".join(bad_lines) + "\n"
    for name, body in scripts.items():
        (tmp_path / name).write_text(body + ("" if body.endswith("\n") else "\n"))
    (tmp_path / "mypy.ini").write_text("[mypy]\n")
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    cache = ROOT / ".mypy_cache" / "user-scripts"
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--no-error-summary",
         "--cache-dir", str(cache), *scripts],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    report = out.stdout + out.stderr
    assert "import-not-found" not in report, (
        "mypy cannot find the installed package: reinstall it as `make setup` does (a .pth path, not an "
        "import hook):\n" + report
    )
    good = [line for line in report.splitlines() if not line.startswith("bad.py")]
    assert not good, "the scripts should type-check:\n" + textwrap.indent(report, "  ")
    for n, line in enumerate(bad_lines, 1):
        if line in MISUSE:
            assert any(
                r.startswith(f"bad.py:{n}: error:") and r.endswith(f"[{MISUSE[line]}]") for r in report.splitlines()
            ), f"mypy missed line {n} ({line}):\n{report}"
    flagged = {r.split(":")[1] for r in report.splitlines() if r.startswith("bad.py:") and ": error:" in r}
    assert flagged == {str(n) for n, line in enumerate(bad_lines, 1) if line in MISUSE}, report
