"""Overview's one "what to do" line, beside the live threshold: the action a finding offers, or the
most severe finding's advice, or that there is nothing to do.

At 3 a.m. the threshold was none, 250 ran, output fell, and the screen said healthy although the
host's own bench had measured the crossover at 142. The line puts the answer where the eye already is
(under the badge with the threshold), with the key that plans it; the finding itself, with why, is in
the list below.
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.text import Text

from agent.profile.words import count_words
from agent.wire import CATALOGUE, Finding
from console.model.health import HealthItem

DO_KEY = "d"
"""The key that plans the offered action (``console.registry``: "Do what the finding offers")."""


def offer_words(finding: Finding) -> str:
    """The offered action in the catalogue's words: "threshold → 142"."""
    offer = finding.offer
    if offer is None:
        return finding.action
    return CATALOGUE[offer.kind].action_label(offer.value)


def todo_text(items: Sequence[HealthItem], offered: Finding | None) -> Text:
    text = Text("What to do: ", style="bold")
    if offered is not None:
        text.append(offer_words(offered), style="$warn-bold")
        text.append(f" ({offered.title})", style="dim")
        text.append(f"  [{DO_KEY}] plan it", style="$info")
        return text
    if items and items[0].finding.severity != "info":
        first = items[0].finding
        text.append(first.action, style=SEVERITY.get(first.severity, ""))
        return text
    if items:  # for information only: its advice is in the list below, nothing is urgent
        text.append(
            f"nothing urgent ({count_words(len(items), 'finding')} below, for information)", style="$ok"
        )
        return text
    text.append("nothing: no health findings", style="$ok")
    return text


SEVERITY = {"warning": "$warn", "critical": "$bad-bold"}
