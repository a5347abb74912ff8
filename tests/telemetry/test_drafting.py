"""Which accept-length readings the "accepts almost nothing" rule may judge the draft on."""

from __future__ import annotations

from agent.telemetry.drafting import DraftingReadings
from agent.telemetry.findings import ACCEPT_STUCK_MIN_SAMPLES, HealthInputs, evaluate
from agent.wire import Speculation


def drafting(accept: float, window_s: float = 10.0) -> Speculation:
    return Speculation(configured=True, on=True, accept_length=accept, accept_window_s=window_s)


def test_a_window_reaching_back_before_the_switch_on_is_not_believed() -> None:
    readings = DraftingReadings(30)
    off = Speculation(configured=True, on=False, accept_length=1.0, accept_window_s=10.0)
    for t in range(0, 20):
        assert not readings.observe(float(t), off, 200)
    # Back on at t=20: for ten seconds the 10 s window still holds the plain decoding's verify calls.
    taken = [readings.observe(float(t), drafting(1.05 if t < 30 else 2.6), 120) for t in range(20, 36)]
    assert taken == [False] * 10 + [True] * 6
    assert readings.values == (2.6,) * 6
    assert [f.code for f in evaluate(HealthInputs(speculating=True, accept_lengths=readings.values))] == []


def test_a_stuck_draft_is_still_found_and_quoted_as_the_snapshot_shows_it() -> None:
    readings = DraftingReadings(30)
    for t in range(0, 16):
        readings.observe(float(t), drafting(1.02), 8)
    assert len(readings.values) >= ACCEPT_STUCK_MIN_SAMPLES
    (finding,) = evaluate(HealthInputs(speculating=True, accept_lengths=readings.values, accept_length=1.02))
    assert finding.title == "Speculation accepts almost nothing (accept length 1.02)"
    (older,) = evaluate(HealthInputs(speculating=True, accept_lengths=readings.values))
    assert older.title.endswith("(accept length 1.02 over the last 5 readings)")


def test_a_tick_not_speculating_or_unknown_ends_the_run() -> None:
    readings = DraftingReadings(30)
    for t in range(0, 16):
        readings.observe(float(t), drafting(1.02), 8)
    readings.observe(16.0, Speculation(configured=True, on=None), 8)
    assert readings.values == ()
    assert not readings.observe(17.0, drafting(1.02), 8), "a new run starts: its window must fill first"
    idle = drafting(1.02)
    assert not readings.observe(30.0, idle, 0), "no traffic: no reading"
