"""The speculation badge: ON with steps/topk, or OFF and why, in an operator's words."""

from __future__ import annotations

from rich.text import Text

from agent.wire import Speculation

_OFF_WORDS = {
    "not_configured": "no drafter in this profile",
    "above_threshold": "running batch at or above the threshold",
    "adaptive_chose_zero": "adaptive policy chose 0 steps",
    "adaptive_unsupported": "adaptive mode unsupported (topk > 1)",
    "engine_down": "engine down",
    "unknown": "reason unknown",
}


def badge_text(spec: Speculation) -> Text:
    text = Text()
    if spec.on:
        text.append(" SPEC ON ", style="bold black on green")
        text.append(f" {spec.algorithm or ''} {spec.steps} steps · topk {spec.topk}")
        if spec.draft_tokens is not None:
            text.append(f" · {spec.draft_tokens} draft tokens")
    elif spec.on is False:
        text.append(" SPEC OFF ", style="bold white on red")
        why = spec.off_detail or _OFF_WORDS.get(spec.off_reason or "unknown", "")
        text.append(f" {why}")
    else:
        text.append(" SPEC ? ", style="bold black on yellow")
        text.append(" no speculation state yet")
    if spec.threshold_available and spec.threshold is not None:
        text.append(f"   threshold {spec.threshold}" if spec.threshold else "   no threshold", style="bold")
    return text
