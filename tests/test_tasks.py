"""Task registry, local files in every format, custom datasets, splits and bad-input errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from courtroom.cli import main
from courtroom.data.tasks import TASKS, custom_task, get_task, load_splits, load_task
from courtroom.errors import ConfigError, DataError

SPEC_TASKS = {
    "boolean_expressions": ("lukaemon/bbh", "boolean_expressions", "test"),
    "causal_judgement": ("lukaemon/bbh", "causal_judgement", "test"),
    "formal_fallacies": ("lukaemon/bbh", "formal_fallacies", "test"),
    "web_of_lies": ("lukaemon/bbh", "web_of_lies", "test"),
    "navigate": ("lukaemon/bbh", "navigate", "test"),
    "sports_understanding": ("lukaemon/bbh", "sports_understanding", "test"),
    "winogrande": ("allenai/winogrande", "winogrande_xl", "validation"),
    "rte": ("nyu-mll/glue", "rte", "validation"),
    "qnli": ("nyu-mll/glue", "qnli", "validation"),
    "boolq": ("google/boolq", None, "validation"),
    "anli_r1": ("facebook/anli", None, "test_r1"),
    "anli_r2": ("facebook/anli", None, "test_r2"),
    "anli_r3": ("facebook/anli", None, "test_r3"),
    "emotion": ("dair-ai/emotion", "split", "test"),
    "cail2018": ("china-ai-law-challenge/cail2018", None, "exercise_contest_test"),
}


def write(path: Path, rows: list[dict[str, Any]]) -> Path:
    suffix = path.suffix
    if suffix == ".jsonl":
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
    elif suffix == ".json":
        path.write_text(json.dumps({"examples": rows}))
    elif suffix == ".csv":
        pd.DataFrame(rows).to_csv(path, index=False)
    else:
        pd.DataFrame(rows).to_parquet(path)
    return path


def test_registry_holds_every_spec_task_with_its_hub_id() -> None:
    for name, hub in SPEC_TASKS.items():
        assert get_task(name).hub == hub
    caselaw = get_task("caselaw")
    assert caselaw.labels == ("Plaintiff wins", "Defendant wins") and caselaw.hub is None
    assert get_task("anli_r2").labels == ("entailment", "neutral", "contradiction")
    assert get_task("emotion").labels[:2] == ("sadness", "joy")
    assert get_task("winogrande").positions is None and get_task("winogrande").labels == (
        "option1",
        "option2",
    )


def test_hub_loading_goes_through_datasets_with_the_hub_id(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    calls = []

    def fake_load(path: str, config: str | None = None, split: str | None = None, **kw: Any) -> list[dict[str, Any]]:
        calls.append((path, config, split))
        return [{"sentence1": f"p{i}", "sentence2": f"h{i}", "label": i % 2} for i in range(20)]

    monkeypatch.setattr(datasets, "load_dataset", fake_load)
    data = load_task("rte", data="hub", split="test")
    assert calls == [("nyu-mll/glue", "rte", "validation")]
    assert {ex.label for ex in data.examples} == {"entailment", "not_entailment"}
    assert data.examples[0].case.startswith("Premise: p")


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".csv", ".parquet"])
def test_every_file_format_loads(tmp_path: Path, suffix: str) -> None:
    rows = [
        {"input": f"not {'True' if i % 2 else 'False'} is ({i})", "target": "False" if i % 2 else "True"}
        for i in range(30)
    ]
    data = load_task("boolean_expressions", data=str(write(tmp_path / f"bool{suffix}", rows)), split="test")
    assert len(data.examples) == 18 and all(ex.id.startswith("bool-") for ex in data.examples)
    for ex in data.examples:
        row = rows[int(ex.id.split("-")[1])]
        assert (ex.case, ex.label) == (row["input"], row["target"])


def test_bbh_quirks_lower_case_targets_and_trailing_spaces(tmp_path: Path) -> None:
    sports = [
        {
            "input": f'Is the following sentence plausible? "Player {i} scored."',
            "target": "yes" if i % 2 else "no",
        }
        for i in range(10)
    ]
    data = load_splits("sports_understanding", data=str(write(tmp_path / "s.jsonl", sports)))[1]
    assert {ex.label for split in data.values() for ex in split} == {"Yes", "No"}
    ff = [
        {"input": '"Arg."\nIs the argument valid?\nOptions:\n- valid \n- invalid', "target": t}
        for t in ["valid", "invalid"] * 5
    ]
    _, splits, _ = load_splits("formal_fallacies", data=str(write(tmp_path / "f.json", ff)))
    case = splits["test"][0].case
    assert "- valid\n- invalid" in case and not any(line.endswith(" ") for line in case.splitlines())


def test_structured_tasks_build_text_and_map_labels(tmp_path: Path) -> None:
    wino = [
        {
            "sentence": f"The cup did not fit in the bag because _ was big {i}.",
            "option1": "cup",
            "option2": "bag",
            "answer": "1" if i % 2 else "2",
        }
        for i in range(10)
    ]
    _, splits, _ = load_splits("winogrande", data=str(write(tmp_path / "w.parquet", wino)))
    ex = splits["test"][0]
    assert "Option 1: cup\nOption 2: bag" in ex.case and ex.label in ("option1", "option2")
    emo = [{"text": f"tweet {i}", "label": i % 6} for i in range(12)]
    _, splits, _ = load_splits("emotion", data=str(write(tmp_path / "e.csv", emo)))
    assert {e.label for s in splits.values() for e in s} <= set(get_task("emotion").labels)
    boolq = [{"question": "is it?", "passage": f"text {i}", "answer": bool(i % 2)} for i in range(10)]
    _, splits, _ = load_splits("boolq", data=str(write(tmp_path / "b.jsonl", boolq)))
    assert {e.label for s in splits.values() for e in s} == {"True", "False"}
    # CAIL2018's label space comes from the data: the 10 most frequent single charges.
    charges = [f"罪名{k:02d}" for k in range(12)]
    accusations = [[c] for k, c in enumerate(charges) for _ in range(12 - k)]  # charge k appears 12 - k times
    accusations += [["盗窃", "抢劫"]] * 30 + [["[走私、贩卖、运输、制造]毒品"]] * 20
    cail = [{"fact": f"案情 {i}", "accusation": acc} for i, acc in enumerate(accusations)]
    task, splits, _ = load_splits("cail2018", data=str(write(tmp_path / "c.jsonl", cail)))
    expected = ("走私、贩卖、运输、制造毒品", *charges[:9])  # multi-charge rows and the 2 rarest left out
    assert task.labels == expected and get_task("cail2018").labels == ()
    about = get_task("cail2018").description  # what `courtroom tasks` prints
    assert "single-charge classification" in about and "not the paper's multi-label article prediction" in about
    assert {e.label for s in splits.values() for e in s} == set(expected)
    assert sum(len(s) for s in splits.values()) == 20 + sum(12 - k for k in range(9))
    case = [{"text": f"case {i}", "label": "Plaintiff wins" if i % 3 else "Defendant wins"} for i in range(10)]
    assert load_task("caselaw", data=str(write(tmp_path / "law.jsonl", case)), split="dev").examples
    # The shape the Debate-Feedback authors released: case_background and labels.
    released = [
        {"case_background": f"background {i}", "labels": "Plaintiff wins" if i % 3 else "Defendant wins"}
        for i in range(10)
    ]
    _, splits, _ = load_splits("caselaw", data=str(write(tmp_path / "df.jsonl", released)))
    examples = [e for s in splits.values() for e in s]
    assert len(examples) == 10 and all(e.case.startswith("background") for e in examples)
    assert {e.label for e in examples} == {"Plaintiff wins", "Defendant wins"}
    with pytest.raises(DataError, match="none of the fields case_background, text"):
        load_task("caselaw", data=str(write(tmp_path / "bad.jsonl", [{"fact": "x", "labels": "Plaintiff wins"}])))


def test_splits_are_seeded_disjoint_and_cover_the_data(tmp_path: Path) -> None:
    _, a, _ = load_splits("web_of_lies", seed=7)
    _, b, _ = load_splits("web_of_lies", seed=7)
    _, c, _ = load_splits("web_of_lies", seed=8)
    ids = {k: [ex.id for ex in v] for k, v in a.items()}
    assert ids == {k: [ex.id for ex in v] for k, v in b.items()}
    assert ids["test"] != [ex.id for ex in c["test"]]
    assert sum(len(v) for v in ids.values()) == 500
    assert not (set(ids["train"]) & set(ids["test"])) and not (set(ids["dev"]) & set(ids["test"]))
    assert len(ids["train"]) == len(ids["dev"]) == 100


def test_a_case_text_repeated_within_a_split_counts_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # 24 rows, 12 distinct texts (the copies differ only in spacing): 12 cases, not 24.
    rows = [{"text": f"claim {i % 12}:  the evidence" + (" " if i >= 12 else ""), "label": "yes"} for i in range(24)]
    spec = {"dataset": str(write(tmp_path / "twice.csv", rows)), "text_fields": ["text"], "label_field": "label",
            "labels": ["yes", "no"]}  # fmt: skip
    whole = {"sizes": [0.0, 0.0, 1.0]}
    with caplog.at_level("WARNING", logger="courtroom.data.tasks"):
        data = load_task("x", dataset=spec, split="test", splits=whole)
    assert len(data.examples) == 12 and len({" ".join(e.case.split()) for e in data.examples}) == 12
    said = [r.getMessage() for r in caplog.records if "repeat the text" in r.getMessage()]
    assert said == ["the test split of custom:twice: 12 case(s) repeat the text of an earlier one: each text is "
                    "kept once (its first row), 12 case(s) used"]  # fmt: skip
    assert len(load_splits("x", dataset=spec, splits=whole)[1]["test"]) == 12  # what estimates and compile read
    # A limit takes that many distinct texts; repeats past it are not counted.
    caplog.clear()
    assert len(load_task("x", dataset=spec, split="test", splits=whole, limit=5).examples) == 5
    assert not [r for r in caplog.records if "repeat the text" in r.getMessage()]
    with pytest.raises(DataError, match="--limit 13 but the test split of custom:twice has 12 examples"):
        load_task("x", dataset=spec, split="test", splits=whole, limit=13, limit_flag="--limit")


def test_custom_dataset_from_a_local_file(tmp_path: Path) -> None:
    rows = [{"premise": f"p{i}", "hypothesis": f"h{i}", "gold": i % 3} for i in range(20)]
    path = write(tmp_path / "nli.csv", rows)
    spec = {
        "dataset": str(path),
        "text_fields": ["premise", "hypothesis"],
        "label_field": "gold",
        "labels": ["yes", "maybe", "no"],
    }
    data = load_task("ignored", dataset=spec, split="test")
    assert data.task.name == "custom:nli"
    assert data.examples[0].case.startswith("Premise: p") and "\nHypothesis: h" in data.examples[0].case
    assert {ex.label for ex in data.examples} <= {"yes", "maybe", "no"}


def test_custom_dataset_from_the_hub_is_a_hub_task() -> None:
    task, data = custom_task(
        "org/set", text_fields=["t"], label_field="l", labels=["a", "b"], config="c", hub_split="validation"
    )
    assert data == "hub" and task.hub == ("org/set", "c", "validation") and task.labels == ("a", "b")


# -- bad input -------------------------------------------------------------------------------


def test_missing_field_names_the_field_and_the_available_ones(tmp_path: Path) -> None:
    path = write(tmp_path / "x.jsonl", [{"question": "q", "answer": "True"}] * 5)
    with pytest.raises(DataError, match=r"missing field 'input', 'target'; available fields: answer, question"):
        load_task("boolean_expressions", data=str(path))


def test_labels_outside_the_label_space_name_the_rows(tmp_path: Path) -> None:
    rows = [{"input": "x", "target": t} for t in ["True", "maybe", "False", "True", "nope"]]
    with pytest.raises(DataError, match=r"labels outside \['True', 'False'\] in row 1 \('maybe'\), row 4 \('nope'\)"):
        load_task("boolean_expressions", data=str(write(tmp_path / "x.jsonl", rows)))


def test_empty_dataset_after_filtering(tmp_path: Path) -> None:
    rows = [{"fact": "f", "accusation": ["盗窃", "抢劫"]}] * 4
    with pytest.raises(DataError, match="no rows left after filtering 4 rows"):
        load_task("cail2018", data=str(write(tmp_path / "c.jsonl", rows)))


def test_unknown_split_and_task() -> None:
    with pytest.raises(ConfigError, match="unknown split 'validation': use one of train, dev, test"):
        load_task("web_of_lies", split="validation")
    with pytest.raises(ConfigError, match="unknown task 'nope'"):
        get_task("nope")


@pytest.mark.parametrize(
    "name,content,match",
    [
        ("bad.json", "{not json", "not valid JSON"),
        ("bad.txt", "hello", r"use a \.json, \.jsonl, \.csv or \.parquet file"),
        ("bad.parquet", "not parquet at all", "cannot read"),
    ],
)
def test_unreadable_files(tmp_path: Path, name: str, content: str, match: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DataError, match=match):
        load_task("boolean_expressions", data=str(path))
    with pytest.raises(DataError, match="no such file"):
        load_task("boolean_expressions", data=str(tmp_path / "missing.jsonl"))


def test_hub_without_internet_is_a_one_line_error(monkeypatch: pytest.MonkeyPatch) -> None:
    import datasets

    def offline(*a: Any, **k: Any) -> None:
        raise ConnectionError("Couldn't reach the Hub\nmore lines")

    monkeypatch.setattr(datasets, "load_dataset", offline)
    monkeypatch.setattr("courtroom.data._hub.hub_reachable", lambda *a, **k: False)
    monkeypatch.setattr("courtroom.data._hub.go_offline", lambda: None)
    with pytest.raises(DataError, match="not reachable and not in the local cache: pass --data PATH") as err:
        load_task("rte")
    assert "--data generate" not in str(err.value) and "\n" not in str(err.value)  # rte has no generator
    with pytest.raises(ConfigError, match="pass --data PATH"):
        load_task("caselaw")


def test_tasks_command_lists_every_task(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tasks"]) == 0
    out = capsys.readouterr().out
    for name in TASKS:
        assert name in out


def test_a_local_csv_or_jsonl_is_read_without_loading_datasets(tmp_path: Path) -> None:
    # `datasets` (its import and Arrow cache) cost ~2 s of every command's start-up for a local file.
    import subprocess
    import sys

    (tmp_path / "d.csv").write_text("text,label,score\nfirst,1,0.5\nsecond,0,\n")
    (tmp_path / "d.jsonl").write_text('{"text": "first", "label": 1}\n{"text": "second", "label": 0, "extra": "x"}\n')
    script = (
        "import json, sys; from pathlib import Path; from courtroom.data.custom import read_file; "
        f"rows = [read_file(Path({str(tmp_path)!r}) / name) for name in ('d.csv', 'd.jsonl')]; "
        "print(json.dumps(['datasets' in sys.modules, rows]))"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    loaded, (csv_rows, jsonl_rows) = json.loads(done.stdout)
    assert not loaded, "reading a local CSV or JSONL imported datasets"
    # Typed as datasets typed them: whole numbers are ints (they index --labels), an empty field is None.
    assert csv_rows == [{"text": "first", "label": 1, "score": 0.5}, {"text": "second", "label": 0, "score": None}]
    assert jsonl_rows == [{"text": "first", "label": 1, "extra": None}, {"text": "second", "label": 0, "extra": "x"}]


PLAIN_CSV = [
    'text,label\nhello world,yes\n"multi\nline, quoted",no\n,no\n',
    "id,text,label\n007,a,+1\n2,b,-1\n",
    'text,label\n\nCase 1: is 1 even?,no\n\n"",yes\n',
]
PANDAS_CSV = ["text,label\na,True\nb,False\n", "t,l\na,1.5\nb,\n", "t,l\nNA,x\n", "t,l\n a,x\n", "t,l\n1e5,a\n"]


@pytest.mark.parametrize("text", PLAIN_CSV + PANDAS_CSV)
def test_a_plain_csv_is_read_without_pandas_as_pandas_reads_it(text: str, tmp_path: Path, monkeypatch) -> None:
    """Issue 44: importing pandas was a fifth of a run's start-up; the rows must not change."""
    import sys

    from courtroom.data import custom

    path = tmp_path / "d.csv"
    path.write_text(text)
    with monkeypatch.context() as m:
        m.setattr(custom, "_plain_csv_rows", lambda text: None)
        by_pandas = custom.read_file(path)
    if text in PLAIN_CSV:
        monkeypatch.setitem(sys.modules, "pandas", None)  # importing it fails
    assert custom.read_file(path) == by_pandas
