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
    """The examples' LM calls, then every request sent, each split into parts that add up.

    A call is the program asking a role (a cache hit included); a request is one that reached a
    server: a call's first try, its retries after errors, the attempts a ``--retry-failed``
    replaced, and the requests that prepared the program on train.
    """
    calls, cached, sent = summary["calls"], summary["cached"], summary["sent"]
    training = summary.get("training_sent") or 0
    shared = summary.get("shared") or 0  # samples answered in another sample's request (n-sampling)
    asked = calls - cached
    rows = [("LM calls", f"{calls} = {asked} sent + {cached} from the cache")]
    text = f"{sent} = {asked - shared} for those calls"
    if shared:
        text += f" (with {shared} more samples in their requests: n-sampling)"
    more = sent - training - (asked - shared)
    if more > 0:
        text += f" + {more} {'retry' if more == 1 else 'retries'}"  # a --retry-failed's replaced attempts too
    elif more < 0:
        text += f" - {-more} never sent (stopped or refused)"
    if training:
        tokens = summary.get("training_tokens") or 0
        text += f" + {training} preparing on train" + (f" ({tokens:,} tokens)" if tokens else "")
    rows.append(("requests sent", text))
    return rows


def time_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Time on the examples (every session), and what the last command took, in parts that add up."""
    timing = summary.get("timing") or {}
    wall = summary["wall_seconds"]
    examples = timing.get("examples")
    resumed = examples is not None and wall - examples >= 0.05
    rows = [("time on the examples", f"{wall:.1f} s" + (f" ({examples:.1f} s this session)" if resumed else ""))]
    if examples is None:
        return rows  # written before summaries split their time
    parts = [("start-up", timing.get("start_up")), ("set-up", timing.get("setup")), ("examples", examples)]
    shown = [(name, round(value, 1)) for name, value in parts if value is not None]
    total = sum(value for _, value in shown)
    rows.append(("command time", f"{total:.1f} s = " + " + ".join(f"{value:.1f} {name}" for name, value in shown)))
    return rows


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The rows every summary table starts with: scores, examples, calls, spend and time."""
    session_sent = (summary.get("session") or {}).get("sent", summary["sent"])
    metric = summary.get("metric")  # --metric: accuracy is its mean; the label match beside it
    scores = [("accuracy", f"{summary['accuracy']:.3f}")]
    if metric:
        scores = [(f"accuracy (mean {metric})", f"{summary['accuracy']:.3f}"),
                  ("label accuracy", f"{summary.get('label_accuracy', float('nan')):.3f}")]  # fmt: skip
    return [
        *scores,
        ("macro-F1", f"{summary['macro_f1']:.3f}"),
        ("examples", str(summary["n"])),
        ("failures", str(summary["failures"])),
        *calls_rows(summary),
        # a resumed folder: sent counts every session
        *([("sent this session", str(session_sent))] if session_sent != summary["sent"] else []),
        ("tokens (sent calls)", tokens_text(summary)),
        ("cost", ("n/a" if summary["cost"] is None else f"${summary['cost']:.4f}") + _live(summary) + _cached(summary)),
        *time_rows(summary),
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


def _cached(summary: Mapping[str, Any]) -> str:
    """`` (cached; $X live)`` when every answer came from the cache, else nothing."""
    live = summary.get("cached_cost")
    if summary.get("cost") != 0 or summary.get("sent") or not summary.get("cached") or live is None:
        return ""
    return f" (cached; ${live:.4f} live)"


def _live(summary: Mapping[str, Any]) -> str:
    """`` (batch price; live $X, N batches)`` for a run sent in batches (unpriced: `` (N batches)``), else nothing."""
    n = summary.get("batches")
    if n is None:
        return ""
    sent = f"{n} batch" + ("" if n == 1 else "es")
    live = summary.get("live_cost")
    if live is None or summary.get("cost") is None:
        return f" ({sent})"
    return f" (batch price; live ${live:.4f}, {sent})"
