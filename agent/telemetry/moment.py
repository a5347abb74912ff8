"""What a health rule sees at one tick (``health`` and ``reach`` both judge it)."""

from __future__ import annotations

from dataclasses import dataclass

from agent.profile.health import Health
from agent.wire import Snapshot
from agent.wire.bench_evidence import BenchEvidence


@dataclass(frozen=True)
class Moment:
    """What the rules see: this snapshot, the thresholds, and what the watch remembers."""

    snap: Snapshot
    limits: Health
    queue_window: tuple[tuple[float, int], ...] = ()
    """(time, queued) of recent ticks, oldest first, the current one last."""
    queue_nonempty_since: float | None = None
    idle_since: float | None = None
    unread_since: float | None = None
    """First tick of the current run of ticks without a reading from an up engine."""
    scrape_error: str | None = None
    restarts: tuple[float, ...] = ()
    """Times of engine restarts within the restart window."""
    crashes: tuple[float, ...] = ()
    """Times of engine crashes (and failed starts) within the restart window."""
    evidence: BenchEvidence | None = None
    """The newest finished bench on this engine, while no bench runs and the autopilot is off."""
