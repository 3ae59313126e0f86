"""``courtroom predict program.json "case"`` or ``--input cases.jsonl``: verdicts from a saved program."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from courtroom.cli._app import app
from courtroom.cli._options import DATA_PANEL, OUTPUT_PANEL, experiment
from courtroom.errors import ConfigError, DataError, ModelError
from courtroom.spec import Experiment


def read_cases(path: str, text_fields: list[str] | None = None, label_field: str | None = None) -> list[dict[str, Any]]:
    """JSONL lines with ``case`` (and optionally ``id``); a plain string line is a case too.

    With ``text_fields`` (``--text-field``), any file ``--dataset`` reads (CSV, JSONL, JSON, Parquet):
    the case is those fields, joined as every command joins them, and ``gold`` is ``label_field``'s value.
    """
    from courtroom._files import read_text

    if text_fields:
        return _field_cases(path, text_fields, label_field)
    rows = []
    text = read_text(path, "--input")
    if Path(path).suffix.lower() in TABLES or (Path(path).suffix.lower() == ".json" and text.lstrip()[:1] == "["):
        _needs_text_field(path)
    lines = text.splitlines()
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DataError(f'{path} line {n}: not JSON ({exc.msg}); write one {{"case": ...}} per line') from exc
        if isinstance(row, str):
            row = {"case": row}
        if not isinstance(row, dict) or not isinstance(row.get("case"), str) or not row["case"].strip():
            raise DataError(f'{path} line {n}: needs a non-empty "case" text field')
        rows.append({"id": str(row.get("id", n)), "case": row["case"]})
    if not rows:
        raise DataError(f"{path} has no cases")
    return rows


TABLES = (".csv", ".tsv", ".parquet")
"""Files of rows with named fields: their case text is the fields ``--text-field`` names."""


def _needs_text_field(path: str) -> None:
    """A table (or a JSON list) given to ``--input`` without ``--text-field``: name its fields and the flag."""
    from courtroom.data.custom import read_file

    try:
        fields = [str(f) for f in read_file(Path(path))[0]]
    except Exception:  # noqa: BLE001 - the hint names the flag even when the fields cannot be read
        fields = []
    listed = f" (its fields: {', '.join(fields)})" if fields else ""
    first = fields[0] if fields else "FIELD"
    raise DataError(
        f"{path} holds rows of fields, not one case per line: name the field(s) that make the case with "
        f"--text-field{listed}, e.g. --input {path} --text-field {first}"
    )


def _field_cases(path: str, text_fields: list[str], label_field: str | None) -> list[dict[str, Any]]:
    from courtroom.data.catalog import fields_text
    from courtroom.data.custom import read_file

    records = read_file(Path(path))
    wanted = [*text_fields, *([label_field] if label_field else [])]
    missing = [f for f in wanted if f not in records[0]]
    if missing:
        raise DataError(
            f"{path} has no field {', '.join(missing)}: its fields are {', '.join(map(str, records[0]))}; "
            "fix --text-field/--label-field"
        )
    text = fields_text(text_fields)
    rows = []
    for n, record in enumerate(records, 1):
        case = text(record)
        if not case.strip():
            raise DataError(f"{path} row {n}: {', '.join(text_fields)} is empty")
        row = {"id": str(record.get("id", n)), "case": case}
        if label_field:
            row["gold"] = record[label_field]
        rows.append(row)
    return rows


def own_shape_cases(program_file: str, path: str) -> list[dict[str, Any]] | None:
    """The cases of a file of the program's own data shape, read as its compile read them; None: not such a file.

    A file whose rows hold no ``case`` field is read with the fields the program's dataset was read
    with (and its label field, where the rows have it, as gold), or as the program's registered task
    reads its rows (BIG-Bench-Hard's ``input``/``target``, CaseLaw's ``text``/``label``, ...).
    """
    from courtroom.data.custom import FILE_FORMATS, read_file
    from courtroom.saving import read_program_file

    if Path(path).suffix.lower() not in FILE_FORMATS or not Path(path).is_file():
        return None
    try:
        records = read_file(Path(path))
    except Exception:  # noqa: BLE001 - read_cases reads it again and says why
        return None
    if not records or not isinstance(records[0], dict) or "case" in records[0]:
        return None
    meta = read_program_file(program_file)[1]
    data = (meta.get("spec") or {}).get("data") or {}
    if data.get("text_field"):
        label = data.get("label_field")
        return _field_cases(path, list(data["text_field"]), label if label in records[0] else None)
    name = str((meta.get("task") or {}).get("name") or "")
    if not name or name.startswith("custom:"):
        return None
    from courtroom.data.tasks import get_task

    return _task_cases(path, records, get_task(name))


def _task_cases(path: str, records: list[dict[str, Any]], task: Any) -> list[dict[str, Any]] | None:
    """Each record's case as ``task`` builds it, and its gold label where the record has one.

    None when the first record is not of the task's shape (:func:`read_cases` then names ``--text-field``).
    """
    rows = []
    for n, record in enumerate(records, 1):
        try:
            case = str(task.text(record) or "").strip()
        except Exception as exc:  # noqa: BLE001 - a row the task cannot read
            if n == 1:
                return None
            raise DataError(f"{path} row {n}: not a {task.name} row like row 1 ({type(exc).__name__}: {exc})") from None
        if not case:
            raise DataError(f"{path} row {n}: the case text is empty")
        row = {"id": str(record.get("id", n)), "case": case}
        try:
            gold = task.label(record)
        except Exception:  # noqa: BLE001 - an unlabelled row is a case to predict
            gold = None
        rows.append(row | ({"gold": gold} if gold is not None else {}))
    return rows


@app.command("predict")
@experiment("predict")
def predict_command(
    program_file: Annotated[str, typer.Argument(help="Program file written by `courtroom compile`.")],
    case: Annotated[str | None, typer.Argument(help="Case text (or use --input).")] = None,
    input_file: Annotated[
        str | None,
        typer.Option(
            "--input",
            help='JSONL file, one {"case": ...} per line; with --text-field, any CSV, JSONL, JSON or Parquet file.',
            rich_help_panel=DATA_PANEL,
        ),
    ] = None,
    transcript: Annotated[
        bool,
        typer.Option(
            "--transcript/--no-transcript", help="Print the transcript of a single case.", rich_help_panel=OUTPUT_PANEL
        ),
    ] = True,
    *,
    spec: Experiment,
) -> None:
    """Give the verdict for one case (label and transcript) or for every line of --input."""
    from courtroom.api import predict
    from courtroom.cli._values import check_providers, inputs_of, writable_file
    from courtroom.models.cache import configure_cache
    from courtroom.programs import all_roles
    from courtroom.reporting.logs import quiet_dspy
    from courtroom.saving import load_program
    from courtroom.transcript import render_text

    quiet_dspy()  # no progress display here to do it: DSPy's warnings (a truncated answer) only with --debug
    if (case is None) == (input_file is None):
        raise ConfigError("give exactly one of a case text or --input cases.jsonl")
    if case is not None and not case.strip():
        raise ConfigError("the case text is empty")
    if case is not None and spec.data.text_field:
        raise ConfigError("--text-field names fields of --input: drop it with a case text")
    output = spec.output.out
    if output:
        writable_file(output, "--out", "results.jsonl", inputs_of(spec, program_file, input_file))
    m = spec.models
    check_providers(m.lm, [f"{r}={v}" for r, v in m.roles.items()])
    from courtroom.programs import check_roles

    check_roles(m.roles, all_roles())
    configure_cache()
    program = load_program(program_file, lm=m.default, roles=m.roles or None, temperature=m.temperature,
                           max_tokens=m.max_tokens, api_base=m.api_base, timeout=m.timeout,
                           n_sampling=m.n_sampling, prompt_layout=m.prompt_layout)  # fmt: skip
    from courtroom.reporting.tables import say, stdout_console

    console = stdout_console()
    if case is not None:
        verdict = predict(program, case)[0]
        if verdict.error:
            raise ModelError(f"the case failed: {verdict.error}")
        if transcript:
            console.print(render_text(verdict.transcript), markup=False, highlight=False)
        say(console, f"label: {verdict.label}")
        return
    rows = None if spec.data.text_field else own_shape_cases(program_file, str(input_file))
    if rows is None:
        rows = read_cases(str(input_file), spec.data.text_field, spec.data.label_field)
    verdicts = predict(program, rows, concurrency=spec.execution.concurrency or 4)
    golds = _golds(rows, program.labels) if all("gold" in row for row in rows) else None
    sink = open(output, "w") if output else sys.stdout  # noqa: SIM115 - closed below when it is a file
    try:
        for n, v in enumerate(verdicts):
            line = v.to_dict()
            if golds is not None:
                line |= {"gold": golds[n], "correct": v.label is not None and v.label == golds[n]}
            sink.write(json.dumps(line) + "\n")
    finally:
        if output:
            sink.close()
    failed = sum(v.label is None for v in verdicts)
    said = f"{len(verdicts)} case(s), {failed} failed"
    if golds is not None:
        # Every line is answered; a case text repeated in the file counts once (its first line), as in every command.
        from courtroom.data.tasks import case_key

        first = {case_key(row["case"]): n for n, row in reversed(list(enumerate(rows)))}
        counted = sorted(first.values())
        right = sum(verdicts[n].label is not None and verdicts[n].label == golds[n] for n in counted)
        said += f"; {right} right ({right / len(counted):.3f}"
        if len(counted) < len(rows):
            said += f" of {len(counted)} distinct cases: {len(rows) - len(counted)} line(s) repeat an earlier case text"
        said += "; with its interval and the vote at the same calls: courtroom score)"
    from courtroom.reporting.tables import to_stderr

    to_stderr(said + (f"; results in {output}" if output else ""))
    from courtroom.eval.status import TooManyFailures, status

    outcome = status(failed, len(verdicts), spec.execution.threshold, [v.error for v in verdicts])
    if outcome["status"] == "failed":
        raise TooManyFailures(str(outcome["status_reason"]).replace("examples", "cases"))


def _golds(rows: list[dict[str, Any]], labels: list[str]) -> list[str]:
    """Each row's gold label in the program's label space (integer labels index it); one line if one is not."""
    from courtroom.data.catalog import canonical_label

    out = []
    for row in rows:
        gold = canonical_label(row["gold"], labels)
        if gold is None:
            raise DataError(f"case {row['id']}: label {row['gold']!r} is not one of the program's {', '.join(labels)}")
        out.append(gold)
    return out
