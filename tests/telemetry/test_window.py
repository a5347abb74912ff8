"""The window of counters and histograms (pure): spans, restarts, late series, changed buckets."""

from __future__ import annotations

import math

from agent.sglang.histogram import Histogram
from agent.telemetry.window import CounterWindow, Windowed


def hist(*counts: float, bounds: tuple[float, ...] = (0.1, 1.0)) -> Histogram:
    return Histogram.of(zip((*bounds, math.inf), counts, strict=True), counts[-1], 0.0)


def test_rates_say_the_span_they_cover() -> None:
    w = CounterWindow(keep_s=60)
    for t in range(6):
        w.add(float(t), {"tokens": 100.0 * t * t}, {})
    assert w.rate("tokens", 10) == Windowed(500.0, 5.0)  # the window is not full yet: 5 s, said so
    assert w.rate("tokens", 2) == Windowed((2500 - 900) / 2, 2.0)
    assert w.last_rate("tokens") == Windowed(900.0, 1.0)
    assert w.rate("missing", 10) is None


def test_a_counter_that_goes_down_is_a_restart_and_drops_the_history() -> None:
    w = CounterWindow(keep_s=60)
    assert w.add(0.0, {"tokens": 500.0}, {})
    assert not w.add(1.0, {"tokens": 10.0}, {})  # a new process
    assert len(w) == 1 and w.rate("tokens", 10) is None  # never a rate across two processes
    assert w.add(2.0, {"tokens": 20.0}, {"ttft": hist(5, 5, 5)})
    assert not w.add(3.0, {"tokens": 30.0}, {"ttft": hist(1, 1, 1)})  # histogram counts went down too


def test_a_series_that_appears_later_gets_its_window() -> None:
    w = CounterWindow(keep_s=60)
    w.add(0.0, {}, {})
    w.add(1.0, {"verifies": 10.0, "tokens": 30.0}, {})
    w.add(3.0, {"verifies": 20.0, "tokens": 60.0}, {})
    assert w.delta("verifies", 10) == Windowed(10.0, 2.0)  # from the first point that has it
    assert w.ratio("tokens", "verifies", 10) == Windowed(3.0, 2.0)
    w.add(4.0, {"verifies": 20.0, "tokens": 60.0}, {})
    assert w.ratio("tokens", "verifies", 0) is None  # nothing verified within the last tick


def test_histograms_are_windowed_only_between_equal_buckets() -> None:
    w = CounterWindow(keep_s=60)
    w.add(0.0, {}, {"ttft": hist(10, 10, 10)})
    w.add(1.0, {}, {"ttft": hist(10, 30, 31)})
    recent = w.histogram("ttft", 30)
    assert recent is not None and recent.span_s == 1.0 and recent.histogram.observations == 21
    w.add(2.0, {}, {"ttft": hist(11, 31, 32, 32, bounds=(0.1, 1.0, 5.0))})  # the server's buckets changed
    assert w.histogram("ttft", 30) is None


def test_old_points_are_forgotten() -> None:
    w = CounterWindow(keep_s=10)
    for t in range(100):
        w.add(float(t), {"tokens": float(t)}, {})
    assert len(w) <= 12 and w.rate("tokens", 5) == Windowed(1.0, 5.0)
