"""The autopilot and a finished bench on this engine (issue 47 item 2, issue 48 item 2): it starts
from the bench's recommended threshold while its own estimate of the crossover is missing, and says
so; when it does not move, it says why, in numbers, on its state and in an ``autopilot.held`` event."""

from __future__ import annotations

from test_autopilot_pilot import OPERATOR, SETTINGS, commands, drive

from agent.control.autopilot.pilot import Notice, Pilot
from agent.control.autopilot.policy import Crossover, Setting
from agent.control.autopilot.prior import start_from
from agent.control.autopilot.view import state_of
from agent.wire.bench_evidence import BenchEvidence, MeasuredLevel

BENCH = BenchEvidence(
    bench_id="20261207-031500-abc123",
    threshold=142,
    crossover=141.3,
    threshold_low=118,
    threshold_high=170,
    levels=[
        MeasuredLevel(concurrency=64, on=2610, off=2200),
        MeasuredLevel(concurrency=250, on=1953, off=2827),
    ],
)


def test_it_starts_from_the_benchs_threshold_and_says_which_run() -> None:
    pilot = Pilot(SETTINGS)
    pilot.prior = BENCH
    pilot.configure(SETTINGS, True)
    moves = commands(drive(pilot, 0.0, 30, accept=2.5, running=8))
    assert moves, "it never moved"
    at, first = moves[0]
    assert first.kind == "move" and first.target == Setting(142, OPERATOR.steps) and at <= 15
    assert (
        "starts from bench run 20261207-031500-abc123 recommended threshold 142 (118–170), crossover 141"
        in first.why
    )
    assert first.estimate["prior_bench_id"] == BENCH.bench_id
    state = state_of(pilot, 30.0)
    assert state.prior is not None and BENCH.bench_id in state.prior and "142 (118–170)" in state.prior


def test_without_a_bench_it_does_not_move_there() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    assert all(c.target.threshold != 142 for _, c in commands(drive(pilot, 0.0, 30, accept=2.5, running=8)))
    assert state_of(pilot, 30.0).prior is None


def test_its_own_crossover_decides_once_it_has_one() -> None:
    current = Setting(125, -1)
    assert start_from(BENCH, SETTINGS, current, None) == Setting(142, -1)
    assert start_from(BENCH, SETTINGS, current, Crossover(3, None, None, None)) == Setting(142, -1)
    assert start_from(BENCH, SETTINGS, current, Crossover(3, 90.0, 80.0, 100.0, None, 90)) is None
    assert start_from(BENCH, SETTINGS, current, Crossover(3, None, 64.0, None, "above")) is None
    assert start_from(BENCH, SETTINGS, Setting(142, -1), None) is None  # in force already
    assert start_from(None, SETTINGS, current, None) is None


def test_when_it_does_not_move_it_says_why_in_numbers_on_its_state_and_in_an_event() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    effects = drive(pilot, 0.0, 12, accept=2.5, running=8, usable=True)
    held = [e for _, e in effects if isinstance(e, Notice) and e.name == "autopilot.held"]
    assert held, "no autopilot.held event"
    assert held[0].data["reason"] == "no_estimate"
    assert "keeps threshold 125" in held[0].message and "s of recent traffic measured" in held[0].message
    assert "% of the last 10 minutes" in held[0].message
    state = state_of(pilot, 12.0)
    assert state.held is not None and "no setting to compare yet" in state.held
    # The same reason at the next decision: on the state, no second event.
    more = drive(pilot, 12.0, 6, accept=2.5, running=8)
    assert not [e for _, e in more if isinstance(e, Notice) and e.name == "autopilot.held"]
