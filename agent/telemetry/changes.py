"""Events seen in telemetry: what changed between two snapshots that an operator wants in the log.

Speculation switching on or off (and why), its step count or live threshold changing, and health
findings appearing or clearing. The daemon publishes these on the stream next to the snapshots, so
the console's event log says "speculation off: 12 requests running, at or above the threshold of 4"
at the moment it happened, not just a flag in the next frame.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent.profile.words import count_words
from agent.wire import Snapshot
from agent.wire.actions import CATALOGUE
from agent.wire.events import EventKind, EventName
from agent.wire.snapshot import SpecOffReason

OFF_REASON_WORDS: dict[SpecOffReason, str] = {
    "not_configured": "this deployment runs without a draft model",
    "above_threshold": "the running batch is at or above the threshold",
    "adaptive_chose_zero": "SGLang's adaptive policy chose 0 draft steps",
    "adaptive_unsupported": "SGLang turned adaptive speculation off",
    "engine_down": "the engine is down",
    "unknown": "reason unknown",
}
"""The reason in words, for a snapshot that carries a reason code without its detail."""


@dataclass(frozen=True)
class EventDraft:
    """An Event without its seq and time (the stream numbers it; its time is the snapshot's)."""

    kind: EventKind
    name: EventName
    message: str
    data: dict[str, Any] = field(default_factory=dict)


def telemetry_events(prev: Snapshot | None, new: Snapshot) -> list[EventDraft]:
    """Changes from ``prev`` to ``new``; nothing for the first snapshot or across unknown states."""
    if prev is None:
        return []
    out: list[EventDraft] = []
    a, b = prev.speculation, new.speculation
    # The cause first: a moved threshold, then the switch it brings (often seen in the same tick).
    if a.threshold_available and b.threshold_available and a.threshold != b.threshold:
        out.append(
            EventDraft(
                "speculation",
                "speculation.threshold",
                f"live speculation threshold {_threshold(a.threshold)} → {_threshold(b.threshold)}",
                {"old": a.threshold, "new": b.threshold},
            )
        )
    if a.on is not None and b.on is not None and a.on != b.on:
        if b.on:
            out.append(
                EventDraft(
                    "speculation",
                    "speculation.on",
                    _on_words(b.steps, new.load.running),
                    {"steps": b.steps, "running": new.load.running},
                )
            )
        else:
            out.append(
                EventDraft(
                    "speculation",
                    "speculation.off",
                    f"speculation off: {b.off_detail or OFF_REASON_WORDS[b.off_reason or 'unknown']}",
                    {"reason": b.off_reason, "running": new.load.running},
                )
            )
    elif a.on and b.on and a.steps is not None and b.steps is not None and a.steps != b.steps:
        out.append(
            EventDraft(
                "speculation",
                "speculation.steps",
                f"speculation steps {a.steps} → {b.steps}",
                {"old": a.steps, "new": b.steps},
            )
        )
    before = {f.code: f for f in prev.findings}
    after = {f.code: f for f in new.findings}
    for code, finding in after.items():
        if code not in before:
            out.append(
                EventDraft(
                    "finding",
                    "finding.raised",
                    f"{finding.severity}: {finding.title}",
                    {"code": code, "severity": finding.severity},
                )
            )
    for code, finding in before.items():
        if code not in after:
            out.append(EventDraft("finding", "finding.cleared", f"cleared: {finding.title}", {"code": code}))
    return out


def _threshold(value: int | None) -> str:
    """A read-back threshold in the catalogue's words; None is a reading the engine did not give."""
    return "unknown" if value is None else CATALOGUE["threshold"].words(value, long=True)


def _on_words(steps: int | None, running: int | None) -> str:
    """ "speculation on: 3 draft steps, 12 requests running"; an unknown part is said, or left out."""
    said = count_words(steps, "draft step") if steps is not None else "step count unknown"
    if running is not None:
        said += f", {count_words(running, 'request')} running"
    return f"speculation on: {said}"
