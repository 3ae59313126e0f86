"""``courtroom report``: one self-contained HTML file for a run, a repeat group, a comparison or a study.

It opens with what ran (models per role, seed, date, data source, n, library versions:
:mod:`courtroom.runner.provenance`), then holds the summary tables (numbers formatted for
reading: :mod:`courtroom.reporting.formatting`), the plots (base64 PNG), the analyses, and every
transcript with roles told apart by colour, judge decisions and feedback, votes, probabilities
and reliabilities; buttons filter the examples to the wrong or the failed ones. Repeats show
repeat 0 and keep the others collapsed. No network: CSS and JavaScript are inline.
"""

from __future__ import annotations

import base64
import html
import json
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from courtroom.analysis import papers as analysis
from courtroom.analysis.calibration import scores
from courtroom.analysis.flips import flip_matrix, flip_table
from courtroom.comparison.plots import load_comparison
from courtroom.errors import ConfigError
from courtroom.reporting import plots
from courtroom.reporting.formatting import MAIN_COLUMNS, header, readable_stats, readable_summary, readable_table
from courtroom.runner.provenance import Provenance, html_block, provenance, subtitle
from courtroom.runner.runs import load_run, positions
from courtroom.transcript import render_html

_CSS = """
body{
  font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1240px;
  color:#222;line-height:1.45;padding:0 1rem}
h1{font-size:1.6rem}
h2{border-bottom:2px solid #ddd;padding-bottom:.2rem;margin-top:2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{border:1px solid #ccc;padding:.25rem .6rem;text-align:right}
th{background:#f3f3f3}
td:first-child,th:first-child{text-align:left}
img.plot{max-width:100%;border:1px solid #eee;margin:.4rem .4rem 0 0}
.filters{position:sticky;top:0;background:#fff;padding:.5rem 0;z-index:2;border-bottom:1px solid #eee}
.filters button{
  margin-right:.4rem;padding:.25rem .8rem;border:1px solid #999;border-radius:1rem;
  background:#fafafa;cursor:pointer}
.filters button.active{background:#333;color:#fff}
details.example{border:1px solid #ddd;border-radius:6px;margin:.5rem 0;padding:.3rem .7rem}
details.example>summary{cursor:pointer;font-weight:600}
details.correct>summary::before{content:"✓ ";color:#1a7f37}
details.wrong>summary::before{content:"✗ ";color:#c62828}
details.failed>summary::before{content:"⚠ ";color:#b26a00}
.case{
  white-space:pre-wrap;background:#f7f7f7;padding:.5rem;border-radius:4px;
  font-family:ui-monospace,monospace;font-size:.85rem}
.error{color:#b00020;font-weight:600}
.turn{
  border-left:5px solid #999;background:#fafafa;margin:.45rem 0;padding:.35rem .7rem;
  border-radius:0 6px 6px 0}
.turn .who{font-weight:700;text-transform:capitalize}
.turn .text{white-space:pre-wrap}
.turn .decision{
  display:inline-block;margin-left:.6rem;padding:0 .5rem;border-radius:.7rem;background:#333;
  color:#fff;font-size:.8rem;text-transform:none}
.turn ul.extra{margin:.2rem 0;font-size:.85rem;color:#444}
.role-lawyer,.role-attorney{border-color:#1565c0;background:#eef4fc}
.role-prosecutor{border-color:#c62828;background:#fdeeee}
.role-judge{border-color:#6a1b9a;background:#f5edfa}
.role-clerk{border-color:#546e7a;background:#eef2f4}
.role-debater{border-color:#00796b;background:#e9f6f4}
.role-assistant,.role-reasoner{border-color:#ef6c00;background:#fff4e8}
.role-classifier,.role-critic{border-color:#5d4037;background:#f6f1ee}
table.fields td,table.field td,table.analysis td{text-align:left}
p.none{color:#777}
div.scroll{overflow-x:auto}
table.provenance{font-size:.8rem;color:#333;margin:.2rem 0 1rem}
table.provenance th,table.provenance td{text-align:left;border:none;padding:.1rem .6rem .1rem 0;background:none}
table.provenance th{color:#666;font-weight:600;white-space:nowrap}
table.summary{font-size:.82rem}
table.summary th{white-space:normal;max-width:7rem;vertical-align:bottom}
table.summary td{white-space:nowrap;padding:.25rem .45rem}
table.summary td:first-child{white-space:normal}
details.more>summary,details.repeat>summary{cursor:pointer;color:#444;margin:.4rem 0}
details.repeat{border-left:3px solid #ddd;padding-left:.6rem;margin:.6rem 0}
p.shown{color:#444;font-size:.9rem}
"""

_JS = """
function show(kind){document.querySelectorAll('details.example').forEach(function(d){
 var on=kind==='all'||d.classList.contains(kind)||(kind==='wrong'&&d.classList.contains('failed'));
 d.style.display=on?'':'none';});
 document.querySelectorAll('.filters button').forEach(function(b){
  b.classList.toggle('active',b.dataset.kind===kind);});
 if(history.replaceState){history.replaceState(null,'','#'+kind);}}
if(['wrong','failed','correct'].indexOf(location.hash.slice(1))>=0){show(location.hash.slice(1));}
"""


def _img(path: Path) -> str:
    data = base64.b64encode(Path(path).read_bytes()).decode()
    return f'<img class="plot" alt="{html.escape(Path(path).stem)}" src="data:image/png;base64,{data}">'


def _table(df: pd.DataFrame, css: str = "summary") -> str:
    table = df.to_html(classes=css, float_format=lambda x: f"{x:.4g}", na_rep="n/a", border=0, index_names=False)
    return f'<div class="scroll">{table}</div>'


def _value(v: Any) -> str:
    if isinstance(v, list) and v and all(isinstance(x, Mapping) for x in v):
        keys = list(dict.fromkeys(k for x in v for k in x))
        head = "".join(f"<th>{html.escape(str(k))}</th>" for k in ["#", *keys])
        body = "".join(
            "<tr><td>" + str(i) + "</td>" + "".join(f"<td>{_scalar(x.get(k))}</td>" for k in keys) + "</tr>"
            for i, x in enumerate(v)
        )
        return f"<table class='field'><tr>{head}</tr>{body}</table>"
    if isinstance(v, list):
        return ", ".join(_scalar(x) for x in v)
    if isinstance(v, Mapping):
        return "; ".join(f"{html.escape(str(k))}: {_scalar(x)}" for k, x in v.items())
    return _scalar(v)


def _scalar(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3f}"
    if isinstance(v, list):
        return "[" + ", ".join(_scalar(x) for x in v) + "]"
    if isinstance(v, Mapping):
        return "{" + ", ".join(f"{html.escape(str(k))}: {_scalar(x)}" for k, x in v.items()) + "}"
    return html.escape(str(v))


def _example(i: int, r: Mapping[str, Any], opened: bool) -> str:
    status = "failed" if r.get("prediction") is None else ("correct" if r["prediction"] == r["gold"] else "wrong")
    pred = "FAILED" if r.get("prediction") is None else r["prediction"]
    fields = r.get("fields") or {}
    rows = "".join(
        f"<tr><th>{html.escape(k)}</th><td style='text-align:left'>{_value(v)}</td></tr>" for k, v in fields.items()
    )
    parts = [
        f'<details class="example {status}" data-id="{html.escape(str(r["id"]))}"' + (" open>" if opened else ">"),
        f"<summary>#{i} {html.escape(str(r['id']))} — gold: {html.escape(str(r['gold']))} — prediction: "
        f"{html.escape(str(pred))}</summary>",
        f'<div class="case">{html.escape(str(r.get("input", "")))}</div>',
    ]
    if r.get("error"):
        parts.append(f'<p class="error">error: {html.escape(str(r["error"]))}</p>')
    if rows:
        parts.append(f"<table class='fields'>{rows}</table>")
    parts.append(render_html(r.get("transcript") or []))
    parts.append("</details>")
    return "\n".join(parts)


def _repeat_folders(folder: Path) -> list[Path]:
    """A repeat group's run folders in repeat order (a plain run folder: itself)."""
    if not (folder / "group.json").is_file():
        return [folder]
    found = [p for p in folder.glob("repeat-*") if (p / "meta.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.rpartition("-")[2]) if p.name.rpartition("-")[2].isdigit() else 0)


def _accuracy(results: Sequence[Mapping[str, Any]]) -> str:
    return f"{sum(r.get('prediction') == r['gold'] for r in results) / len(results):.2f}" if results else "n/a"


def _transcripts(runs: Mapping[str, Sequence[Path]]) -> str:
    """Each row's transcripts: its first run shown, further repeats each collapsed in a ``details`` block."""
    blocks, counts = [], {"all": 0, "wrong": 0, "failed": 0}
    for name, folders in runs.items():
        blocks.append(f"<h3>{html.escape(name)}</h3>")
        if len(folders) > 1:
            blocks.append(
                f'<p class="shown">Shown: the transcripts of {html.escape(folders[0].name)} '
                f"(of {len(folders)} repeats). The other repeats are below, collapsed: "
                + ", ".join(html.escape(f.name) for f in folders[1:])
                + ".</p>"
            )
        for k, run_dir in enumerate(folders):
            meta, results, _ = load_run(run_dir)
            where = positions(meta, results)  # numbered by input position, as `show` numbers them
            counts["all"] += len(results)
            counts["wrong"] += sum(r.get("prediction") != r["gold"] for r in results)
            counts["failed"] += sum(r.get("prediction") is None for r in results)
            first_wrong = next((i for i, r in enumerate(results) if r.get("prediction") != r["gold"]), 0)
            examples = [_example(where[i], r, opened=k == 0 and i == first_wrong) for i, r in enumerate(results)]
            if k == 0:
                blocks += examples
            else:
                blocks.append(
                    f'<details class="repeat" data-repeat="{html.escape(run_dir.name)}"><summary>{html.escape(name)}, '
                    f"{html.escape(run_dir.name)}: accuracy {_accuracy(results)}, {len(results)} examples</summary>"
                    + "".join(examples)
                    + "</details>"
                )
    buttons = "".join(
        f'<button data-kind="{k}" class="{"active" if k == "all" else ""}" onclick="show(\'{k}\')">{k} ({n})</button>'
        for k, n in counts.items()
    )
    body = f'<div class="filters">{buttons}</div>{"".join(blocks)}'
    return f'<section id="transcripts"><h2>Transcripts</h2>{body}</section>'


def _run_analyses(run_dir: Path, workdir: Path, about: Provenance) -> tuple[str, list[Path]]:
    meta, results, _ = load_run(run_dir)
    note, name = subtitle(about), f"{meta['config']['framework']} on {meta['task']['name']}"
    votes_file = run_dir / "ambiguity.json"
    amb = json.loads(votes_file.read_text()) if votes_file.is_file() else None
    found = analysis.analyze(
        results, meta.get("framework_config"), amb["votes"] if amb else None, amb["theta"] if amb else 0.5
    )
    out, figs = [], []
    labels = meta["task"]["labels"]
    framework = meta["config"]["framework"]
    flipped = flip_matrix(results, framework, labels, meta["task"].get("positions"))
    if flipped is not None:
        out.append("<h3>what the trial changed</h3>" + _table(flip_table({framework: flipped}), "analysis"))
    figs.append(
        plots.confusion(
            [r["gold"] for r in results],
            [r.get("prediction") for r in results],
            labels,
            workdir / "confusion.png",
            title=f"{name}: confusion matrix (n={len(results)})",
            note=note,
        )
    )
    calibration = scores(results)
    if calibration:
        figs.append(
            plots.reliability_diagram(
                {meta["config"]["framework"]: calibration["bins"]},
                workdir / "rel.png",
                title=f"{name}: reliability diagram (n per bin)",
                note=note,
            )
        )
    for key, value in found.items():
        if isinstance(value, pd.DataFrame):
            out.append(f"<h3>{html.escape(key)}</h3>" + _table(value.set_index(value.columns[0]), "analysis"))
            figs.append(
                plots.ambiguity_bars(
                    value,
                    workdir / f"{key}.png",
                    f"{name}: accuracy when {amb['k'] if amb else 'K'} hearing samples agree or not",
                    chance=about.chance(),
                    note=note,
                )
            )
        else:
            out.append(
                f"<h3>{html.escape(key)}</h3><table class='analysis'>"
                + "".join(f"<tr><th>{html.escape(k)}</th><td>{_value(v)}</td></tr>" for k, v in value.items())
                + "</table>"
            )
    return "".join(out), figs


def _flips(by_framework: Mapping[str, Any]) -> str:
    """The flip matrices of a comparison: from each framework's first answers to its verdict."""
    if not by_framework:
        return ""
    return (
        "<p class=shown>From the answers given before any argument (the first answers) to the verdict: "
        "count (share of the cases with first answers).</p>" + _table(flip_table(by_framework), "analysis")
    )


def _analyses(name: str, found: Mapping[str, Any]) -> str:
    """One framework's analyses in sentences (the ambiguity split a table); the flips have their own section."""
    said = [
        line.split(": ", 1)[1] if line.startswith(f"{name}: ") else line
        for line in analysis.analyses_lines(name, {k: v for k, v in found.items() if k not in ("flips", "ambiguity")})
    ]
    calibration = found.get("calibration")
    if calibration:
        said.append(
            f"calibration: Brier score {calibration['brier']:.3f}, expected calibration error "
            f"{calibration['ece']:.3f} (n={calibration['n']})"
        )
    if found.get("repeat_accuracies"):
        said.append("accuracy per repeat: " + ", ".join(f"{a:.3f}" for a in found["repeat_accuracies"]))
    known = {"agreement", "ph_transitions", "corrections", "position_consistency", "length_bias", "flips",
             "ambiguity", "calibration", "repeat_accuracies"}  # fmt: skip
    rest = "".join(
        f"<tr><th>{html.escape(k.replace('_', ' '))}</th><td>{_value(v)}</td></tr>"
        for k, v in found.items()
        if k not in known
    )
    ambiguity = found.get("ambiguity")
    body = "".join(f"<li>{html.escape(s)}</li>" for s in said)
    if not (body or rest or ambiguity):
        return ""
    return (
        f"<h3>{html.escape(name)}</h3>"
        + (f"<ul class='analysis'>{body}</ul>" if body else "")
        + (f"<table class='analysis'>{rest}</table>" if rest else "")
        + (
            "<p class=shown>ambiguous vs normal cases:</p>"
            + _table(pd.DataFrame(ambiguity).set_index("rule"), "analysis")
            if ambiguity
            else ""
        )
    )


def _section(key: str, title: str, body: str) -> str:
    return f'<section id="{key}"><h2>{title}</h2>{body or "<p class=none>none for this run</p>"}</section>'


def _page(title: str, about: Provenance | None, sections: Sequence[str], block: str = "") -> str:
    head = html_block(about) if about is not None else block
    return (
        f'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>{head}{''.join(sections)}"
        f"<script>{_JS}</script></body></html>"
    )


def _comparison_table(table: pd.DataFrame) -> str:
    """The comparison table for reading: the main columns, the rest in a collapsed block below."""
    readable = readable_table(table)
    main = [header(c) for c in MAIN_COLUMNS if header(c) in readable.columns]
    rest = [c for c in readable.columns if c not in main]
    more = (
        f'<details class="more"><summary>more columns: {html.escape(", ".join(rest))}</summary>'
        f"{_table(readable[rest])}</details>"
        if rest
        else ""
    )
    note = (
        "<p class=shown>Accuracy: mean and 95% CI over the repeats.</p>"
        if "accuracy_ci_low" in table.columns
        else "<p class=shown>Accuracy: 95% Wilson interval over the examples.</p>"
    )
    return _table(readable[main]) + note + more


def write_report(source: str | Path, out: str | Path = "report.html") -> Path:
    """Write the HTML report of a run folder, repeat group or comparison folder to ``out``."""
    src, out = Path(source), Path(out)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        from courtroom.reporting.study_html import is_study_folder, study_sections

        if is_study_folder(src):
            title, sections, block = study_sections(src, _img, _table, _section)
            return _write(out, _page(title, None, sections, block))
        if not any((src / f).is_file() for f in ("comparison.json", "group.json", "meta.json")):
            raise ConfigError(
                f"{src} is not a run, repeat group, comparison or study folder: pass a folder printed by "
                "`courtroom run`, `courtroom compare` or `courtroom study` (its report: line)"
            )
        about = provenance(src)
        if (src / "comparison.json").is_file():
            info, table, analyses = load_comparison(src)
            images = sorted((src / "plots").glob("*.png"))
            extra = "".join(_analyses(f, a) for f, a in analyses.items())
            flipped = {f: a["flips"] for f, a in analyses.items() if a.get("flips")}
            title = f"courtroom comparison: {info['task']}"
            frontier = src / "frontier.png"
            sections = [
                _section("frontier", "Accuracy vs cost", _img(frontier) if frontier.is_file() else ""),
                f'<section id="summary"><h2>Summary</h2>{_comparison_table(table)}</section>',
                _section("plots", "Plots", "".join(_img(p) for p in images)),
                _section("flips", "What the trial changed", _flips(flipped)),
                _section("analyses", "Analyses", extra),
                _transcripts({f: _repeat_folders(src / rel) for f, rel in info["runs"].items()}),
            ]
        elif (src / "group.json").is_file():
            stats = json.loads((src / "repeats.json").read_text())["stats"] if (src / "repeats.json").is_file() else {}
            runs = sorted(p for p in src.glob("repeat-*") if (p / "summary.json").is_file())
            accs = [json.loads((p / "summary.json").read_text())["accuracy"] for p in runs]
            title = f"courtroom repeats: {src.name}"
            framework = about.extra.get("framework") or src.name.split("_")[1]
            box = (
                plots.repeats_boxplot(
                    {framework: accs},
                    work / "repeats.png",
                    f"{about.task}: {framework}'s accuracy over {len(accs)} repeats",
                    n=about.n,
                    chance=about.chance(),
                    note=subtitle(about),
                )
                if accs
                else None
            )
            sections = [
                f'<section id="summary"><h2>Summary over {len(runs)} repeats</h2>'
                f"{_table(readable_stats(stats))}</section>",
                _section("plots", "Plots", _img(box) if box else ""),
                _transcripts({framework: _repeat_folders(src)} if runs else {}),
            ]
        else:
            meta, results, summary = load_run(src)
            summary = summary or {}
            per_class = pd.DataFrame(summary.get("per_class") or {}).T
            found, figs = _run_analyses(src, work, about)
            title = f"courtroom run: {meta['config']['framework']} on {meta['task']['name']}"
            sections = [
                '<section id="summary"><h2>Summary</h2>'
                + _table(readable_summary(summary))
                + (f"<h3>per class</h3>{_table(per_class, 'per-class')}" if len(per_class) else "")
                + ("<p>Summary missing: the run was interrupted; finish it with --resume.</p>" if not summary else "")
                + "</section>",
                _section("plots", "Plots", "".join(_img(p) for p in figs)),
                _section("analyses", "Analyses", found),
                _transcripts({meta["config"]["framework"]: [src]}),
            ]
        page = _page(title, about, sections)
    return _write(out, page)


def _write(out: Path, page: str) -> Path:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(page, encoding="utf-8")
    return out
