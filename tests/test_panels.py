"""Mixed-model panels: a role names several models and its repeated calls rotate through them.

One FakeServer counts requests per ``model`` (the request body names it), so each judge's call
can be traced to the model the rotation names: call ``i`` of the role goes to member ``i mod n``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.models.lms import parse_role_overrides, resolve_roles
from courtroom.models.panels import Panel
from courtroom.optimize.compile import compile_program
from courtroom.programs import build_program
from courtroom.saving import load_program, save_program
from courtroom.testing import FakeServer

LABELS = ["True", "False"]
JUDGE = re.compile(r"Judge \d+ decided")


def _names(n: int) -> list[str]:
    tag = uuid.uuid4().hex[:6]  # fresh model names: no cache entry from another test answers them
    return [f"panel-{tag}-{i}" for i in range(n)]


def _lms(server: FakeServer, panel: list[str], role: str = "judge") -> Any:
    return resolve_roles(f"openai/{_names(1)[0]}", {role: [f"openai/{m}" for m in panel]}, api_base=server.url)


def _cases(split: str, n: int) -> list[Any]:
    return load_task("boolean_expressions", split=split, limit=n).examples


def _judge_routes(server: FakeServer, panel: list[str]) -> list[tuple[int, str]]:
    """(judge index, model) of every sequential judge call: judge i sees i earlier judges."""
    return [(len(JUDGE.findall(p)), m) for m, p in server.routed if m in panel]


def _check_rotation(routes: list[tuple[int, str]], panel: list[str], n_judges: int, n_cases: int) -> None:
    assert len(routes) == n_judges * n_cases
    for i, model in routes:
        assert model == panel[i % len(panel)], f"judge {i} went to {model}"


def test_a_role_names_several_models_from_python_and_the_cli() -> None:
    lms = resolve_roles("openai/base", {"judge": ["openai/a", "openai/b", "openai/c"]})
    assert isinstance(lms["judge"], Panel)
    assert [lms.for_role("judge", i).model for i in range(5)] == ["openai/a", "openai/b", "openai/c"] * 1 + [
        "openai/a",
        "openai/b",
    ]
    cli = resolve_roles("openai/base", parse_role_overrides(["judge=openai/a,openai/b,openai/c"], ["judge"]))
    assert [m.model for m in cli["judge"]] == ["openai/a", "openai/b", "openai/c"]
    assert cli.names(["judge", "clerk"]) == {"judge": ["openai/a", "openai/b", "openai/c"], "clerk": "openai/base"}
    assert lms["judge"][0] is cli["judge"][0] or lms["judge"][0].model == cli["judge"][0].model
    with pytest.raises(ConfigError, match="empty"):
        resolve_roles("openai/base", {"judge": []})


def test_parallel_judges_and_samples_rotate_through_the_panel() -> None:
    panel = _names(3)
    cases = _cases("test", 3)
    with FakeServer() as server:
        program = build_program(
            "courtroom-llm", LABELS, knobs={"n_judges": 5, "k_precedents": 0}, lms=_lms(server, panel)
        )
        for ex in cases:
            program(case=ex.case)
        # five judges per case over three models: calls 0 and 3 -> a, 1 and 4 -> b, 2 -> c
        assert [server.models[m] for m in panel] == [2 * len(cases), 2 * len(cases), len(cases)]
        samples = _names(2)
        knobs = {"k_samples": 5, "k_shots": 0}
        sc = build_program("self-consistency", LABELS, knobs=knobs, lms=_lms(server, samples, "classifier"))
        for ex in cases:
            sc(case=ex.case)
        assert [server.models[m] for m in samples] == [3 * len(cases), 2 * len(cases)]


def test_sequential_judges_survive_bootstrap_and_save_load(tmp_path: Path) -> None:
    panel = _names(3)
    train, dev, test = _cases("train", 4), _cases("dev", 2), _cases("test", 3)
    knobs = {"n_judges": 4, "judge_mode": "sequential", "k_precedents": 0}
    with FakeServer() as server:
        lms = _lms(server, panel)
        program = build_program("courtroom-llm", LABELS, knobs=knobs, lms=lms)
        for ex in test:
            program(case=ex.case)
        _check_rotation(_judge_routes(server, panel), [f"{m}" for m in panel], 4, len(test))

        res = compile_program(
            "courtroom-llm",
            optimizer="bootstrap",
            settings={"max_bootstrapped_demos": 2, "max_labeled_demos": 2},
            knobs=knobs,
            lms=lms,
            trainset=train,
            devset=dev,
            labels=LABELS,
        )
        assert any(p.demos for _, p in res.program.named_predictors()), "bootstrap added no demos"
        server.routed.clear()
        fresh = _cases("test", 6)[3:]
        for ex in fresh:
            res.program(case=ex.case)
        _check_rotation(_judge_routes(server, panel), panel, 4, len(fresh))

        path = save_program(res.program, tmp_path / "p.json", res.metadata)
        saved = json.loads(path.read_text())["metadata"]["courtroom"]["models"]
        assert saved["judge"] == [f"openai/{m}" for m in panel]
        loaded = load_program(path, api_base=server.url)
        server.routed.clear()
        later = _cases("dev", 5)[2:]
        for ex in later:
            loaded(case=ex.case)
        _check_rotation(_judge_routes(server, panel), panel, 4, len(later))


def test_cli_run_records_the_panel_by_name(tmp_path: Path, courtroom_cli: Any) -> None:
    panel = _names(2)
    with FakeServer() as server:
        cmd = [
            "run",
            "parallel-vote",
            "--limit",
            "2",
            "--set",
            "n_models=3",
            "--lm",
            f"openai/{_names(1)[0]}",
            "--role",
            "classifier=" + ",".join(f"openai/{m}" for m in panel),
            "--api-base",
            server.url,
            "--out",
            str(tmp_path),
        ]
        done = courtroom_cli(*cmd)
        assert done.returncode == 0, done.stderr
        counts = Counter({m: server.models[m] for m in panel})
    assert counts == {panel[0]: 4, panel[1]: 2}
    meta = json.loads(next(tmp_path.rglob("meta.json")).read_text())
    assert meta["models"]["classifier"] == [f"openai/{m}" for m in panel]
    assert "127.0.0.1" not in json.dumps(meta["models"])
