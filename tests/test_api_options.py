"""The typed keywords of each command function match the spec's fields and the one option table."""

from __future__ import annotations

import dataclasses
import functools
import operator
import os
import types
import typing
from collections.abc import Mapping, Sequence

import pytest

from courtroom.api._options import COMMAND_OPTIONS, KEYWORDS, PATHS, ExperimentOptions
from courtroom.cli._options import OPTIONS
from courtroom.spec import SECTIONS, Experiment
from courtroom.spec._experiment import ALIASES

OPTION_FIELD = {"data": "source", "role": "roles", "preset": "presets", "sets": "knobs", "loops": "knobs",
                "opt": "optimizer_settings", "compile_with": "optimizer", "no_prune": "prune"}  # fmt: skip
"""A flag's option name (``courtroom.cli._options.OPTIONS``) -> the spec field it sets, where they differ."""

NOT_KEYWORDS = {"show", "format", "dry_run"}
"""What a command prints (--show, --format) and its dry run (courtroom.estimate): no keyword of the functions."""

POSITIONAL = {"run": {"framework"}, "compare": {"frameworks"}, "compile": {"framework"}, "study": {"framework"},
              "score": set()}  # fmt: skip
"""The functions' first argument."""


def _field_types() -> dict[str, object]:
    out: dict[str, object] = {}
    for cls in SECTIONS.values():
        out |= typing.get_type_hints(cls)
    return out


def _keyword(field: str, command: str) -> str:
    return "compile" if (command, field) == ("study", "optimizer") else KEYWORDS.get(field, field)


def _field_of(keyword: str) -> str:
    return ALIASES[keyword](None)[0] if keyword in ALIASES else keyword


def _members(t: object) -> set[object]:
    return set(typing.get_args(t)) if isinstance(t, types.UnionType) or typing.get_origin(t) is typing.Union else {t}


def _accepted(t: object, field: str) -> object:
    """A field's type as its keyword takes it: a list also as comma-separated text, a dict a mapping, a file a path."""
    out: list[object] = [os.PathLike[str]] if field in PATHS else []
    for member in _members(t):
        origin, args = typing.get_origin(member), typing.get_args(member)
        if origin is list:
            out += [str, Sequence[args[0]]] if args[0] is str else [Sequence[args[0]]]
        elif origin is dict:
            out.append(Mapping[args[0], args[1]])
        else:
            out.append(member)
    return functools.reduce(operator.or_, out)


@pytest.mark.parametrize("command", sorted(COMMAND_OPTIONS))
def test_keywords_are_the_commands_flags(command: str) -> None:
    fields = {OPTION_FIELD.get(o.name, o.name) for o in OPTIONS if command in o.commands}
    expected = {_keyword(f, command) for f in fields - NOT_KEYWORDS - POSITIONAL[command]}
    assert set(typing.get_type_hints(COMMAND_OPTIONS[command])) == expected


@pytest.mark.parametrize("command", sorted(COMMAND_OPTIONS))
def test_keyword_types_are_the_spec_fields(command: str) -> None:
    fields = _field_types()
    for keyword, hint in typing.get_type_hints(COMMAND_OPTIONS[command]).items():
        field = _field_of(keyword)
        assert field in fields, f"{command}: {keyword} sets no spec field"
        assert _members(hint) == _members(_accepted(fields[field], field)), (command, keyword, hint, fields[field])


def test_every_spec_field_is_a_keyword_of_experiment() -> None:
    keywords = typing.get_type_hints(ExperimentOptions)
    every = {f.name for cls in SECTIONS.values() for f in dataclasses.fields(cls)}
    assert {_field_of(k) for k in keywords} == every
    fields = _field_types()
    for keyword, hint in keywords.items():
        assert _members(hint) == _members(_accepted(fields[_field_of(keyword)], _field_of(keyword))), keyword


def test_the_keywords_set_their_fields_at_run_time() -> None:
    spec = Experiment.build("study", data="generate", preset="jot-paper", settings={"x": 1}, compile="labeled")
    assert (spec.data.source, spec.design.presets) == ("generate", ["jot-paper"])
    assert (spec.design.optimizer_settings, spec.design.optimizer) == ({"x": 1}, "labeled")
    from pathlib import Path

    spec = Experiment.build("run", out=Path("a") / "runs", prices=Path("p.json"))
    assert (spec.output.out, spec.budget.prices) == (str(Path("a") / "runs"), "p.json")


def test_a_misspelt_keyword_names_the_nearest_one_at_run_time() -> None:
    import courtroom

    with pytest.raises(courtroom.ConfigError, match=r"option text_feld \(did you mean text_field\?\) for score"):
        courtroom.score("program.json", text_feld="q")  # type: ignore[call-arg]
    with pytest.raises(courtroom.ConfigError, match=r"unknown option api_bse \(did you mean api_base\?\) for load"):
        courtroom.load("program.json", api_bse="http://127.0.0.1:1/v1")  # type: ignore[call-arg]
    with pytest.raises(courtroom.ConfigError, match=r"unknown option dev_limt \(did you mean dev_limit\?\) for study"):
        courtroom.study("jot", dev_limt=3)  # type: ignore[call-arg]
