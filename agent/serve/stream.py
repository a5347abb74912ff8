"""The agent's stream: snapshots and events on one cursor, kept for an hour, pushed to listeners.

Two ring buffers (``agent.telemetry.ring``) share one ``SeqCursor``, so a console that last saw seq
N asks for everything after N and gets both kinds in order. Listeners wait on a condition that every
publish sets (and replaces) an event; nothing polls.

Items are kept as the JSON the stream sends, compressed (``Stored``), not as pydantic objects: an
hour at 4 Hz is 14,400 snapshots, which as objects took ~290 MiB with 8 busy GPUs and as
compressed JSON take ~15 MiB (bench/costs/agent_tick.py). Each item is serialised once, when it is
published; a listener, a catch-up or ``/v1/snapshots`` only inflates the bytes, and the few
in-process readers that want the model decode it (``Stored.model``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import zlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import ValidationError

from agent.telemetry.ring import RingBuffer, SeqCursor
from agent.wire import Event, Snapshot
from agent.wire.events import EVENT_NAMES, dropped_keys, make_event, read_event_json

log = logging.getLogger(__name__)

StreamKind = Literal["snapshot", "event"]
Listener = Callable[[Snapshot | Event], None]
"""Sees each item as it is published, as the model, in the publishing thread (the exporter counts
switches and actions from it without decoding anything)."""
ZLIB_LEVEL = 1
"""The fastest level: ~15 µs for a 5 kB snapshot, which it shrinks about five times (the keys repeat)."""


@dataclass(frozen=True, slots=True)
class Stored:
    """One published item: its number, time and kind, and its wire JSON, zlib-compressed."""

    seq: int
    time: float
    kind: StreamKind
    packed: bytes

    @classmethod
    def of(cls, item: Snapshot | Event) -> Stored:
        kind: StreamKind = "snapshot" if isinstance(item, Snapshot) else "event"
        return cls(
            item.seq, item.time, kind, zlib.compress(item.__pydantic_serializer__.to_json(item), ZLIB_LEVEL)
        )

    def json(self) -> bytes:
        """The item's JSON, exactly as ``model_dump_json`` wrote it."""
        return zlib.decompress(self.packed)

    def model(self) -> Snapshot | Event:
        """The wire model again (validated: what a console would get)."""
        if self.kind == "snapshot":
            return Snapshot.model_validate_json(self.json())
        return read_event_json(self.json())


class StreamHub:
    def __init__(
        self,
        *,
        max_age_s: float = 3600.0,
        max_snapshots: int = 20_000,
        max_events: int = 5_000,
        clock: Callable[[], float] = time.time,
    ) -> None:
        # Start the cursor at the wall clock in milliseconds, not at 1: a console that followed the
        # previous agent run holds that run's last seq and asks for everything after it; a restarted
        # agent numbering from 1 would have every new item dropped as "already seen" until it caught
        # up (an hour of blank charts after an hour-long run). Runs never produce 1000 items a second,
        # so every seq of this run is above every seq of an earlier one.
        self.cursor = SeqCursor(start=int(clock() * 1000))
        self.snapshots: RingBuffer[Stored] = RingBuffer(
            max_age_s=max_age_s, max_items=max_snapshots, cursor=self.cursor, clock=clock
        )
        self.events: RingBuffer[Stored] = RingBuffer(
            max_age_s=max_age_s, max_items=max_events, cursor=self.cursor, clock=clock
        )
        self._clock = clock
        self._wake = asyncio.Event()
        self._closed = False
        self._listeners: list[Listener] = []
        self.latest: Snapshot | None = None
        """The last published snapshot (for in-process readers such as the simulated GPU host)."""

    @property
    def last_seq(self) -> int:
        return self.cursor.last

    def add_listener(self, listener: Listener) -> None:
        """Have ``listener`` see every item published from now on."""
        self._listeners.append(listener)

    def _tell_listeners(self, item: Snapshot | Event) -> None:
        for listener in self._listeners:
            try:
                listener(item)
            except Exception:  # a broken observer must not stop the stream
                log.exception("stream listener failed")

    def _notify(self) -> None:
        wake, self._wake = self._wake, asyncio.Event()
        wake.set()

    def publish_snapshot(self, build: Callable[[int], Snapshot]) -> Snapshot:
        snap = build(self.cursor.next())
        self.snapshots.append(Stored.of(snap))
        self._tell_listeners(snap)
        self.latest = snap
        self._notify()
        return snap

    def publish_event(
        self,
        name: str,
        message: str,
        data: dict[str, Any] | None = None,
        *,
        at: float | None = None,
    ) -> Event:
        """Publish an event; ``at`` is its time when it is not now (a change seen in a snapshot).

        ``data`` fills the payload of the event's family (``agent.wire.payloads``). What does not fit
        is never lost or raised into the part that reported it: the event goes out as
        ``agent.unknown_event`` carrying its name, data and why, and the agent logs an error (a test
        checks that no part of the agent sends such a thing)."""
        seq = self.cursor.next()
        when = self._clock() if at is None else at
        if name not in EVENT_NAMES:
            log.error("event name %r is not in agent.wire.EventName", name)
            event = make_event(
                seq,
                when,
                "agent.unknown_event",
                message,
                _unknown(name, data, "a name the wire does not list"),
            )
            self._publish(event)
            return event
        try:
            event = make_event(seq, when, name, message, data)
        except ValidationError as exc:
            log.error("event %s: its data does not fit its payload: %s", name, exc)
            event = make_event(seq, when, "agent.unknown_event", message, _unknown(name, data, _problem(exc)))
        else:
            dropped = dropped_keys(event, data)
            if dropped:
                log.error("event %s: keys its payload does not have, dropped: %s", name, ", ".join(dropped))
        self._publish(event)
        return event

    def _publish(self, event: Event) -> None:
        self.events.append(Stored.of(event))
        self._tell_listeners(event)
        self._notify()

    def since(self, seq: int) -> list[Stored]:
        items = [*self.snapshots.since(seq), *self.events.since(seq)]
        items.sort(key=_seq_of)
        return items

    async def follow(self, since: int, keepalive_s: float = 15.0) -> AsyncIterator[Stored | None]:
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
                # asyncio.timeout, not wait_for: on 3.11 wait_for swallowed a cancel that landed as
                # an item was published, and the follower went on after its connection was cancelled.
                async with asyncio.timeout(keepalive_s):
                    await wake.wait()
            except TimeoutError:
                yield None

    def close(self) -> None:
        self._closed = True
        self._notify()


def _unknown(name: str, data: dict[str, Any] | None, problem: str) -> dict[str, Any]:
    """The payload of an event kept as ``agent.unknown_event``: its data as JSON (a value JSON cannot
    hold is written as text), so nothing it carried is lost."""
    return {"name": name, "data": json.loads(json.dumps(data or {}, default=str)), "problem": problem[:500]}


def _problem(exc: ValidationError) -> str:
    """ "data.pid: Input should be a valid integer" for each field that did not fit."""
    return "; ".join(f"{'.'.join(str(p) for p in e['loc'][1:])}: {e['msg']}" for e in exc.errors())


def _seq_of(item: Stored) -> int:
    return item.seq


def json_list(key: str, items: list[Stored]) -> bytes:
    """``{"<key>": [item, ...]}`` from the stored JSON, without decoding it."""
    return b'{"' + key.encode() + b'":[' + b",".join(item.json() for item in items) + b"]}"
