"""The stream hub keeps items as compressed wire JSON: exact round trips, and both bounds."""

from __future__ import annotations

import json

from agent.api.routes.stream import EventList, SnapshotList
from agent.api.sse import frame
from agent.serve.stream import StreamHub, json_list
from agent.wire import Gpus, Snapshot, Speculation, Throughput


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def busy(seq: int, now: float) -> Snapshot:
    return Snapshot(
        seq=seq,
        time=now,
        engine_state="ready",
        throughput=Throughput(output_tok_s=1234.5 + seq % 7, requests_per_s=3.25),
        speculation=Speculation(configured=True, on=True, steps=3, accept_length=2.4),
        gpus=Gpus(source="nvml", state="ok"),
    )


def test_stored_items_give_back_the_json_the_model_wrote() -> None:
    clock = Clock()
    hub = StreamHub(clock=clock)
    snap = hub.publish_snapshot(lambda seq: busy(seq, clock()))
    event = hub.publish_event("engine.ready", "ready", {"pid": 7})
    stored = hub.since(0)
    assert [s.kind for s in stored] == ["snapshot", "event"]
    assert stored[0].json() == snap.model_dump_json().encode()
    assert stored[0].model() == snap and stored[1].model() == event
    assert len(stored[0].packed) < len(stored[0].json())
    assert frame(stored[1]) == f"id: {event.seq}\nevent: event\ndata: {event.model_dump_json()}\n\n".encode()


def test_lists_built_from_stored_json_validate_as_the_wire_models() -> None:
    clock = Clock()
    hub = StreamHub(clock=clock)
    snaps = [hub.publish_snapshot(lambda seq: busy(seq, clock())) for _ in range(3)]
    hub.publish_event("agent.started", "hello")
    listed = SnapshotList.model_validate_json(json_list("snapshots", hub.snapshots.since(0)))
    assert listed.snapshots == snaps
    events = EventList.model_validate(json.loads(json_list("events", hub.events.since(0))))
    assert [e.name for e in events.events] == ["agent.started"]
    assert json.loads(json_list("snapshots", [])) == {"snapshots": []}


def test_the_stored_snapshots_are_bounded_by_count_and_by_age() -> None:
    clock = Clock()
    hub = StreamHub(max_age_s=60.0, max_snapshots=10, max_events=3, clock=clock)
    made = []
    for _ in range(25):  # 4 Hz: 25 items in 6 s, more than the count bound
        made.append(hub.publish_snapshot(lambda seq: busy(seq, clock())).seq)
        clock.now += 0.25
    assert len(hub.snapshots) == 10
    assert [s.seq for s in hub.snapshots.since(0)] == made[-10:]
    for i in range(5):
        hub.publish_event("agent.started", f"e{i}")
    assert [json.loads(s.json())["message"] for s in hub.events.since(0)] == ["e2", "e3", "e4"]
    clock.now += 60.0 - 0.25 * 4  # the four newest snapshots are now within the last minute
    assert [s.seq for s in hub.snapshots.since(0)] == made[-4:]
    clock.now += 3600
    assert hub.since(0) == [] and hub.snapshots.first_seq is None
