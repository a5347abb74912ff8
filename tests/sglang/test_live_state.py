"""The server's build facts stay apart from the live values applied to it: "live or restart" is
decided from the launch profile, a relaunch keeps the states, and the live values are put back."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.control.planner import Draft, plan_request
from agent.profile import Profile, load_profile
from agent.sglang import live_control, live_state, rules, support
from agent.wire import ActionRequest

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
ORACLE = Path(__file__).resolve().parents[2] / "bench" / "real" / "profiles" / "tiny-oracle.toml"


def _req(kind: str, value: object) -> ActionRequest:
    return ActionRequest(request_id="req-live-state-1", kind=kind, value=value)  # type: ignore[arg-type]


def _no_named(name: str) -> Profile:
    raise AssertionError(name)


def _spec(profile: Profile, **updates: object) -> Profile:
    return profile.model_copy(update={"speculation": profile.speculation.model_copy(update=updates)})


@pytest.fixture
def launched() -> Profile:
    profile = load_profile(ORACLE)
    assert profile.speculation.threshold == 32 and profile.speculation.live_steps == [1, 2, 3]
    return profile


def _apply(draft: Draft) -> Profile:
    """What the action book records once a live draft is applied: the running profile."""
    assert draft.mode == "live", draft.reason
    assert draft.new_profile is not None
    return draft.new_profile


def test_the_threshold_round_trip_is_live_every_step(launched: Profile) -> None:
    running = launched
    for value in (0, 32, 1, 2, 48, 0):
        draft = plan_request(_req("threshold", value), running, _no_named, launched)
        running = _apply(draft)
        assert draft.live_args == {live_control.LIVE_THRESHOLD_KEY: value}, value
    assert running.speculation.threshold is None


def test_the_bug_as_found_without_the_launch_profile(launched: Profile) -> None:
    # The running profile alone (threshold unset after a live 0) reads as a server without the
    # 0-step state: that is why the launch profile has to be passed.
    after_zero = _apply(plan_request(_req("threshold", 0), launched, _no_named, launched))
    assert plan_request(_req("threshold", 32), after_zero, _no_named).mode == "restart"
    assert plan_request(_req("threshold", 32), after_zero, _no_named, launched).mode == "live"


def test_live_steps_pins_are_decided_from_the_launch(launched: Profile) -> None:
    running = _apply(plan_request(_req("threshold", 1), launched, _no_named, launched))
    draft = plan_request(_req("steps", 2), running, _no_named, launched)
    assert _apply(draft).speculation.num_steps == 2
    assert draft.live_args == {live_control.LIVE_STEPS_KEY: 2}
    refused = plan_request(_req("steps", 5), running, _no_named, launched)
    assert refused.mode == "rejected" and refused.rejected_field == "speculation.num_steps"


def test_threshold_1_needs_the_0_step_state() -> None:
    static = _spec(load_profile(ORACLE), threshold=None)
    draft = plan_request(_req("threshold", 1), static, _no_named)
    assert draft.mode == "rejected" and draft.rejected_field == "speculation.threshold"
    assert "at least 2" in draft.reason


def test_a_restart_only_change_still_restarts_and_keeps_the_states(launched: Profile) -> None:
    running = _apply(plan_request(_req("threshold", 0), launched, _no_named, launched))
    draft = plan_request(_req("topk", 1), running, _no_named, launched)
    assert draft.mode == "noop"
    # A key that only a restart changes: the relaunch keeps the launch threshold (0-step state).
    extended = running.model_copy(update={"server": running.server.model_copy(update={"page_size": 16})})
    plan = rules.classify_change(running, extended, launched)
    assert plan.mode == "restart"
    relaunch = live_state.launch_profile(extended, launched)
    assert relaunch.speculation.threshold == 32 and relaunch.server.page_size == 16
    assert 0 in support.prebuilt_steps(relaunch)
    assert live_state.live_args_to_restore(relaunch, extended) == {
        live_control.LIVE_THRESHOLD_KEY: live_control.NO_THRESHOLD
    }


def test_a_profile_load_is_planned_against_the_launch(launched: Profile) -> None:
    running = _apply(plan_request(_req("threshold", 0), launched, _no_named, launched))
    other = load_profile(PROFILES / "local-sim.toml")
    draft = plan_request(_req("apply_profile", "local-sim"), running, lambda name: other, launched)
    assert draft.mode == "restart"
    assert draft.launch == other  # a profile file is launched as it is written


def test_launch_profile_keeps_what_can_be_launched(launched: Profile) -> None:
    assert live_state.launch_profile(launched, launched) is launched
    at_48 = _spec(launched, threshold=48)
    assert live_state.launch_profile(at_48, launched) is at_48
    for live in (None, 1):
        assert (
            live_state.launch_profile(_spec(launched, threshold=live), launched).speculation.threshold == 32
        )
    # Without a threshold at the launch there is no 0-step state to keep.
    no_threshold = _spec(launched, threshold=None)
    assert live_state.launch_profile(no_threshold, no_threshold) is no_threshold
    # Adaptive mode off: nothing live to keep.
    static = _spec(launched, adaptive=False, threshold=None, live_steps=[])
    assert live_state.launch_profile(static, launched) is static


def test_live_args_to_restore(launched: Profile) -> None:
    assert live_state.live_args_to_restore(launched, launched) == {}
    running = _spec(launched, threshold=1, num_steps=2)
    assert live_state.live_args_to_restore(launched, running) == {
        live_control.LIVE_THRESHOLD_KEY: 1,
        live_control.LIVE_STEPS_KEY: 2,
    }
    static = _spec(launched, adaptive=False, threshold=None, live_steps=[])
    assert live_state.live_args_to_restore(static, static) == {}


def test_the_autopilot_is_judged_by_the_launch(launched: Profile) -> None:
    static = _spec(launched, adaptive=False, threshold=None, live_steps=[])
    draft = plan_request(_req("autopilot", True), launched, _no_named, static)
    assert draft.mode == "rejected" and "adaptive" in draft.reason
    assert plan_request(_req("autopilot", True), launched, _no_named, launched).mode == "live"


@pytest.mark.parametrize(
    ("live", "launched_with"),
    [(86, 86), (200, 200), (0, 32), (1, 32), (None, 32)],
    ids=["lower", "higher", "zero", "never", "unset"],
)
def test_a_relaunch_carries_the_live_threshold_where_the_same_states_are_built(
    launched: Profile, live: int | None, launched_with: int
) -> None:
    """Issue 50: a server started again serves the operator's threshold from its first request; a
    threshold the launch cannot carry (0, 1, unset) stays live, put back once it is ready."""
    running = _spec(launched, threshold=live, num_steps=2)
    again = live_state.relaunch_profile(launched, running)
    assert again.speculation.threshold == launched_with
    assert again.speculation.num_steps == launched.speculation.num_steps  # pinned steps stay live
    args = live_state.live_args_to_restore(again, running)
    assert live_control.LIVE_STEPS_KEY in args
    assert (live_control.LIVE_THRESHOLD_KEY in args) == (launched_with != live or live is None)
