"""Ring buffers of what the agent sent, and the few things derived from them."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent.wire import ActionEvent, BenchProgressEvent, BenchRunEvent, Event, Snapshot
from agent.wire.events import SpeculationEvent
from console.model.actions import ActionTracker
from console.model.bench import BenchTracker
from console.model.health import HealthTracker
from console.model.marks import ChartMarks, SpecSwitch, chart_marks
from console.model.points import PointRing, point_of

LinkState = Literal["connecting", "connected", "reconnecting", "ended", "failed"]
HealthWord = Literal["unknown_link", "unknown_data", "findings", "healthy"]

HISTORY_LEN = 1200
"""Whole snapshots kept (the GPU rows' short history, the newest one for every screen). A held
snapshot costs about 20 kB, so the charts' hour of history lives in the point ring instead."""

EVENTS_LEN = 2000

SWITCH_EVENTS = {"speculation.on": True, "speculation.off": False}
"""The agent's switch events (``agent.telemetry.changes``): the only source of the charts' markers."""


@dataclass(frozen=True)
class LinkStatus:
    state: LinkState
    message: str = ""
    attempt: int = 0
    retry_in_s: float | None = None


class ConsoleModel:
    """Everything received, bounded; ``version`` grows on every change so views can skip idle repaints."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, history: int = HISTORY_LEN) -> None:
        self._clock = clock
        self.snapshots: deque[Snapshot] = deque(maxlen=history)
        """Whole snapshots held (``HISTORY_LEN``; a fleet holds fewer per host: see console.fleet.app)."""
        self.points = PointRing()
        self.events: deque[Event] = deque(maxlen=EVENTS_LEN)
        """Every event but bench progress (see ``bench``): what the event log shows."""
        self.spec_switches: deque[SpecSwitch] = deque(maxlen=EVENTS_LEN)
        self.step_changes = 0
        """``speculation.steps`` events seen: the adaptive policy moves the step count every few
        seconds under load; the event log counts them instead of listing each one."""
        self.last_step_change: SpeculationEvent | None = None
        self.actions = ActionTracker()
        self.bench = BenchTracker()
        self.health = HealthTracker()
        self.last_seq: int | None = None
        self.link = LinkStatus("connecting")
        self.last_data_at: float | None = None
        self.version = 0
        self.duplicates_dropped = 0

    @property
    def latest(self) -> Snapshot | None:
        return self.snapshots[-1] if self.snapshots else None

    def ingest(self, item: Snapshot | Event) -> bool:
        """Add one stream item; returns False for one already seen (a catch-up overlapping what we have)."""
        if self.last_seq is not None and item.seq <= self.last_seq:
            self.duplicates_dropped += 1
            return False
        self.last_seq = item.seq
        self.last_data_at = self._clock()
        if isinstance(item, Snapshot):
            self._snapshot(item)
        else:
            self._event(item)
        self.version += 1
        return True

    def _snapshot(self, snap: Snapshot) -> None:
        self.snapshots.append(snap)
        self.points.append(point_of(snap))
        self.health.update(snap)

    def _event(self, event: Event) -> None:
        if isinstance(event, BenchRunEvent | BenchProgressEvent):
            self.bench.ingest(event)
            if isinstance(event, BenchProgressEvent):
                return  # the newest progress is in ``bench``; the log keeps starts and ends only
        elif isinstance(event, ActionEvent):
            self.actions.ingest(event)
        elif isinstance(event, SpeculationEvent) and event.name == "speculation.steps":
            self.step_changes += 1
            self.last_step_change = event
        elif event.name in SWITCH_EVENTS:
            # Only the agent's word: a recording made before the agent published these events
            # replays without markers rather than with ones guessed from two snapshots.
            self.spec_switches.append(SpecSwitch(event.time, SWITCH_EVENTS[event.name]))
        self.events.append(event)

    def label_action(self, action_id: str, words: str | None) -> None:
        """Words for an action arrived (or its lookup failed): the screens that show it draw again."""
        self.actions.label(action_id, words)
        self.version += 1

    def set_link(self, status: LinkStatus) -> None:
        if status != self.link:
            self.link = status
            self.version += 1

    def data_age_s(self) -> float | None:
        """Seconds since the last item arrived, by the console's clock; None before the first one."""
        return None if self.last_data_at is None else max(0.0, self._clock() - self.last_data_at)

    @property
    def readings(self) -> bool:
        """The newest snapshot carries the engine's own readings (not a tick before the first scrape,
        nor one of an engine down): only then can anything be called healthy or ready."""
        latest = self.latest
        return latest is not None and latest.metrics_source != "none"

    def health_word(self) -> HealthWord:
        """One word for the state every screen shows (the status line, Overview): the link first,
        then whether there is data, then the agent's findings. Never "healthy" while disconnected."""
        if self.stale:
            return "unknown_link"
        if not self.readings:
            return "unknown_data"
        return "findings" if self.health.items else "healthy"

    @property
    def stale(self) -> bool:
        """Values drawn while the link is down (or never came up) are old: greyed. A replay that reached
        its end is not stale: it shows the recording as it was, and the status line says it ended."""
        return self.link.state not in ("connected", "ended")

    def series(
        self, value: Callable[[Snapshot], float | int | None], window_s: float, max_points: int = 240
    ) -> tuple[list[float], list[float]]:
        """Points of one snapshot value over the last ``window_s`` seconds of held snapshots, x as
        seconds before the newest (for values the point ring does not keep)."""
        latest = self.latest
        if latest is None:
            return [], []
        chosen = [s for s in self.snapshots if s.time >= latest.time - window_s]
        step = max(1, len(chosen) // max_points)
        xs: list[float] = []
        ys: list[float] = []
        for snap in chosen[::step]:
            y = value(snap)
            if y is not None:
                xs.append(snap.time - latest.time)
                ys.append(float(y))
        return xs, ys

    def switched_on_at(self) -> float | None:
        """Agent time of the agent's latest switch event when it was a switch on (else None)."""
        last = self.spec_switches[-1] if self.spec_switches else None
        return last.time if last is not None and last.on else None

    def chart_marks(self, window_s: float) -> ChartMarks:
        """The time charts' marks over the last ``window_s`` seconds: one band per benchmark run and
        a marker for each switch outside them (``console.model.marks``). A run still going reaches
        the newest snapshot, the charts' "now"."""
        latest = self.latest
        if latest is None:
            return ChartMarks()
        return chart_marks(self.spec_switches, self.bench.spans(), now=latest.time, window_s=window_s)
