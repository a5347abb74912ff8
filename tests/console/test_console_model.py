"""The plain-Python model: ingest, duplicates from a catch-up, series windows, the link state."""

from __future__ import annotations

from agent.wire import Load, Snapshot, Speculation, Throughput, make_event
from console.model import ConsoleModel, LinkStatus


def snap(seq: int, t: float, on: bool | None, tok: float | None = 100.0, running: int = 1) -> Snapshot:
    return Snapshot(
        seq=seq,
        time=t,
        throughput=Throughput(output_tok_s=tok),
        load=Load(running=running),
        speculation=Speculation(on=on),
    )


def test_catch_up_overlap_is_dropped_not_doubled() -> None:
    model = ConsoleModel(clock=lambda: 5.0)
    for n in range(1, 4):
        assert model.ingest(snap(n, float(n), True))
    assert not model.ingest(snap(2, 2.0, True))
    assert model.ingest(make_event(4, 4.0, "engine.ready", "ready"))
    assert [s.seq for s in model.snapshots] == [1, 2, 3]
    assert model.last_seq == 4 and model.duplicates_dropped == 1
    assert len(model.events) == 1


def test_series_is_relative_to_the_newest_snapshot_and_skips_unknowns() -> None:
    model = ConsoleModel()
    for n in range(1, 11):
        model.ingest(snap(n, 100.0 + n, True, tok=None if n == 9 else float(n)))
    xs, ys = model.series(lambda s: s.throughput.output_tok_s, window_s=3)
    assert xs == [-3.0, -2.0, 0.0]
    assert ys == [7.0, 8.0, 10.0]
    xs, _ = model.series(lambda s: s.load.running, window_s=100, max_points=5)
    assert len(xs) == 5


def test_version_moves_on_data_and_link_changes_only() -> None:
    model = ConsoleModel()
    v0 = model.version
    model.set_link(LinkStatus("connecting"))
    assert model.version == v0
    model.set_link(LinkStatus("connected"))
    assert model.version == v0 + 1 and not model.stale
    model.set_link(LinkStatus("reconnecting", attempt=1))
    assert model.stale


def test_a_replay_at_its_end_is_not_greyed_a_dropped_link_is() -> None:
    model = ConsoleModel()
    model.set_link(LinkStatus("ended", "end of the recording"))
    assert not model.stale
    model.set_link(LinkStatus("failed", "refused"))
    assert model.stale
