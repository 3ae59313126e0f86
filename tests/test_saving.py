"""Program files: compile -> save -> load gives identical predictions; bad files get clear errors;
no secrets on disk."""

from __future__ import annotations

import hashlib
import json
import os
import uuid
from pathlib import Path
from typing import Any

import dspy
import pytest

import courtroom
from courtroom.data.tasks import load_task
from courtroom.errors import ConfigError
from courtroom.optimize.compile import compile_program
from courtroom.saving import load_program, save_program
from courtroom.testing import oracle_lm, scripted_lm

LABELS = ["True", "False"]


def decide(role: str, turn: int, prompt: str) -> dict[str, Any]:
    """Deterministic by prompt (not by turn), so concurrent calls give the same answers in any order."""
    pick = LABELS[hashlib.sha256(prompt.encode()).digest()[0] % 2]
    return {
        "decision": pick,
        "most_likely": pick,
        "label": pick,
        "argument": f"{role}: {prompt[-40:]}",
        "analysis": f"weighing {len(prompt)} chars",
        "reason": "because",
        "opinion": "I think so",
        "summary": f"summary of {len(prompt)} chars",
    }


def scripted() -> Any:
    return scripted_lm(
        {"default": decide}
        | {
            r: decide
            for r in (
                "judge",
                "lawyer",
                "prosecutor",
                "clerk",
                "attorney",
                "reasoner",
                "debater",
                "assistant",
                "summarizer",
            )
        }
    )


@pytest.fixture(scope="module")
def data() -> tuple[list[dspy.Example], list[dspy.Example], dict[str, str]]:
    train = load_task("boolean_expressions", split="train", limit=6).examples
    dev = load_task("boolean_expressions", split="dev", limit=3).examples
    return train, dev, {e.case: e.label for e in train + dev}


CASES = [
    ("jot", "knn", {"n_loops": 2}),
    ("jot", "bootstrap", {"n_loops": 2}),
    ("courtroom-llm", "bootstrap", {"n_judges": 3, "k_precedents": 2}),
    ("debate-feedback", "labeled", {"variant": "assistant", "n_rounds": 1}),
]


@pytest.mark.parametrize(("framework", "optimizer", "knobs"), CASES, ids=[f"{c[0]}-{c[1]}" for c in CASES])
def test_round_trip_identical_predictions(
    framework: str, optimizer: str, knobs: dict[str, Any], data: Any, tmp_path: Path
) -> None:
    train, dev, gold = data
    res = compile_program(
        framework,
        optimizer=optimizer,
        knobs=knobs,
        trainset=train,
        devset=dev,
        labels=LABELS,
        lm=oracle_lm(gold, LABELS, accuracy=0.9),
        settings={"k": 2} if optimizer != "bootstrap" else None,
    )
    path = save_program(res.program, tmp_path / "program.json", res.metadata)

    loaded = courtroom.load(path, lm=scripted())
    original = res.program
    original.lms.clear()
    original.lms.update({"default": scripted()})
    assert loaded.dump_state() == original.dump_state()
    for ex in dev + [dspy.Example(case="not ( True ) and ( True ) is")]:
        a, b = original(case=ex.case), loaded(case=ex.case)
        assert a.label == b.label
        assert [(t.role, t.text, t.decision) for t in a.transcript] == [
            (t.role, t.text, t.decision) for t in b.transcript
        ]
    meta = json.loads(path.read_text())["metadata"]["courtroom"]
    assert meta["framework"] == framework and meta["config"] == original.config()
    assert meta["task"]["labels"] == LABELS and meta["task"]["positions"] == LABELS
    assert meta["optimizer"]["name"] == optimizer
    assert set(meta["scores"]["dev"]) == {"before", "after"}
    assert {"dspy", "optuna", "python"} <= set(meta["versions"])
    assert meta["models"]["judge"] == "fake/oracle"
    if optimizer == "knn":
        assert "knn_precedents" in meta["artefacts"]
        assert loaded.knn_precedents.demos_for("judge", dev[0].case) == original.knn_precedents.demos_for(
            "judge", dev[0].case
        )
    if framework == "courtroom-llm":
        saved = meta["artefacts"]["precedent_index"]["data"]
        assert len(saved["cases"]) == len(train) and saved["reasons"], "precedents saved with their reasons"
    if framework == "debate-feedback":
        assert loaded.reliability_model.to_dict() == original.reliability_model.to_dict()
        assert loaded.reliability_model.fitted


def test_two_lines_of_user_code(data: Any, tmp_path: Path) -> None:
    train, dev, gold = data
    res = compile_program(
        "jot",
        optimizer="labeled",
        trainset=train,
        devset=dev,
        labels=LABELS,
        lm=oracle_lm(gold, LABELS),
        knobs={"n_loops": 1},
        settings={"k": 2},
    )
    save_program(res.program, tmp_path / "p.json", res.metadata)
    program = courtroom.load(tmp_path / "p.json", lm=oracle_lm(gold, LABELS))
    verdict = program(case=dev[0].case)
    assert verdict.label in LABELS and {t.role for t in verdict.transcript} == {
        "lawyer",
        "prosecutor",
        "judge",
    }


@pytest.fixture()
def saved(data: Any, tmp_path: Path) -> Path:
    train, dev, gold = data
    res = compile_program(
        "jot",
        optimizer="knn",
        settings={"k": 2},
        trainset=train,
        devset=dev,
        labels=LABELS,
        lm=oracle_lm(gold, LABELS, accuracy=1.0),
        knobs={"n_loops": 1},
    )
    return save_program(res.program, tmp_path / "p.json", res.metadata)


def _edit(path: Path, change: Any) -> None:
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))


def test_tampered_file_is_refused(saved: Path) -> None:
    _edit(saved, lambda d: d["judge"]["signature"].__setitem__("instructions", "Always answer True."))
    with pytest.raises(ConfigError, match="modified after it was saved"):
        load_program(saved, lm=scripted())


def test_newer_format_is_refused(saved: Path) -> None:
    _edit(saved, lambda d: d["metadata"]["courtroom"].__setitem__("format_version", 99))
    with pytest.raises(ConfigError, match="format 99.*recompile"):
        load_program(saved, lm=scripted())


def test_foreign_files_are_refused(tmp_path: Path) -> None:
    plain = courtroom.FRAMEWORKS["jot"](LABELS, lm=scripted())
    plain.save(str(tmp_path / "dspy.json"))
    with pytest.raises(ConfigError, match="not a courtroom program file"):
        load_program(tmp_path / "dspy.json", lm=scripted())
    (tmp_path / "x.pkl").write_bytes(b"\x80\x04\x95pickle")
    with pytest.raises(ConfigError, match="not a courtroom program file"):
        load_program(tmp_path / "x.pkl", lm=scripted())
    with pytest.raises(ConfigError, match="no program file"):
        load_program(tmp_path / "missing.json", lm=scripted())


def test_loading_never_executes_code(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import pickle

    def boom(*a: Any, **k: Any) -> None:
        raise AssertionError("unpickling during load")

    monkeypatch.setattr(pickle, "loads", boom)
    monkeypatch.setattr(pickle, "load", boom)
    load_program(saved, lm=scripted())
    # An artefact naming an arbitrary class is refused, never imported.
    doc = json.loads(saved.read_text())
    doc["metadata"]["courtroom"]["artefacts"]["evil"] = {"type": "os.system", "data": "echo hi"}
    body = dict(doc["metadata"]["courtroom"])
    body.pop("checksum")
    check = dict(doc)
    check["metadata"] = dict(doc["metadata"]) | {"courtroom": body}
    from courtroom.saving import _checksum

    doc["metadata"]["courtroom"]["checksum"] = _checksum(check)
    saved.write_text(json.dumps(doc))
    with pytest.raises(ConfigError, match="unknown artefact 'evil'"):
        load_program(saved, lm=scripted())


def test_fake_compiled_program_needs_a_model(saved: Path) -> None:
    with pytest.raises(ConfigError, match="compiled on test fakes"):
        load_program(saved)


KEY, PASSWORD = "sk-test-SECRET-4242", "hunter2pw"
MODEL = f"openai/secrets-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def compiled_with_key(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from courtroom.testing import FakeServer

    out = tmp_path_factory.mktemp("secrets")
    with pytest.MonkeyPatch.context() as mp, FakeServer() as server:
        mp.setenv("OPENAI_API_KEY", KEY)
        base = server.url.replace("http://", f"http://alice:{PASSWORD}@")
        res = compile_program(
            "jot",
            task="boolean_expressions",
            optimizer="labeled",
            settings={"k": 2},
            train=3,
            dev=2,
            lm=MODEL,  # a model name no other test uses: every call must reach the server
            api_base=base,
            knobs={"n_loops": 1},
        )
        assert server.counts["requests"] > 0
    save_program(res.program, out / "p.json", res.metadata)
    return out


def _leaks(root: Path) -> list[str]:
    found = []
    for f in root.rglob("*"):
        if f.is_file():
            blob = f.read_bytes()
            found += [f"{s} in {f}" for s in (KEY, PASSWORD) if s.encode() in blob]
    return found


def test_no_secret_in_the_program_file(compiled_with_key: Path) -> None:
    meta = json.loads((compiled_with_key / "p.json").read_text())["metadata"]["courtroom"]
    assert meta["models"]["judge"] == MODEL
    assert _leaks(compiled_with_key) == []


def test_no_api_key_in_the_cache(compiled_with_key: Path) -> None:
    assert [x for x in _leaks(Path(os.environ["COURTROOM_CACHE_DIR"])) if KEY in x] == []


def test_no_base_url_credentials_in_the_cache(compiled_with_key: Path) -> None:
    assert _leaks(Path(os.environ["COURTROOM_CACHE_DIR"])) == []
