"""The built-in tasks of SPEC §5: Hub id, text builder, label space and positions of each.

A :class:`Task` only describes data; :mod:`courtroom.data.tasks` loads it. Raw label values
are mapped onto the label space by :func:`canonical_label` (exact, then case-insensitive, then
an integer index), so BBH's lower-case ``sports_understanding`` targets and GLUE's integer
labels need no per-task code.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

Record = Mapping[str, Any]


def field_text(name: str) -> Callable[[Record], Any]:
    """A builder that reads one field (strings are stripped)."""

    def build(r: Record) -> Any:
        value = r[name]
        return value.strip() if isinstance(value, str) else value

    return build


def fields_text(names: Sequence[str], titles: Sequence[str] | None = None) -> Callable[[Record], str]:
    """A builder that joins several fields as ``Title: value`` lines (one field: its bare value)."""
    names = list(names)
    if len(names) == 1:
        one = names[0]
        return lambda r: str(r[one]).strip()
    heads = list(titles) if titles else [n.replace("_", " ").capitalize() for n in names]
    return lambda r: "\n".join(f"{h}: {str(r[n]).strip()}" for h, n in zip(heads, names, strict=True))


def bbh_text(r: Record) -> str:
    """BBH input with trailing spaces removed per line (formal_fallacies reads ``- valid ``)."""
    return "\n".join(line.rstrip() for line in str(r["input"]).strip().splitlines())


def canonical_label(value: Any, labels: Sequence[str]) -> str | None:
    """``value`` as one of ``labels``, or None when it is not in the label space.

    Tried in order: the exact string, a case-insensitive match, then an integer index into
    ``labels`` (GLUE/ANLI/Emotion store class ids) unless the labels are themselves numbers.
    """
    text = str(value).strip()
    if text in labels:
        return text
    folded = {lab.casefold(): lab for lab in labels}
    if text.casefold() in folded:
        return folded[text.casefold()]
    numeric_labels = all(re.fullmatch(r"-?\d+", lab) for lab in labels)
    if not numeric_labels and not isinstance(value, bool) and re.fullmatch(r"\d+", text):
        i = int(text)
        return labels[i] if i < len(labels) else None
    return None


@dataclass(frozen=True)
class Task:
    """A decision task: where its data lives, how to build the case text, and its label space."""

    name: str
    labels: tuple[str, ...]
    positions: tuple[str, ...] | None = None
    """What binary advocates argue (default: the labels)."""
    hub: tuple[str, str | None, str] | None = None
    """(path, config, split) for ``datasets.load_dataset``; we re-split it with a seed."""
    fields: tuple[str, ...] = ("input", "target")
    """Raw fields the builders read; a missing one is reported with the fields available."""
    text: Callable[[Record], str] = field(default=bbh_text)
    label: Callable[[Record], Any] = field(default=field_text("target"))
    keep: Callable[[Record], bool] | None = None
    """Rows to keep (others are filtered out before label checking), e.g. single-charge cases."""
    description: str = ""
    label_space: Callable[[Sequence[Record]], tuple[str, ...]] | None = None
    """Derive the labels from the loaded records (rows outside them are then dropped), e.g. CAIL2018's
    most frequent charges; ``labels`` is then empty until the data is loaded."""

    def with_labels_from(self, records: Sequence[Record]) -> Task:
        """This task with its label space taken from ``records`` (itself if it has a fixed one)."""
        if self.label_space is None:
            return self
        labels = self.label_space(records)
        keep, label = self.keep, self.label
        return replace(
            self,
            labels=labels,
            keep=lambda r: (keep is None or keep(r)) and canonical_label(label(r), labels) is not None,
        )

    @property
    def has_generator(self) -> bool:
        """Whether offline generated data exists for this task."""
        from courtroom.data.generators import GENERATORS

        return self.name in GENERATORS

    @property
    def source(self) -> str:
        """Where the data comes from, for listings."""
        if self.hub is None:
            return "local file (--data PATH)"
        path, config, split = self.hub
        return f"{path}" + (f":{config}" if config else "") + f" ({split})"


def _bbh(name: str, labels: tuple[str, str], description: str, positions: tuple[str, str] | None = None) -> Task:
    return Task(name, labels, positions, hub=("lukaemon/bbh", name, "test"), description=description)


def _winogrande_text(r: Record) -> str:
    return f"{str(r['sentence']).strip()}\nOption 1: {r['option1']}\nOption 2: {r['option2']}"


def _winogrande_label(r: Record) -> str:
    return {"1": "option1", "2": "option2"}.get(str(r["answer"]).strip(), str(r["answer"]))


CAIL_TOP = 10
"""CAIL2018's label space: the most frequent single charges of the loaded data."""


def _cail_charges(r: Record) -> list[str]:
    raw = r["accusation"]
    items = raw if isinstance(raw, list | tuple) else [raw]
    return [str(a).strip().strip("[]").replace("[", "").replace("]", "").removesuffix("罪") for a in items]


def _cail_keep(r: Record) -> bool:
    # The frameworks decide one label per case: rows with several charges are left out.
    return len(_cail_charges(r)) == 1


def _cail_space(records: Sequence[Record]) -> tuple[str, ...]:
    counts = Counter(_cail_charges(r)[0] for r in records if _cail_keep(r))
    return tuple(c for c, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:CAIL_TOP])


def _caselaw_field(r: Record, names: Sequence[str]) -> Any:
    for name in names:
        if name in r:
            return r[name]
    from courtroom.errors import DataError

    raise DataError(
        f"caselaw: a row has none of the fields {', '.join(names)}; available fields: {', '.join(sorted(r))}"
    )


def _caselaw_text(r: Record) -> str:
    return str(_caselaw_field(r, ("case_background", "text"))).strip()


def _caselaw_label(r: Record) -> Any:
    value = _caselaw_field(r, ("labels", "label"))
    if isinstance(value, list | tuple) and len(value) == 1:
        return value[0]  # a one-element list of labels
    return value


BUILTIN_TASKS: tuple[Task, ...] = (
    _bbh("boolean_expressions", ("True", "False"), "BBH: evaluate a Boolean expression (True/False)."),
    _bbh("causal_judgement", ("Yes", "No"), "BBH: how would a typical person answer a causation question?"),
    _bbh("formal_fallacies", ("valid", "invalid"), "BBH: is the argument deductively valid?"),
    _bbh("web_of_lies", ("Yes", "No"), "BBH: follow a chain of liars and truth-tellers."),
    _bbh("navigate", ("Yes", "No"), "BBH: do the steps return to the starting point?"),
    _bbh(
        "sports_understanding",
        ("Yes", "No"),
        "BBH: is the sports sentence plausible? (targets are lower case)",
    ),
    Task(
        "winogrande",
        ("option1", "option2"),
        hub=("allenai/winogrande", "winogrande_xl", "validation"),
        fields=("sentence", "option1", "option2", "answer"),
        text=_winogrande_text,
        label=_winogrande_label,
        description="Winogrande: which option fills the blank?",
    ),
    Task(
        "rte",
        ("entailment", "not_entailment"),
        hub=("nyu-mll/glue", "rte", "validation"),
        fields=("sentence1", "sentence2", "label"),
        text=fields_text(["sentence1", "sentence2"], ["Premise", "Hypothesis"]),
        label=field_text("label"),
        description="GLUE RTE: does the premise entail the hypothesis?",
    ),
    Task(
        "qnli",
        ("entailment", "not_entailment"),
        hub=("nyu-mll/glue", "qnli", "validation"),
        fields=("question", "sentence", "label"),
        text=fields_text(["question", "sentence"]),
        label=field_text("label"),
        description="GLUE QNLI: does the sentence answer the question?",
    ),
    Task(
        "boolq",
        ("True", "False"),
        hub=("google/boolq", None, "validation"),
        fields=("question", "passage", "answer"),
        text=fields_text(["passage", "question"]),
        label=field_text("answer"),
        description="BoolQ: a yes/no question about a passage.",
    ),
    *(
        Task(
            f"anli_r{k}",
            ("entailment", "neutral", "contradiction"),
            hub=("facebook/anli", None, f"test_r{k}"),
            fields=("premise", "hypothesis", "label"),
            text=fields_text(["premise", "hypothesis"]),
            label=field_text("label"),
            description=f"Adversarial NLI round {k} (3 classes).",
        )
        for k in (1, 2, 3)
    ),
    Task(
        "emotion",
        ("sadness", "joy", "love", "anger", "fear", "surprise"),
        hub=("dair-ai/emotion", "split", "test"),
        fields=("text", "label"),
        text=fields_text(["text"]),
        label=field_text("label"),
        description="Emotion of an English tweet (6 classes).",
    ),
    Task(
        "cail2018",
        (),
        hub=("china-ai-law-challenge/cail2018", None, "exercise_contest_test"),
        fields=("fact", "accusation"),
        text=fields_text(["fact"]),
        label=lambda r: _cail_charges(r)[0],
        keep=_cail_keep,
        label_space=_cail_space,
        description=f"CAIL2018 charge prediction as single-charge classification: labels are the {CAIL_TOP} "
        "most frequent single charges of the loaded data (not the paper's multi-label article prediction).",
    ),
    Task(
        "caselaw",
        ("Plaintiff wins", "Defendant wins"),
        fields=(),
        text=_caselaw_text,
        label=_caselaw_label,
        description="Legal judgment (Plaintiff/Defendant wins): JSONL with {case_background, labels} as the "
        "Debate-Feedback authors released it, or {text, label}.",
    ),
)
