"""Reading a command's printed lines as written before they were wrapped to the terminal's width."""

from __future__ import annotations


def unwrapped(text: str) -> list[str]:
    """``text``'s lines, each wrapped line joined back to the one it continues (indented lines continue)."""
    lines: list[str] = []
    for line in text.splitlines():
        if line.startswith("  ") and lines:
            lines[-1] += " " + line.strip()
        else:
            lines.append(line)
    return lines
