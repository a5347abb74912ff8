"""The steady-state window: where it starts and ends, and what it holds (scripted events, no engine)."""

from __future__ import annotations

import itertools

import pytest

from agent.bench.stats import RequestRecord
from agent.bench.window import (
    STARTED_BY_ENGINE,
    STARTED_BY_STREAMS,
    STARTED_UNREACHED,
    WindowRule,
    WindowTracker,
    delivered,
    mean_running,
    slices,
)
from agent.bench.window_stats import LATENCY_FINISHED, LATENCY_INSIDE, window_metrics


def record(worker: int, start: float, chunks: list[tuple[float, int]], done: bool = True) -> RequestRecord:
    """A request of ``worker`` started at ``start`` whose chunks brought its count to ``n`` at ``t``."""
    r = RequestRecord(start=start, worker=worker, prompt_tokens=10, done=done)
    r.chunk_times = [t for t, _ in chunks]
    r.chunk_counts = [n for _, n in chunks]
    r.ttft = chunks[0][0] - start
    for (t0, n0), (t1, n1) in itertools.pairwise(chunks):
        r.itl.extend([(t1 - t0) / (n1 - n0)] * (n1 - n0))
    r.output_tokens = chunks[-1][1]
    if done:
        r.latency, r.success = chunks[-1][0] - start, True
    return r


def test_the_window_starts_at_the_first_completion_once_every_stream_runs() -> None:
    tracker = WindowTracker(WindowRule(target=3, min_window_s=0.0, min_completions=2))
    tracker.first_token(0.1)
    tracker.first_token(0.2)
    assert tracker.finished(0, 0.5, success=True, had_first_token=True) is False  # only 2 of 3 ran
    assert not tracker.started, "a completion before the target is reached is ramp"
    tracker.first_token(0.6)  # stream 0 again
    tracker.first_token(0.7)  # stream 2: now 3 run
    assert tracker.target_reached_at == 0.7 and tracker.target_source == STARTED_BY_STREAMS
    assert tracker.finished(1, 0.9, True, True) is False
    assert tracker.started and tracker.start == 0.9 and tracker.pacer == 1


def test_the_engine_gauge_can_say_the_target_first() -> None:
    tracker = WindowTracker(WindowRule(target=4, min_window_s=0.0))
    tracker.first_token(0.1)
    tracker.engine_running(0.3, 3.0)
    assert tracker.target_reached_at is None
    tracker.engine_running(0.4, 4.0)
    assert tracker.target_reached_at == 0.4 and tracker.target_source == STARTED_BY_ENGINE


def test_the_window_ends_at_the_pacers_completion_once_it_holds_k_requests_and_w_seconds() -> None:
    tracker = WindowTracker(WindowRule(target=2, min_window_s=1.0, min_completions=3))
    tracker.first_token(0.0)
    tracker.first_token(0.0)
    tracker.finished(0, 0.5, True, True)  # window starts, stream 0 paces it
    tracker.first_token(0.55)
    for t in (0.7, 0.9, 1.1):  # stream 1 completes three times: K is met, W is not, and it does not pace
        assert tracker.finished(1, t, True, True) is False
        tracker.first_token(t + 0.01)
    assert tracker.finished(0, 1.2, True, True) is False, "K met but only 0.7 s of window"
    tracker.first_token(1.21)
    assert tracker.finished(1, 1.4, True, True) is False
    tracker.first_token(1.41)
    assert tracker.finished(0, 1.6, True, True) is True
    window = tracker.window()
    assert window is not None
    assert (window.start, window.end, window.pacer) == (0.5, 1.6, 0)
    assert window.cycles == (0.5, 1.2, 1.6), "both ends are the pacing stream's completions"
    assert window.completions == 6 and window.target_reached and window.start_source == STARTED_BY_STREAMS
    assert tracker.finished(1, 1.7, True, True) is False, "after the end nothing counts"


def test_the_default_k_is_two_completions_per_stream() -> None:
    tracker = WindowTracker(WindowRule(target=6, min_window_s=0.0))
    for _ in range(6):
        tracker.first_token(0.0)
    tracker.finished(0, 1.0, True, True)
    assert tracker.min_completions == 12
    small = WindowTracker(WindowRule(target=1, min_window_s=0.0))
    small.first_token(0.0)
    small.finished(0, 1.0, True, True)
    assert small.min_completions == 8


def test_a_target_the_engine_never_holds_starts_the_window_after_a_round_of_completions() -> None:
    tracker = WindowTracker(WindowRule(target=3, min_window_s=0.0, min_completions=1))
    tracker.first_token(0.0)
    tracker.first_token(0.0)
    assert tracker.finished(0, 1.0, True, True) is False
    tracker.first_token(1.0)
    assert tracker.finished(1, 1.5, True, True) is False
    tracker.first_token(1.5)
    assert not tracker.started
    tracker.finished(0, 2.0, True, True)
    assert tracker.started and tracker.start == 2.0
    tracker.first_token(2.0)
    assert tracker.finished(0, 3.0, True, True) is True
    window = tracker.window()
    assert window is not None and not window.target_reached and window.start_source == STARTED_UNREACHED


def test_failed_requests_pace_but_do_not_count() -> None:
    tracker = WindowTracker(WindowRule(target=1, min_window_s=0.0, min_completions=2))
    tracker.first_token(0.0)
    tracker.finished(0, 1.0, True, True)
    assert tracker.finished(0, 1.1, success=False, had_first_token=False) is False
    tracker.first_token(1.2)
    assert tracker.finished(0, 2.0, True, True) is False
    tracker.first_token(2.1)
    assert tracker.finished(0, 3.0, True, True) is True
    assert tracker.completions == 2


def test_delivered_tokens_slices_and_running_come_from_the_chunks_inside() -> None:
    # Two streams; the window is stream 0's completions at 1.0 and 3.0, cycles at 1.0, 2.0, 3.0.
    a1 = record(0, 0.0, [(0.5, 5), (1.0, 10)])
    a2 = record(0, 1.0, [(1.5, 5), (2.0, 10)])
    a3 = record(0, 2.0, [(2.5, 5), (3.0, 10)])
    b1 = record(1, 0.0, [(0.8, 4), (1.6, 10)])
    b2 = record(1, 1.6, [(2.2, 6), (2.9, 8)], done=False)  # cut off when the level ended
    records = [a1, a2, a3, b1, b2]
    assert delivered(records, 1.0, 3.0) == 10 + 10 + (10 - 4) + 8
    tracker = WindowTracker(WindowRule(target=2, min_window_s=0.0, min_completions=1))
    tracker.first_token(0.5)
    tracker.first_token(0.8)
    tracker.finished(0, 1.0, True, True)
    tracker.finished(0, 2.0, True, True)
    window = tracker.window()
    assert window is not None and window.cycles == (1.0, 2.0)
    parts = slices(records, window, at_most=4)
    assert [(s.start, s.end) for s in parts] == [(1.0, 2.0)]
    three = WindowTracker(WindowRule(target=2, min_window_s=1.5, min_completions=1))
    three.first_token(0.5)
    three.first_token(0.8)
    for t in (1.0, 2.0, 3.0):
        three.finished(0, t, True, True)
    w3 = three.window()
    assert w3 is not None and w3.cycles == (1.0, 2.0, 3.0)
    cut = slices(records, w3, at_most=4)
    assert [(s.start, s.end, s.tokens) for s in cut] == [(1.0, 2.0, 10 + 6), (2.0, 3.0, 10 + 8)]
    assert sum(s.tokens for s in cut) == delivered(records, 1.0, 3.0)
    # one cycle (the pacing stream waited its turn in a queue): equal spans of a slot's turn at least
    one = WindowTracker(WindowRule(target=2, min_window_s=0.0, min_completions=1))
    one.first_token(0.5)
    one.first_token(0.8)
    one.finished(0, 1.0, True, True)
    one.finished(1, 1.6, True, True)
    one.finished(0, 3.0, True, True)
    w1 = one.window()
    assert w1 is not None and w1.cycles == (1.0, 3.0)
    spans = slices(records, w1, at_most=4)
    # requests inside: a3 (decode 0.5 s) and b1 (0.8 s), a2 (0.5 s): median turn 0.5 s -> 4 spans of 0.5 s
    assert [(s.start, s.end) for s in spans] == [(1.0, 1.5), (1.5, 2.0), (2.0, 2.5), (2.5, 3.0)]
    assert sum(s.tokens for s in spans) == delivered(records, 1.0, 3.0)
    # decoding (first token seen, not finished) inside: a2 0.5 s, a3 0.5, b1 0.6, b2 (cut off) 0.8
    assert mean_running(records, 1.0, 3.0) == pytest.approx((0.5 + 0.5 + 0.6 + 0.8) / 2.0)


def test_window_metrics_take_latencies_from_inside_the_window_only() -> None:
    ramp = record(0, 0.0, [(0.9, 1), (1.0, 2)])  # started in the ramp: its TTFT is the ramp's
    inside = record(0, 1.0, [(1.1, 1), (1.5, 3)])
    late = record(1, 0.2, [(0.4, 1), (1.2, 2), (1.6, 4)])  # finished inside, started before
    tracker = WindowTracker(WindowRule(target=2, min_window_s=0.0, min_completions=1))
    tracker.first_token(0.4)
    tracker.first_token(0.9)
    tracker.finished(0, 1.0, True, True)
    tracker.finished(1, 1.6, True, True)
    tracker.finished(0, 1.5, True, True)
    window = tracker.window()
    assert window is not None and (window.start, window.end) == (1.0, 1.5)
    m = window_metrics([([ramp, inside, late], window)])
    assert m["ttft_requests"] == 1 and m["mean_ttft_ms"] == pytest.approx(100.0)
    assert m["completed"] == 1 and m["latency_from"] == LATENCY_INSIDE
    assert m["mean_e2e_latency_ms"] == pytest.approx(500.0)
    assert m["total_output_tokens"] == 3 + 1  # inside's 3, late's token at 1.2
    assert m["output_throughput"] == pytest.approx(4 / 0.5)
    # the gaps before tokens inside: inside's two tokens at 1.5 (0.2 each), late's one at 1.2 (0.8)
    assert m["median_itl_ms"] == pytest.approx(200.0)
    pooled = window_metrics([([ramp, inside, late], window), ([ramp, inside, late], window)])
    assert pooled["duration"] == pytest.approx(1.0) and pooled["completed"] == 2
    only_late = window_metrics([([late], window)])
    assert only_late["completed"] == 0 and only_late["latency_from"] == LATENCY_FINISHED
