"""The speculation badge: ON with steps/topk, or OFF and why, with the threshold always in view.

The state, then the threshold with the running batch (a group of its own, which moves whole to the
next line on a narrow screen), then the reason on a line of its own: a long reason must never push
the threshold off the screen (it did at 160 columns). Accept
length is written by ``accept_text`` for the badge's screens and the figures alike, one source.
"""

from __future__ import annotations

from rich.text import Text

from agent.wire import Load, Speculation
from console.widgets.flow import Flow
from console.widgets.format import DASH, num, span
from console.widgets.windows import accept_note

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


def accept_text(spec: Speculation, load: Load, *, since_switch_on: float | None = None) -> Text:
    """Accept length with the window it covers (or where it came from, when not the window's
    counters), while drafting with traffic; with speculation off, the number the OFF reason quotes
    (so badge and field agree), otherwise a dash and why, never a stale 1.00.

    ``since_switch_on``: seconds since the agent's last ``speculation.on`` event. A window longer
    than that still holds the plain decoding's one-token verifies, so the number reads low; it says so.
    """
    value = spec.accept_length
    drafting = spec.on and (load.running or 0) > 0
    quoted = spec.on is False and spec.off_reason == "adaptive_chose_zero"
    if value is not None and (drafting or quoted):
        text = Text.assemble((num(value, ".2f"), "bold"), (accept_note(spec), "dim"))
        window = spec.accept_window_s
        if drafting and since_switch_on is not None and window is not None and since_switch_on < window:
            text.append(f", {span(window - since_switch_on)} of it before the switch on", style="dim")
        if quoted:
            text.append(" · not drafting now", style="dim")
        return text
    why = "not drafting" if spec.on is False else ("idle" if spec.on else "unknown")
    return Text.assemble((DASH, "bold"), (f" ({why})", "dim"))


def steps_words(spec: Speculation) -> str:
    """The step count in force and who chose it, the same words on Overview and Controls: "3 steps
    (SGLang's policy)", "2 steps (pinned)"."""
    pinned = spec.pinned_steps is not None and spec.pinned_steps >= 0
    who = "pinned" if pinned else "SGLang's policy" if spec.threshold_available else None
    return f"{spec.steps} steps" + (f" ({who})" if who else "")


def badge_text(spec: Speculation, load: Load | None = None, *, stale: bool = False) -> Flow:
    """``stale``: the link is down; the badge shows the last state it heard, greyed and saying so.
    The state and the threshold with the running batch are two groups of a :class:`Flow`: on a
    narrow screen the threshold moves whole to the next line (it read "threshold 130 · 65" with
    "running" below at 100 columns)."""
    threshold = threshold_words(spec)
    running = load.running if load is not None else None
    if stale and spec.on is not None:
        state = Text.assemble((f" SPEC {'ON' if spec.on else 'OFF'} (last heard) ", "$badge-off"))
        state.append(" not connected: the server's state now is unknown", style="dim")
        return Flow(state, Text(threshold, style="dim") if threshold is not None else "")
    if spec.on:
        state = Text.assemble((" SPEC ON ", "$badge-ok"))
        parts = [spec.algorithm or "", steps_words(spec), f"topk {spec.topk}"]
        if spec.draft_tokens is not None:
            parts.append(f"{spec.draft_tokens} draft tokens")
        state.append(" " + " · ".join(p for p in parts if p))
    elif spec.on is False:
        state = Text.assemble((" SPEC OFF ", "$badge-bad"))
        state.append(" " + _OFF_WORDS.get(spec.off_reason or "unknown", _OFF_WORDS["unknown"]))
    else:
        state = Text.assemble((" SPEC ? ", "$badge-warn"))
        state.append(" no speculation state yet")
    limit = Text(style="bold")
    if threshold is not None:
        limit.append(threshold)
    if running is not None and spec.configured:
        limit.append(f"{' · ' if threshold is not None else ''}{running} running")
    flow = Flow(state, limit)
    if spec.on is False and spec.off_detail:
        flow.add_line(Text(spec.off_detail, style="dim"))
    return flow
