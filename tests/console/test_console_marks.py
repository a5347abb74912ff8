"""The charts' marks: which switches keep a marker and where a benchmark's band lies (console.model.marks).

Times are agent times; the marks come back as seconds before ``now`` (the newest snapshot), the axis
the charts draw on.
"""

from __future__ import annotations

from agent.wire import Event, Snapshot, make_event
from console.model import ConsoleModel
from console.model.marks import BenchBand, BenchSpan, ChartMarks, SpecSwitch, chart_marks

SWITCHES = (
    SpecSwitch(100.0, False),
    SpecSwitch(150.0, True),
    SpecSwitch(160.0, False),
    SpecSwitch(250.0, True),
)
"""One before the bench (100), two it forced (150, 160), one after it (250)."""


def event(seq: int, t: float, name: str, **data: object) -> Event:
    progress = {"arm": "on", "concurrency": 1, "level_index": 0, "levels": 1, "completed": 0, "requests": 1}
    return make_event(seq, t, name, name, {**progress, **data} if name == "bench.progress" else data)


def test_without_a_bench_every_switch_in_the_window_keeps_its_marker() -> None:
    marks = chart_marks(SWITCHES, (), now=300.0, window_s=300.0)
    assert marks == ChartMarks(((-200.0, False), (-150.0, True), (-140.0, False), (-50.0, True)), ())


def test_a_finished_bench_is_one_band_and_only_the_switches_outside_it_are_marked() -> None:
    marks = chart_marks(SWITCHES, [BenchSpan("b1", 140.0, 200.0)], now=300.0, window_s=300.0)
    assert marks.switches == ((-200.0, False), (-50.0, True)), "before and after the bench: as without one"
    assert marks.benches == (BenchBand(-160.0, -100.0, running=False),)


def test_a_switch_at_either_end_of_the_span_is_the_benchs_own() -> None:
    marks = chart_marks(SWITCHES, [BenchSpan("b1", 150.0, 160.0)], now=300.0, window_s=300.0)
    assert [x for x, _ in marks.switches] == [-200.0, -50.0]


def test_a_bench_still_running_reaches_now_and_hides_every_switch_since_its_start() -> None:
    marks = chart_marks(SWITCHES, [BenchSpan("b1", 140.0)], now=300.0, window_s=300.0)
    assert marks.switches == ((-200.0, False),)
    assert marks.benches == (BenchBand(-160.0, 0.0, running=True),)


def test_two_benches_are_two_bands_and_the_switch_between_them_stays() -> None:
    spans = [BenchSpan("b2", 240.0, 260.0), BenchSpan("b1", 140.0, 170.0)]
    marks = chart_marks(SWITCHES, spans, now=300.0, window_s=300.0)
    assert marks.switches == ((-200.0, False),), "100 is before both; 150, 160 in b1; 250 in b2"
    assert marks.benches == (BenchBand(-160.0, -130.0, False), BenchBand(-60.0, -40.0, False)), "oldest first"
    between = chart_marks([SpecSwitch(200.0, True)], spans, now=300.0, window_s=300.0)
    assert between.switches == ((-100.0, True),)


def test_the_window_cuts_a_band_and_drops_one_that_ended_before_it() -> None:
    spans = [BenchSpan("old", 10.0, 50.0), BenchSpan("b1", 140.0, 200.0)]
    marks = chart_marks(SWITCHES, spans, now=300.0, window_s=120.0)
    assert marks.benches == (BenchBand(-120.0, -100.0, running=False),), "starts at the window's edge"
    assert marks.switches == ((-50.0, True),), "100 is outside the window, 150 and 160 in the bench"


def test_the_model_draws_a_band_from_the_benchs_own_events() -> None:
    model = ConsoleModel()
    items: list[Snapshot | Event] = [
        event(1, 100.0, "speculation.off", reason="above_threshold"),
        event(2, 140.0, "bench.started", bench_id="b1"),
        event(3, 150.0, "speculation.on", steps=3),
        event(4, 155.0, "bench.progress", bench_id="b1", fraction=0.5),
        event(5, 160.0, "speculation.off", reason="above_threshold"),
        Snapshot(seq=6, time=180.0),
    ]
    for item in items:
        model.ingest(item)
    running = model.chart_marks(300.0)
    assert running.benches == (BenchBand(-40.0, 0.0, running=True),), "running: to the newest snapshot"
    assert running.switches == ((-80.0, False),)
    model.ingest(event(7, 200.0, "bench.failed", bench_id="b1", error="engine died"))
    model.ingest(event(8, 250.0, "speculation.on", steps=3))
    model.ingest(Snapshot(seq=9, time=300.0))
    ended = model.chart_marks(300.0)
    assert ended.benches == (BenchBand(-160.0, -100.0, running=False),), "a failed run ends its span too"
    assert ended.switches == ((-200.0, False), (-50.0, True))
    assert len(model.spec_switches) == 4, "every switch is still kept: only the chart leaves some out"


def test_no_marks_before_the_first_snapshot() -> None:
    model = ConsoleModel()
    model.ingest(event(1, 140.0, "bench.started", bench_id="b1"))
    assert model.chart_marks(300.0) == ChartMarks()
