"""The agent's stream: snapshots and events on one cursor, kept for an hour, pushed to listeners.

Two ring buffers (``agent.telemetry.ring``) share one ``SeqCursor``, so a console that last saw seq
N asks for everything after N and gets both kinds in order. Listeners wait on a condition that every
publish sets (and replaces) an event; nothing polls.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from agent.telemetry.ring import RingBuffer, SeqCursor
from agent.wire import Event, Snapshot
from agent.wire.events import EventKind

StreamItem = Snapshot | Event


class StreamHub:
    def __init__(self, *, max_age_s: float = 3600.0, clock: Callable[[], float] = time.time) -> None:
        # Start the cursor at the wall clock in milliseconds, not at 1: a console that followed the
        # previous agent run holds that run's last seq and asks for everything after it; a restarted
        # agent numbering from 1 would have every new item dropped as "already seen" until it caught
        # up (an hour of blank charts after an hour-long run). Runs never produce 1000 items a second,
        # so every seq of this run is above every seq of an earlier one.
        self.cursor = SeqCursor(start=int(clock() * 1000))
        self.snapshots: RingBuffer[Snapshot] = RingBuffer(
            max_age_s=max_age_s, max_items=20_000, cursor=self.cursor, clock=clock
        )
        self.events: RingBuffer[Event] = RingBuffer(
            max_age_s=max_age_s, max_items=5_000, cursor=self.cursor, clock=clock
        )
        self._clock = clock
        self._wake = asyncio.Event()
        self._closed = False

    @property
    def last_seq(self) -> int:
        return self.cursor.last

    def _notify(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    def publish_snapshot(self, build: Callable[[int], Snapshot]) -> Snapshot:
        snap = self.snapshots.add(build)
        self._notify()
        return snap

    def publish_event(
        self, kind: EventKind, name: str, message: str, data: dict[str, Any] | None = None
    ) -> Event:
        event = self.events.add(
            lambda seq: Event(
                seq=seq, time=self._clock(), kind=kind, name=name, message=message, data=data or {}
            )
        )
        self._notify()
        return event

    def since(self, seq: int) -> list[StreamItem]:
        items: list[StreamItem] = [*self.snapshots.since(seq), *self.events.since(seq)]
        items.sort(key=lambda item: item.seq)
        return items

    async def follow(self, since: int, keepalive_s: float = 15.0) -> AsyncIterator[StreamItem | None]:
        """Everything after ``since`` (catch-up), then each new item as it comes; None is a keep-alive."""
        cursor = since
        while not self._closed:
            wake = self._wake  # taken before reading, so a publish in between is not missed
            items = self.since(cursor)
            for item in items:
                yield item
                cursor = item.seq
            if items:
                continue
            try:
                await asyncio.wait_for(wake.wait(), keepalive_s)
            except TimeoutError:
                yield None

    def close(self) -> None:
        self._closed = True
        self._notify()
