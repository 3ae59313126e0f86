"""``courtroom predict program.json "case"`` or ``--input cases.jsonl``: verdicts from a saved program."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console

from courtroom.cli import _options as opt
from courtroom.cli._app import app
from courtroom.errors import ConfigError, DataError


def read_cases(path: str) -> list[dict[str, Any]]:
    """JSONL lines with ``case`` (and optionally ``id``); a plain string line is a case too."""
    rows = []
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from exc
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


@app.command("predict")
def predict_command(
    program_file: Annotated[str, typer.Argument(help="Program file written by `courtroom compile`.")],
    case: Annotated[str | None, typer.Argument(help="Case text (or use --input).")] = None,
    config: opt.CONFIG = None,
    input_file: Annotated[
        str | None,
        typer.Option("--input", help='JSONL file, one {"case": ...} per line.', rich_help_panel=opt.DATA_PANEL),
    ] = None,
    output: Annotated[
        str | None,
        typer.Option(
            "--output", help="Write JSONL results here.", show_default="stdout", rich_help_panel=opt.OUTPUT_PANEL
        ),
    ] = None,
    transcript: Annotated[
        bool,
        typer.Option(
            "--transcript/--no-transcript",
            help="Print the transcript of a single case.",
            rich_help_panel=opt.OUTPUT_PANEL,
        ),
    ] = True,
    lm: opt.LM = None,
    role: opt.ROLE = None,
    temperature: opt.TEMPERATURE = None,
    max_tokens: opt.MAX_TOKENS = None,
    api_base: opt.API_BASE = None,
    timeout: opt.TIMEOUT = None,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", min=1, help="Cases in flight at once.", rich_help_panel=opt.EXECUTION_PANEL),
    ] = 4,
) -> None:
    """Give the verdict for one case (label and transcript) or for every line of --input."""
    import dspy

    from courtroom.eval.harness import evaluate
    from courtroom.models.cache import configure_cache
    from courtroom.models.lms import parse_role_overrides
    from courtroom.programs import all_roles
    from courtroom.saving import load_program
    from courtroom.transcript import render_text

    if (case is None) == (input_file is None):
        raise ConfigError("give exactly one of a case text or --input cases.jsonl")
    if case is not None and not case.strip():
        raise ConfigError("the case text is empty")
    if output:
        opt.writable_file(output, "--output", "results.jsonl")
    opt.check_providers(lm, role)
    configure_cache()
    roles = parse_role_overrides(role or [], all_roles())
    options = {
        k: v
        for k, v in (
            ("temperature", temperature),
            ("max_tokens", max_tokens),
            ("api_base", api_base),
            ("timeout", timeout),
        )
        if v is not None
    }
    program = load_program(program_file, lm=lm, roles=roles or None, **options)
    console = Console()
    if case is not None:
        pred = program(case=case)
        if transcript:
            console.print(render_text(pred.transcript), markup=False, highlight=False)
        console.print(f"label: {pred.label}", markup=False, highlight=False)
        return
    rows = read_cases(str(input_file))
    examples = [dspy.Example(case=r["case"], label="", id=r["id"]).with_inputs("case") for r in rows]
    results = evaluate(program, examples, concurrency=concurrency)
    sink = open(output, "w") if output else sys.stdout  # noqa: SIM115 - closed below when it is a file
    try:
        for r in results:
            sink.write(
                json.dumps({"id": r.id, "label": r.prediction, "error": r.error, "transcript": r.transcript}) + "\n"
            )
    finally:
        if output:
            sink.close()
    failed = sum(r.prediction is None for r in results)
    Console(stderr=True).print(
        f"{len(results)} case(s), {failed} failed" + (f"; results in {output}" if output else "")
    )
