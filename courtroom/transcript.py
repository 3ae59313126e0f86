"""Transcripts: the ordered turns of one decision, rendered as text or HTML."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Turn:
    """One utterance in a decision."""

    role: str
    """Who spoke: lawyer, prosecutor, judge, clerk, attorney, debater-2, ..."""
    round: int
    """1-based round (0 for stages outside the rounds, such as a preliminary hearing)."""
    text: str
    """What was said (the argument, the analysis)."""
    decision: str | None = None
    """A judge's or clerk's label, if this turn decides something."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Role-specific fields: feedback, probability, reliability, precedents, ..."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        """Inverse of :meth:`to_dict`."""
        return cls(
            **{k: data[k] for k in ("role", "round", "text")},
            decision=data.get("decision"),
            extra=dict(data.get("extra") or {}),
        )


def as_turns(items: Iterable[Turn | Mapping[str, Any]]) -> list[Turn]:
    """Turns from turns or their dict form."""
    return [t if isinstance(t, Turn) else Turn.from_dict(t) for t in items]


def render_text(turns: Iterable[Turn | Mapping[str, Any]]) -> str:
    """A readable plain-text transcript."""
    lines: list[str] = []
    for t in as_turns(turns):
        head = f"[round {t.round}] {t.role.upper()}" if t.round else t.role.upper()
        if t.decision is not None:
            head += f"  -> decision: {t.decision}"
        lines.append(head)
        lines.extend("    " + line for line in (t.text or "").strip().splitlines() or [""])
        for key, value in t.extra.items():
            shown = value if isinstance(value, str) else repr(value)
            lines.append(f"    · {key}: {shown}")
        lines.append("")
    return "\n".join(lines).rstrip() + "\n"


def render_html(turns: Iterable[Turn | Mapping[str, Any]]) -> str:
    """An HTML fragment; each role gets the CSS class ``role-<name>``."""
    parts = ['<div class="transcript">']
    for t in as_turns(turns):
        role = html.escape(t.role)
        css = "role-" + "".join(c if c.isalnum() else "-" for c in t.role.split("-")[0])
        decision = f' <span class="decision">{html.escape(str(t.decision))}</span>' if t.decision is not None else ""
        extras = "".join(
            f"<li><b>{html.escape(str(k))}</b>: {html.escape(v if isinstance(v, str) else repr(v))}</li>"
            for k, v in t.extra.items()
        )
        parts.append(
            f'<div class="turn {css}"><div class="who">{role}'
            f"{' · round ' + str(t.round) if t.round else ''}{decision}</div>"
            f'<div class="text">{html.escape(t.text or "")}</div>'
            + (f'<ul class="extra">{extras}</ul>' if extras else "")
            + "</div>"
        )
    parts.append("</div>")
    return "\n".join(parts)
