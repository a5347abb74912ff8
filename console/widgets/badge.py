"""The speculation badge: ON with steps/topk, or OFF and why, with the threshold always in view.

The threshold and the running batch come first on the line, the reason after them and wrapping
below: a long reason must never push the threshold off the screen (it did at 160 columns). Accept
length is written by ``accept_text`` for the badge's screens and the figures alike, one source.
"""

from __future__ import annotations

from rich.text import Text

from agent.wire import Load, Speculation
from console.widgets.format import DASH, num

_OFF_WORDS = {
    "not_configured": "no drafter in this profile",
    "above_threshold": "running batch at or above the threshold",
    "adaptive_chose_zero": "adaptive policy chose 0 steps",
    "adaptive_unsupported": "adaptive mode unsupported (topk > 1)",
    "engine_down": "engine down",
    "unknown": "reason unknown",
}


def threshold_words(spec: Speculation) -> str | None:
    if not spec.threshold_available or spec.threshold is None:
        return None
    return f"threshold {spec.threshold}" if spec.threshold else "no threshold"


def accept_text(spec: Speculation, load: Load) -> Text:
    """Accept length only while drafting with traffic; otherwise a dash and why, never a stale 1.00."""
    if spec.on and (load.running or 0) > 0 and spec.accept_length is not None:
        return Text(num(spec.accept_length, ".2f"), style="bold")
    why = "not drafting" if spec.on is False else ("idle" if spec.on else "unknown")
    return Text.assemble((DASH, "bold"), (f" ({why})", "dim"))


def badge_text(spec: Speculation, load: Load | None = None) -> Text:
    text = Text()
    threshold = threshold_words(spec)
    running = load.running if load is not None else None
    if spec.on:
        text.append(" SPEC ON ", style="bold black on green")
        parts = [spec.algorithm or "", f"{spec.steps} steps", f"topk {spec.topk}"]
        if spec.draft_tokens is not None:
            parts.append(f"{spec.draft_tokens} draft tokens")
        text.append(" " + " · ".join(p for p in parts if p))
    elif spec.on is False:
        text.append(" SPEC OFF ", style="bold white on red")
        text.append(" " + _OFF_WORDS.get(spec.off_reason or "unknown", _OFF_WORDS["unknown"]))
    else:
        text.append(" SPEC ? ", style="bold black on yellow")
        text.append(" no speculation state yet")
    if threshold is not None:
        text.append(f"   {threshold}", style="bold")
    if running is not None and spec.configured:
        text.append(f" · {running} running", style="bold")
    if spec.on is False and spec.off_detail:
        text.append(f"\n{spec.off_detail}", style="dim")
    return text
