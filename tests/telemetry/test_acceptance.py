"""The acceptance findings (issue 49): collapse, loop and wasted drafts, on snapshots built tick by tick.

Each rule must fire when its condition holds for as long as the profile says, and stay silent on the
traffic around it: a mild dip, a server that never had a level to fall from, the agent's own
benchmark, a stretch too short to be a loop. The live sim and the real captures are in
``test_acceptance_captures.py`` and ``tests/agent/test_acceptance_live.py``.
"""

from __future__ import annotations

from collections.abc import Iterable

from agent.profile.health import Health
from agent.telemetry.acceptance import AcceptanceWatch
from agent.telemetry.draft_waste import DraftWaste
from agent.telemetry.health import HealthWatch
from agent.wire import Finding, Load, Snapshot, Speculation

ACCEPTANCE_CODES = {"accept_collapse", "accept_loop", "wasted_drafts"}


def snap(t: float, accept: float | None, *, steps: int = 3, running: int = 8, rate: float = 0.55) -> Snapshot:
    spec = Speculation(
        configured=True,
        on=steps > 0,
        steps=steps,
        draft_tokens=steps + 1,
        accept_length=accept,
        accept_window_s=10.0 if accept is not None else None,
        accept_source="counters" if accept is not None else None,
        accept_rate=rate,
    )
    return Snapshot(
        seq=int(t),
        time=t,
        engine_state="ready",
        engine_pid=1,
        metrics_source="metrics",
        load=Load(running=running, queued=0, max_running_requests=256),
        speculation=spec,
    )


def run(
    watch: AcceptanceWatch, start: float, seconds: int, accept: float, limits: Health, **kw: object
) -> list[list[Finding]]:
    """One tick a second; the findings of every tick."""
    judged = bool(kw.pop("judged", True))
    return [
        watch.observe(snap(start + i, accept, **kw), limits, judged=judged)  # type: ignore[arg-type]
        for i in range(seconds)
    ]


def codes(ticks: Iterable[list[Finding]]) -> set[str]:
    return {f.code for found in ticks for f in found}


def test_collapse_fires_against_the_servers_own_recent_level_and_names_the_levers() -> None:
    limits, watch = Health(), AcceptanceWatch()
    healthy = run(watch, 0, 120, 2.6, limits)
    dropped = run(watch, 120, 60, 1.2, limits)
    assert codes(healthy) == set()
    collapse = next(f for f in dropped[-1] if f.code == "accept_collapse")
    assert (
        collapse.value == 1.2 and collapse.limit == 1.8 and collapse.unit == "tokens"
    )  # gain 0.2 < 0.5 × 1.6
    assert "2.60" in collapse.title and "at the same step count" in collapse.explanation
    for cause in ("does not match", "traffic changed", "garbled"):
        assert cause in collapse.explanation
    assert "threshold to 1" in collapse.action and "autopilot" in collapse.action
    # The level now is a window: the first ticks after the drop do not raise it yet.
    assert codes(dropped[:10]) == set()


def test_a_mild_dip_or_a_server_without_a_recent_level_raises_no_collapse() -> None:
    limits = Health()
    watch = AcceptanceWatch()
    run(watch, 0, 120, 2.6, limits)
    assert codes(run(watch, 120, 120, 1.9, limits)) == set()  # gain 0.9, above half of 1.6
    never = AcceptanceWatch()  # a draft that never matched: accept_length_stuck speaks for it
    assert codes(run(never, 0, 300, 1.1, limits)) == set()


def test_collapse_after_the_adaptive_policy_drops_to_fewer_steps_is_carried_by_the_model() -> None:
    limits, watch = Health(), AcceptanceWatch()
    run(watch, 0, 120, 2.6, limits, steps=3)
    dropped = run(watch, 120, 60, 1.05, limits, steps=1)
    collapse = next(f for f in dropped[-1] if f.code == "accept_collapse")
    assert "at 1 step" in collapse.title and "carries" in collapse.explanation


def test_collapse_holds_until_the_acceptance_comes_back_or_the_baseline_has_passed() -> None:
    limits, watch = Health(), AcceptanceWatch()
    run(watch, 0, 300, 2.6, limits)
    bad = run(watch, 300, 240, 1.1, limits)
    assert "accept_collapse" in codes(bad[-1:])  # the collapsed readings did not become the recent level
    back = run(watch, 540, 60, 2.6, limits)
    assert codes(back[-1:]) == set()
    run(watch, 600, 300, 2.6, limits)
    long = run(watch, 900, int(limits.accept_baseline_s) + 60, 1.1, limits)
    assert "accept_collapse" in codes(long[: int(limits.accept_baseline_s) // 2])
    assert codes(long[-1:]) == set()  # ten minutes on, this is the server's level (wasted_drafts judges it)


def test_loop_fires_after_the_window_at_the_maximum_only() -> None:
    limits, watch = Health(), AcceptanceWatch()
    ticks = run(watch, 0, 80, 4.0, limits)
    # The first reading whose 10 s window lies after speculation began is at 10 s: the stretch starts there.
    assert codes(ticks[:69]) == set()
    loop = next(f for f in ticks[70] if f.code == "accept_loop")
    assert loop.limit == 4.0 and loop.since == 10.0 and "repetitive output" in loop.explanation
    assert "repetition penalty" in loop.action
    high = AcceptanceWatch()  # 3.5 of 4: 83 % of the drafts kept, a good drafter, not a loop
    assert codes(run(high, 0, 300, 3.5, limits)) == set()


def test_a_loop_needs_an_unbroken_stretch_of_the_clients_traffic() -> None:
    limits = Health()
    broken = AcceptanceWatch()
    for start in range(0, 300, 40):
        assert codes(run(broken, start, 35, 4.0, limits)) == set()
        run(broken, start + 35, 5, 3.0, limits)  # a reading below the maximum ends the stretch
    bench = AcceptanceWatch()  # the agent's own benchmark is not the clients' traffic
    assert codes(run(bench, 0, 300, 4.0, limits, judged=False)) == set()
    idle = AcceptanceWatch()
    for start in range(0, 300, 40):
        run(idle, start, 35, 4.0, limits)
        run(idle, start + 35, 5, 4.0, limits, running=0)
    assert codes(run(idle, 300, 30, 4.0, limits)) == set()


def test_wasted_drafts_over_a_minute_with_the_decode_time_they_took() -> None:
    limits, waste, watch = Health(), DraftWaste(), HealthWatch()
    found: list[Finding] = []
    for i in range(61):
        s = snap(float(i), 1.3, rate=0.1)
        s = s.model_copy(update={"speculation": waste.observe(s.time, s.speculation, s.load.running)})
        found = watch.observe(s, limits).findings
    spec = s.speculation
    assert spec.drafting_s_per_min == 60.0 and spec.rejected_draft_share == 0.9
    assert spec.wasted_draft_s_per_min == 40.5  # 60 s × 90 % rejected × 3 of the 4 positions verified
    wasted = next(f for f in found if f.code == "wasted_drafts")
    assert wasted.value == 90.0 and wasted.limit == 80.0 and wasted.unit == "%"
    assert "40 s" in wasted.title and "estimate" in wasted.explanation and "threshold" in wasted.action


def test_no_wasted_drafts_on_a_drafter_that_pays_or_too_short_a_spell() -> None:
    limits = Health()
    for rate, seconds in ((0.55, 120), (0.0, 15)):
        waste, watch = DraftWaste(), HealthWatch()
        for i in range(seconds):
            s = snap(float(i), 2.6 if rate else 1.0, rate=rate)
            s = s.model_copy(update={"speculation": waste.observe(s.time, s.speculation, s.load.running)})
            assert not {f.code for f in watch.observe(s, limits).findings} & ACCEPTANCE_CODES


def test_idle_ticks_and_the_gauge_alone_never_count_as_drafting() -> None:
    waste = DraftWaste()
    for i in range(60):
        idle = snap(float(i), None, running=0, rate=0.0).speculation
        spec = waste.observe(float(i), idle, 0)
    assert spec.drafting_s_per_min == 0.0 and spec.rejected_draft_share is None
