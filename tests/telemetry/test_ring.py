"""The ring buffer: sequence numbers, catch-up, and both of its bounds."""

from __future__ import annotations

import pytest

from agent.telemetry.ring import RingBuffer, SeqCursor
from agent.wire import Event, Snapshot, make_event


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def snap(clock: Clock) -> RingBuffer[Snapshot]:
    return RingBuffer(max_age_s=3600, max_items=100, clock=clock)


def test_add_numbers_items_and_since_returns_the_newer_ones() -> None:
    clock = Clock()
    ring = snap(clock)
    made = [ring.add(lambda seq: Snapshot(seq=seq, time=clock())) for _ in range(5)]
    assert [s.seq for s in made] == [1, 2, 3, 4, 5]
    assert [s.seq for s in ring.since(2)] == [3, 4, 5]
    assert ring.since(5) == []
    assert [s.seq for s in ring.since(0, limit=2)] == [1, 2]
    assert ring.latest() == made[-1]


def test_snapshots_and_events_share_one_cursor() -> None:
    clock = Clock()
    cursor = SeqCursor()
    snaps: RingBuffer[Snapshot] = RingBuffer(cursor=cursor, clock=clock)
    events: RingBuffer[Event] = RingBuffer(cursor=cursor, clock=clock)
    snaps.add(lambda seq: Snapshot(seq=seq, time=clock()))
    events.add(lambda seq: make_event(seq, clock(), "agent.started", "hi"))
    snaps.add(lambda seq: Snapshot(seq=seq, time=clock()))
    assert [s.seq for s in snaps.since(0)] == [1, 3]
    assert [e.seq for e in events.since(0)] == [2]
    assert cursor.last == 3


def test_items_older_than_the_age_bound_go() -> None:
    clock = Clock()
    ring: RingBuffer[Snapshot] = RingBuffer(max_age_s=3600, max_items=10_000, clock=clock)
    for _ in range(10):
        ring.add(lambda seq: Snapshot(seq=seq, time=clock()))
        clock.now += 600  # ten minutes between items
    # now = start + 6000 s: only items newer than an hour remain
    assert [s.seq for s in ring.since(0)] == [5, 6, 7, 8, 9, 10]
    assert ring.first_seq == 5


def test_count_bound_keeps_the_newest() -> None:
    clock = Clock()
    ring: RingBuffer[Snapshot] = RingBuffer(max_items=3, clock=clock)
    for _ in range(7):
        ring.add(lambda seq: Snapshot(seq=seq, time=clock()))
    assert len(ring) == 3
    assert [s.seq for s in ring] == [5, 6, 7]
    assert [s.seq for s in ring.since(1)] == [5, 6, 7]


def test_out_of_order_append_is_refused_and_bad_bounds_too() -> None:
    clock = Clock()
    ring = snap(clock)
    ring.append(Snapshot(seq=10, time=clock()))
    with pytest.raises(ValueError, match="not after"):
        ring.append(Snapshot(seq=10, time=clock()))
    with pytest.raises(ValueError):
        RingBuffer(max_items=0)


def test_cursor_can_continue_after_a_restart_value() -> None:
    cursor = SeqCursor(start=41)
    assert cursor.last == 41
    assert cursor.next() == 42
