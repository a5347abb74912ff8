"""The autopilot's state machine: off by default, on and off as the operator says, safe when telemetry
goes stale or the engine restarts, and within its bounds (moves per minute, probe share, thresholds)
when it steers the engine model on its virtual clock through the agent's own telemetry code."""

from __future__ import annotations

from dataclasses import replace

import pytest

from agent.control.autopilot.pilot import Command, Notice, Pilot
from agent.control.autopilot.policy import Setting
from agent.control.autopilot.sample import Sample
from agent.control.autopilot.settings import PROBE_WINDOW_S, RESUME_AFTER_S, settings_of
from agent.control.autopilot.view import state_of
from agent.profile.store import load_profile
from agent.sim.workload import Phase, Workload
from agent.whatif.autopilot import run_autopilot, run_fixed

PROFILE = load_profile("profiles/kimi-k25-eagle3.toml")
SETTINGS = settings_of(PROFILE)
OPERATOR = Setting(125, -1)


def sample(t: float, *, steps: int = 3, threshold: int = 125, running: int = 8, accept: float = 1.0,
           pid: int = 1, usable: bool = True, available: bool = True) -> Sample:  # fmt: skip
    return Sample(
        time=t,
        engine_state="ready",
        engine_pid=pid,
        usable=usable,
        running=running,
        tokens=running * 20.0 * (accept if steps else 1.0),
        span_s=1.0,
        steps=steps if running < threshold or threshold == 0 else 0,
        context=1000.0,
        accept_recent=accept if steps else None,
        threshold=threshold,
        pinned=-1,
        prebuilt=(0, 1, 2, 3),
        threshold_available=available,
        configured=True,
    )


def drive(pilot: Pilot, start: float, seconds: int, **kw: object) -> list[tuple[float, Command | Notice]]:
    """Feed one sample a second; apply every command at once (as the engine would); return them all."""
    out: list[tuple[float, Command | Notice]] = []
    for i in range(seconds):
        t = start + i
        current = pilot.in_force or OPERATOR
        for effect in pilot.observe(sample(t, threshold=current.threshold, **kw)):  # type: ignore[arg-type]
            out.append((t, effect))
            if isinstance(effect, Command):
                pilot.issued(effect)
                out.extend((t, n) for n in pilot.applied(effect, True, "applied", t))
    return out


def commands(effects: list[tuple[float, Command | Notice]]) -> list[tuple[float, Command]]:
    return [(t, e) for t, e in effects if isinstance(e, Command)]


def test_off_by_default_it_watches_and_changes_nothing() -> None:
    pilot = Pilot(SETTINGS)
    assert drive(pilot, 0.0, 120) == []
    state = state_of(pilot, 120.0)
    assert state.enabled is False and state.mode == "off" and state.operator_threshold == 125


def test_drafts_never_kept_bring_the_threshold_to_its_lowest_and_off_restores_the_operators_in_one_step() -> (
    None
):
    pilot = Pilot(SETTINGS)
    (notice,) = pilot.configure(SETTINGS, True)
    assert isinstance(notice, Notice) and notice.name == "autopilot.enabled"
    moves = commands(drive(pilot, 0.0, 60, accept=1.0))
    assert moves, "it never moved"
    at, first = moves[0]
    assert first.kind == "move" and first.target == Setting(1, -1) and at <= 30
    assert "drafting cannot pay" in first.why and first.before == OPERATOR
    assert all(c.target.threshold == 1 for _, c in moves)  # and stays there
    (restore,) = pilot.configure(SETTINGS, False)
    assert isinstance(restore, Command) and restore.kind == "restore"
    assert restore.target == OPERATOR and restore.before == Setting(1, -1)
    pilot.issued(restore)
    (done,) = pilot.applied(restore, True, "applied", 61.0)
    assert isinstance(done, Notice) and done.name == "autopilot.disabled"
    assert pilot.in_force is None and state_of(pilot, 61.0).mode == "off"


def test_off_before_any_move_calls_nothing() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    drive(pilot, 0.0, 3)
    (notice,) = pilot.configure(SETTINGS, False)
    assert isinstance(notice, Notice) and notice.name == "autopilot.disabled"


def test_stale_telemetry_returns_to_the_operators_setting_at_once_and_it_resumes_when_fresh() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    drive(pilot, 0.0, 40, accept=1.0)
    assert pilot.in_force == Setting(1, -1)
    quiet = drive(pilot, 40.0, int(SETTINGS.stale_after_s) + 2, usable=False)
    (revert,) = [c for _, c in commands(quiet)]
    assert revert.kind == "revert" and revert.target == OPERATOR
    assert state_of(pilot, 55.0).mode == "holding" and pilot.in_force is None
    # The watchdog path: no sample at all is stale too, and a revert already made is not repeated.
    assert pilot.check_stale(200.0) == []
    back = drive(pilot, 60.0, int(RESUME_AFTER_S) + 3, accept=1.0)
    assert any(isinstance(e, Notice) and e.name == "autopilot.resumed" for _, e in back)


def test_an_engine_restart_is_noted_and_what_was_measured_on_the_old_one_is_forgotten() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    drive(pilot, 0.0, 40, accept=1.0)
    assert pilot.est.accept.lengths
    effects = drive(pilot, 40.0, 1, pid=2)
    assert [e.name for _, e in effects if isinstance(e, Notice)] == ["autopilot.reverted"]
    assert not commands(effects)  # a restarted engine runs its launch setting: the operator's
    assert not pilot.est.accept.lengths and not pilot.est.cells and pilot.in_force is None


def test_an_engine_without_live_control_is_reported_not_steered() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    effects = drive(pilot, 0.0, 30, available=False)
    assert [e.name for _, e in effects if isinstance(e, Notice)] == ["autopilot.unavailable"]
    assert not commands(effects) and "no live threshold" in (state_of(pilot, 30.0).detail or "")


def ramp(
    acceptance: str, seconds: float, clients: list[int], input_len: int = 512, output_len: int = 1024
) -> Workload:
    return Workload(
        name="t",
        phase=[
            Phase(
                seconds=seconds,
                input_len=input_len,
                output_len=output_len,
                acceptance=acceptance,
                concurrency=clients,
            )
        ],
    )


def test_on_the_engine_model_a_drafter_that_never_pays_is_switched_off_within_two_minutes() -> None:
    run = run_autopilot(PROFILE, ramp("random", 150.0, [1, 64]))
    assert run.record is not None
    at = next(t for t, threshold, _, _ in run.record.thresholds if 0 < threshold <= 2)
    assert at <= 120.0
    assert run.tokens > run_fixed(PROFILE, ramp("random", 150.0, [1, 64]), None).tokens


@pytest.mark.slow
def test_on_the_engine_model_a_drafter_that_always_pays_is_never_switched_off_and_the_threshold_goes() -> (
    None
):
    run = run_autopilot(PROFILE, ramp("oracle", 900.0, [1, 128, 128, 128, 1]))
    assert run.record is not None and run.settings is not None
    probes = [
        (t, t + run.settings.probe_s + 1) for t, c, ok in run.record.commands if ok and c.kind == "probe"
    ]
    off = [
        t for t, threshold, _, running in run.record.thresholds
        if 0 < threshold <= running and not any(a <= t <= b for a, b in probes)
    ]  # fmt: skip
    assert off == []
    assert run.record.thresholds[-1][1] == 0  # no threshold: speculation at every batch size


def test_its_bounds_hold_in_every_window_on_shifting_traffic() -> None:
    settings = replace(SETTINGS, threshold_min=2, threshold_max=64, max_moves_per_minute=3)
    workload = Workload(
        name="t",
        phase=[
            Phase(
                seconds=240, input_len=512, output_len=1024, acceptance="calibrated", concurrency=[8, 80, 8]
            ),
            Phase(seconds=240, input_len=512, output_len=1024, acceptance="low", concurrency=[8, 80, 8]),
        ],
    )
    run = run_autopilot(PROFILE, workload, settings=settings)
    record = run.record
    assert record is not None and record.moves > 0
    assert run.busiest_minute() <= 3
    done = [c for _, c, ok in record.commands if ok]
    assert all(2 <= c.target.threshold <= 64 for c in done if c.kind in ("move", "probe"))
    # A probe ends on what ran before it (the operator's threshold, before its first move) or a move.
    before = {c.before for c in done if c.kind == "probe"}
    assert all(c.target in before or 2 <= c.target.threshold <= 64 for c in done if c.kind == "probe_end")
    probes = [(t, t + settings.probe_s) for t, c, ok in record.commands if ok and c.kind == "probe"]
    for start, _ in probes:
        window = [(max(a, start - PROBE_WINDOW_S), min(b, start + settings.probe_s)) for a, b in probes]
        spent = sum(
            max(0.0, b - a) for a, b in window if a < start + settings.probe_s and b > start - PROBE_WINDOW_S
        )
        assert spent <= settings.probe_share * PROBE_WINDOW_S + settings.probe_s * 0.1


def test_a_batch_hovering_at_the_crossover_does_not_make_it_flap() -> None:
    hover = ramp("low", 600.0, [16, 32] * 10 + [16])  # the batch crosses 16-32 every 15 s
    run = run_autopilot(PROFILE, hover)
    assert run.record is not None
    moves = [c.target.threshold for _, c, ok in run.record.commands if ok and c.kind == "move"]
    assert len(moves) <= 3, moves
    # Never back and forth: once it has moved away from a threshold it does not return to it.
    assert len(set(moves)) == len(moves), moves


def test_off_restores_a_setting_left_by_an_earlier_agent_and_stopping_restores_its_own() -> None:
    pilot = Pilot(SETTINGS)
    pilot.configure(SETTINGS, True)
    left = sample(0.0, threshold=3)  # a reattached engine still runs what an earlier autopilot set
    pilot.observe(left)
    assert pilot.stopping() is not None and pilot.stopping().target == Setting(125, -1)  # type: ignore[union-attr]
    (restore,) = pilot.configure(SETTINGS, False)
    assert isinstance(restore, Command) and restore.kind == "restore" and restore.before == Setting(3, -1)
    pilot.applied(restore, True, "applied", 1.0)
    assert pilot.stopping() is None  # off: nothing of its own runs
