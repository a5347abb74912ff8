"""The autopilot as an operator meets it: ``[speculation.autopilot]`` in a profile (bad values named with
their key, nothing changes), and the "autopilot" action planned like any other: live, audited, with
what it will do in the plan; a threshold or steps set by hand turns it off."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from agent.control.planner import plan_request
from agent.profile import Profile, ProfileError, load_profile, parse_profile
from agent.sglang import live_control, rules
from agent.wire import ActionRequest

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
SIM = (PROFILES / "local-sim.toml").read_text()
SIM_THRESHOLD = load_profile(PROFILES / "local-sim.toml").speculation.threshold


def with_autopilot(lines: str, text: str = SIM) -> str:
    return text.replace("[telemetry]", f"[speculation.autopilot]\n{lines}\n\n[telemetry]")


def req(kind: str, value: object) -> ActionRequest:
    return ActionRequest(request_id="req-autopilot-1", kind=kind, value=value)  # type: ignore[arg-type]


def no_named(name: str) -> Profile:
    raise AssertionError(name)


@pytest.fixture
def sim() -> Profile:
    return load_profile(PROFILES / "local-sim.toml")


def test_the_shipped_profiles_have_it_off() -> None:
    for path in PROFILES.glob("*.toml"):
        assert load_profile(path).speculation.autopilot.enabled is False


def test_a_profile_can_turn_it_on_with_its_bounds() -> None:
    profile = parse_profile(
        with_autopilot(
            "enabled = true\nthreshold_min = 2\nthreshold_max = 200\nsteps = [1, 3]\nmax_moves_per_minute = 2"
        )
    )
    auto = profile.speculation.autopilot
    assert auto.enabled and (auto.threshold_min, auto.threshold_max, auto.steps) == (2, 200, [1, 3])
    assert auto.max_moves_per_minute == 2 and auto.probe_share == 0.05


@pytest.mark.parametrize(
    ("lines", "key", "words"),
    [
        ("enabled = 3", "speculation.autopilot.enabled", "boolean"),
        ("steps = [4]", "speculation.autopilot.steps", "not among the live step choices"),
        ("steps = [2, 2]", "speculation.autopilot.steps", "must not repeat"),
        (
            "threshold_min = 9\nthreshold_max = 4",
            "speculation.autopilot.threshold_max",
            "at least threshold_min",
        ),
        (
            "max_moves_per_minute = 0",
            "speculation.autopilot.max_moves_per_minute",
            "greater than or equal to 1",
        ),
        ("probe_share = 0.5", "speculation.autopilot.probe_share", "less than or equal to 0.25"),
        ("stale_after_s = 1.5", "speculation.autopilot.stale_after_s", "2 telemetry ticks"),
        ("enable = true", "speculation.autopilot.enable", "unknown key"),
    ],
)
def test_bad_values_are_refused_with_their_key(lines: str, key: str, words: str) -> None:
    with pytest.raises(ProfileError) as err:
        parse_profile(with_autopilot(lines), "p.toml")
    (issue,) = err.value.issues
    assert issue.key == key and words in issue.rule and issue.file == "p.toml"


def test_a_file_needs_a_threshold_to_launch_with() -> None:
    """A profile file without a threshold builds no 0-step state: SGLang's rules refuse it (what
    `agent profile validate` and `agent serve` run); the format alone allows it, for a running
    profile whose live threshold is 0."""
    text = with_autopilot("enabled = true").replace(f"threshold = {SIM_THRESHOLD}\n", "")
    errors = rules.errors_of(rules.check_profile(parse_profile(text, "p.toml"), "p.toml"))
    assert [e.key for e in errors] == ["speculation.autopilot.enabled"]
    assert "0-step state" in errors[0].rule


def test_it_turns_on_while_the_live_threshold_is_0(sim: Profile) -> None:
    """Issue 27: the live threshold at 0 (speculate at every size) left the autopilot refused, though
    the server launched with a threshold has its 0-step state."""
    at_zero = plan_request(req("threshold", 0), sim, no_named).new_profile
    assert at_zero is not None and at_zero.speculation.threshold is None
    draft = plan_request(req("autopilot", True), at_zero, no_named, sim)
    assert draft.mode == "live", draft.reason
    assert "returns to no threshold" in draft.reason
    assert draft.new_profile is not None and draft.new_profile.speculation.autopilot.enabled


def test_turning_it_on_is_a_live_plan_that_says_what_it_will_do(sim: Profile) -> None:
    draft = plan_request(req("autopilot", True), sim, no_named)
    assert draft.mode == "live" and draft.live_args == {}
    assert [(c.key, c.old, c.new) for c in draft.changes] == [("speculation.autopilot.enabled", False, True)]
    assert "between 1 and no threshold" in draft.reason and "1, 2, 3" in draft.reason
    assert f"returns to threshold {SIM_THRESHOLD} in one step" in draft.reason
    assert "[" not in draft.reason and "None" not in draft.reason
    assert draft.new_profile is not None and draft.new_profile.speculation.autopilot.enabled


def test_turning_it_off_is_planned_with_the_threshold_it_returns_to(sim: Profile) -> None:
    on = plan_request(req("autopilot", True), sim, no_named).new_profile
    assert on is not None
    draft = plan_request(req("autopilot", False), on, no_named)
    assert draft.mode == "live" and f"threshold {SIM_THRESHOLD}" in draft.reason
    assert draft.new_profile is not None and not draft.new_profile.speculation.autopilot.enabled


@pytest.mark.parametrize("value", [64, live_control.NO_THRESHOLD])
def test_a_threshold_by_hand_turns_it_off_and_keeps_the_value(sim: Profile, value: int) -> None:
    """0 (none) too: with the autopilot still on that profile is invalid (it needs a threshold), so the
    two changes must be made as one."""
    on = plan_request(req("autopilot", True), sim, no_named).new_profile
    assert on is not None
    draft = plan_request(req("threshold", value), on, no_named)
    assert draft.mode == "live" and draft.live_args == {live_control.LIVE_THRESHOLD_KEY: value}
    assert {c.key for c in draft.changes} == {"speculation.threshold", "speculation.autopilot.enabled"}
    assert "turns it off" in draft.reason
    assert draft.new_profile is not None and not draft.new_profile.speculation.autopilot.enabled


@pytest.mark.parametrize("value", [1, "on", None])
def test_anything_but_true_or_false_is_refused(value: object) -> None:
    with pytest.raises(ValidationError, match="autopilot takes true or false: on or off"):
        req("autopilot", value)


def test_a_server_without_a_live_threshold_refuses_it() -> None:
    static = load_profile(PROFILES / "kimi-k25-eagle3-tree.toml")
    draft = plan_request(req("autopilot", True), static, no_named)
    assert draft.mode == "rejected" and draft.rejected_field == "speculation.autopilot.enabled"
    assert "live threshold" in draft.reason
