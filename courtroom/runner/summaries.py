"""A run's summary as text: the rows of its tables (``courtroom show``) and its ``summary.md``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from courtroom.analysis.bias import bias_rows


def tokens_text(summary: Mapping[str, Any]) -> str:
    """Tokens of the sent calls, and what the cached answers cost when they were sent.

    Where requests also prepared the program on train, the examples' part is named.
    """
    cached = summary.get("cached_tokens") or 0
    training = summary.get("training_tokens") or 0
    parts = [f"{summary['tokens'] - training:,} on the examples"] if training else []
    parts += [f"+{cached:,} in cached answers, not spent again"] if cached else []
    return f"{summary['tokens']:,}" + (f" ({'; '.join(parts)})" if parts else "")


def calls_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The examples' LM calls and the requests sent; a second row names those that prepared the program."""
    rows = [("LM calls", f"{summary['calls']} ({summary['sent']} sent, {summary['cached']} cached)")]
    if summary.get("training_sent"):
        tokens = summary.get("training_tokens") or 0
        rows.append(
            ("  sent preparing on train", f"{summary['training_sent']}" + (f" ({tokens:,} tokens)" if tokens else ""))
        )
    return rows


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rows every summary table starts with: scores, examples, calls, spend and time."""
    session_sent = (summary.get("session") or {}).get("sent", summary["sent"])
    return [
        ("accuracy", f"{summary['accuracy']:.3f}"),
        ("macro-F1", f"{summary['macro_f1']:.3f}"),
        ("examples", str(summary["n"])),
        ("failures", str(summary["failures"])),
        *calls_rows(summary),
        # a resumed folder: sent counts every session
        *([("sent this session", str(session_sent))] if session_sent != summary["sent"] else []),
        ("tokens (sent calls)", tokens_text(summary)),
        ("cost", "n/a" if summary["cost"] is None else f"${summary['cost']:.4f}" + _live(summary)),
        ("wall time", f"{summary['wall_seconds']:.1f} s"),
    ]


def summary_markdown(summary: Mapping[str, Any], title: str) -> str:
    """The summary as a small Markdown table."""
    rows = [*summary_rows(summary), ("status", summary.get("status", "ok"))]
    if summary.get("brier") is not None:
        rows += [("Brier score", f"{summary['brier']:.4f}"), ("ECE", f"{summary['ece']:.4f}")]
    rows += bias_rows(summary) + learned_rows(summary)
    return f"# {title}\n\n| metric | value |\n|---|---|\n" + "\n".join(f"| {k} | {v} |" for k, v in rows) + "\n"


def learned_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """What the program learned on the train split, measured (``summary["learned"]``), as table rows."""
    return [
        (name, str(value) if isinstance(value, int) else f"{value:.3f}")
        for name, value in (summary.get("learned") or {}).items()
    ]


def _live(summary: Mapping[str, Any]) -> str:
    """`` (batch price; live $X, N batches)`` for a run sent in batches, else nothing."""
    if summary.get("batches") is None:
        return ""
    live = summary.get("live_cost")
    return f" (batch price; live ${live:.4f}, {summary['batches']} batches)" if live is not None else ""
