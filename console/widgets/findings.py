"""Health findings as Overview lists them: what is wrong (with its value), since when, what to do."""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from console.model.health import HealthItem
from console.widgets.format import since

SEVERITY_STYLE = {"info": "$info", "warning": "$warn", "critical": "$bad-bold"}
SEVERITY_GLYPH = {"info": "●", "warning": "▲", "critical": "✖"}


def findings_text(items: Sequence[HealthItem], now: float, *, explain: bool = False) -> Text:
    """One finding per paragraph: the title (it carries the value) and since when, then the action.
    ``explain`` adds why it matters (the Logs screen and wide terminals have room for it)."""
    if not items:
        return Text("✓ no health findings", style="$ok")
    text = Text()
    for n, item in enumerate(items):
        f = item.finding
        if n:
            text.append("\n")
        style = SEVERITY_STYLE.get(f.severity, "")
        text.append(f"{SEVERITY_GLYPH.get(f.severity, '●')} {f.title}", style=style)
        if item.since is not None:
            text.append(f"  {since(item.since, now)}", style="dim")
        if explain:
            text.append(f"\n  {f.explanation}", style="dim")
        text.append(f"\n  → {f.action}")
    return text
