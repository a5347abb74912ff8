"""Ring buffers of what the agent sent, and the few things derived from them."""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from agent.wire import Event, Snapshot

LinkState = Literal["connecting", "connected", "reconnecting", "ended", "failed"]

HISTORY_LEN = 1200
"""Twenty minutes of snapshots at one per second, five at four per second: the charts draw at most
five minutes. A held snapshot costs about 20 kB, so the two hours once kept here grew the console by
~150 MiB for history nothing drew (the soak showed the climb)."""

EVENTS_LEN = 2000


@dataclass(frozen=True)
class LinkStatus:
    state: LinkState
    message: str = ""
    attempt: int = 0
    retry_in_s: float | None = None


@dataclass(frozen=True)
class SpecSwitch:
    """Speculation turned on or off between two snapshots; drawn as a marker on the charts."""

    time: float
    on: bool


class ConsoleModel:
    """Everything received, bounded; ``version`` grows on every change so views can skip idle repaints."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self.snapshots: deque[Snapshot] = deque(maxlen=HISTORY_LEN)
        self.events: deque[Event] = deque(maxlen=EVENTS_LEN)
        self.spec_switches: deque[SpecSwitch] = deque(maxlen=EVENTS_LEN)
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
            previous = self.latest
            now_on = item.speculation.on
            was_on = previous.speculation.on if previous is not None else None
            if now_on is not None and was_on is not None and now_on != was_on:
                self.spec_switches.append(SpecSwitch(item.time, now_on))
            self.snapshots.append(item)
        else:
            self.events.append(item)
        self.version += 1
        return True

    def set_link(self, status: LinkStatus) -> None:
        if status != self.link:
            self.link = status
            self.version += 1

    def data_age_s(self) -> float | None:
        """Seconds since the last item arrived, by the console's clock; None before the first one."""
        return None if self.last_data_at is None else max(0.0, self._clock() - self.last_data_at)

    @property
    def stale(self) -> bool:
        return self.link.state != "connected"

    def series(
        self, value: Callable[[Snapshot], float | int | None], window_s: float, max_points: int = 240
    ) -> tuple[list[float], list[float]]:
        """Points of one value over the last ``window_s`` seconds, x as seconds before the newest snapshot.

        Relative times keep the chart independent of the wall clock (and so deterministic in tests);
        long windows are thinned to ``max_points`` by taking every n-th point, never averaged away.
        """
        latest = self.latest
        if latest is None:
            return [], []
        start = latest.time - window_s
        chosen = [s for s in self.snapshots if s.time >= start]
        step = max(1, len(chosen) // max_points)
        xs: list[float] = []
        ys: list[float] = []
        for snap in chosen[::step]:
            y = value(snap)
            if y is not None:
                xs.append(snap.time - latest.time)
                ys.append(float(y))
        return xs, ys

    def switches_in(self, window_s: float) -> list[tuple[float, bool]]:
        latest = self.latest
        if latest is None:
            return []
        return [(s.time - latest.time, s.on) for s in self.spec_switches if s.time >= latest.time - window_s]
