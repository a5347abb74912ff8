"""Turning an operator's request into a plan: what changes, and whether it is live, a restart, or refused.

The request is applied to the running profile to make a candidate profile; the candidate must pass
the profile schema and SGLang 0.5.23's rules (``agent.sglang.rules``), and the SGLang surface decides
live versus restart. A refusal names the profile field and says why in the rules' own words, and
nothing changes. Some requests carry consequences the operator must see before confirming (topk > 1
turns SGLang's adaptive mode off, so the threshold and live steps go too); the plan lists them.

Two profiles are in play: the running one, with the live values applied since the start (what the
operator changes and sees), and the one the server was launched with (``built``), which alone says
what the server has: a live threshold of 0 does not take away the 0-step state a launch with a
threshold built (``agent.sglang.live_state``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from agent.profile import Profile, ProfileError, diff_profiles
from agent.profile.schema import Speculation
from agent.profile.store import profile_from_dict
from agent.profile.words import given_words, value_words
from agent.sglang import adaptive, live_control, live_state, rules, support
from agent.sglang.redact import redact_change, redact_reasons
from agent.wire import ActionRequest, Change, PlanMode


@dataclass(frozen=True)
class Draft:
    """A plan before it is a wire Plan: what the applier needs and the operator does not see."""

    mode: PlanMode
    reason: str
    changes: list[Change] = field(default_factory=list)
    new_profile: Profile | None = None
    live_args: dict[str, int] = field(default_factory=dict)
    rejected_field: str | None = None
    launch: Profile | None = None
    """For a restart: the profile to launch (``new_profile`` with a launchable threshold); its live
    values are put back once the server is ready."""


def _given(value: object) -> str:
    """What the operator sent, in words for a refusal (``agent.profile.words.given_words``); an empty
    text is an empty profile name here."""
    return "an empty name" if value == "" else given_words(value)


def _reject(field_name: str, why: str) -> Draft:
    return Draft(mode="rejected", reason=why, rejected_field=field_name)


def _int_value(req: ActionRequest, field_name: str) -> int | Draft:
    if isinstance(req.value, bool) or not isinstance(req.value, int):
        return _reject(field_name, f"{field_name}: must be a whole number (got {_given(req.value)})")
    return req.value


def _with_speculation(running: Profile, **updates: Any) -> Profile | Draft:
    data = running.model_dump(mode="json", exclude_none=True)
    spec = dict(data.get("speculation", {}))
    for key, value in updates.items():
        if value is None:
            spec.pop(key, None)
        else:
            spec[key] = value
    data["speculation"] = spec
    try:
        return profile_from_dict(data, "<request>")
    except ProfileError as exc:
        first = exc.issues[0]
        return _reject(first.key, "; ".join(f"{i.key}: {i.rule}" for i in exc.issues))


def _without_zero_step_skip(spec: Speculation) -> dict[str, Any]:
    """The update that drops the zero-step draft-extend skip with adaptive mode (it only acts at 0 steps)."""
    return {"skip_zero_step_draft_extend": None} if spec.skip_zero_step_draft_extend else {}


def _and_skip(spec: Speculation) -> str:
    """Words for the note when the skip goes with adaptive mode."""
    return " and the 0-step draft-extend skip" if spec.skip_zero_step_draft_extend else ""


def _candidate(
    req: ActionRequest, running: Profile, built: Profile, load_named: Callable[[str], Profile]
) -> tuple[Profile, list[str]] | Draft:
    """The profile the request asks for, plus consequences the operator must read."""
    notes: list[str] = []
    spec = running.speculation
    if req.kind == "autopilot":
        return _autopilot(req, running, built)
    # A threshold or steps set by hand while the autopilot is on: the operator takes the wheel, the
    # autopilot goes off and the value asked for stays. Both in one candidate: a threshold of 0 (none)
    # with the autopilot still on is no valid profile (it needs a threshold), so one after the other
    # refused "threshold 0" while the autopilot ran.
    takes_wheel = req.kind in ("threshold", "steps") and spec.autopilot.enabled
    off = {"autopilot": {**spec.autopilot.model_dump(mode="json"), "enabled": False}} if takes_wheel else {}
    if req.kind == "threshold":
        value = _int_value(req, "speculation.threshold")
        if isinstance(value, Draft):
            return value
        if value < 0:
            return _reject(
                "speculation.threshold", f"speculation.threshold: must be 0 (none) or more (got {value})"
            )
        new = _with_speculation(
            running, threshold=None if value == live_control.NO_THRESHOLD else value, **off
        )
    elif req.kind == "steps":
        value = _int_value(req, "speculation.num_steps")
        if isinstance(value, Draft):
            return value
        new = _with_speculation(running, num_steps=value, **off)
    elif req.kind == "topk":
        value = _int_value(req, "speculation.eagle_topk")
        if isinstance(value, Draft):
            return value
        updates: dict[str, Any] = {"eagle_topk": value}
        if value > 1 and spec.adaptive:
            updates.update(adaptive=False, threshold=None, live_steps=None, **_without_zero_step_skip(spec))
            notes.append(
                f"topk {value} turns SGLang's adaptive mode off (it supports only topk = 1), so the speculation "
                f"threshold and the live step choice{_and_skip(spec)} go away: the server speculates at every "
                "batch size"
            )
        new = _with_speculation(running, **updates)
    elif req.kind == "adaptive":
        if not isinstance(req.value, bool):
            return _reject(
                "speculation.adaptive",
                f"speculation.adaptive: must be true or false (got {_given(req.value)})",
            )
        updates = {"adaptive": req.value}
        if not req.value and (
            spec.threshold is not None or spec.live_steps or spec.skip_zero_step_draft_extend
        ):
            updates.update(threshold=None, live_steps=None, **_without_zero_step_skip(spec))
            gone = "; the 0-step draft-extend skip goes too" if spec.skip_zero_step_draft_extend else ""
            notes.append(
                f"without adaptive mode there is no speculation threshold and no live step choice{gone}"
            )
        new = _with_speculation(running, **updates)
    else:  # apply_profile
        if not isinstance(req.value, str) or not req.value:
            return _reject("value", f"value: the name of a saved profile is needed (got {_given(req.value)})")
        try:
            new = load_named(req.value)
        except ProfileError as exc:
            first = exc.issues[0]
            return _reject(first.key or first.file, "; ".join(str(i) for i in exc.issues))
    if isinstance(new, Draft):
        return new
    if takes_wheel:
        notes.append(f"the autopilot is on: a {req.kind} set by hand turns it off, and this value stays")
    return new, notes


def _autopilot(req: ActionRequest, running: Profile, built: Profile) -> tuple[Profile, list[str]] | Draft:
    """Turning the speculation autopilot on or off (``agent.control.autopilot``)."""
    key = "speculation.autopilot.enabled"
    if not isinstance(req.value, bool):
        return _reject(key, f"{key}: must be true or false (got {_given(req.value)})")
    spec = running.speculation
    if req.value:
        unavailable = support.threshold_unavailable_reason(built)
        if unavailable is not None:
            return _reject(key, f"{key}: the autopilot moves the live threshold, and {unavailable}")
    new = _with_speculation(
        running, autopilot={**spec.autopilot.model_dump(mode="json"), "enabled": req.value}
    )
    if isinstance(new, Draft):
        return new
    auto = spec.autopilot
    back = f"threshold {spec.threshold}" if spec.threshold is not None else "no threshold"
    if req.value:
        top = "no threshold" if auto.threshold_max is None else str(auto.threshold_max)
        steps = auto.steps or adaptive.live_step_choices(spec)
        note = (
            f"the autopilot will move the live threshold between {auto.threshold_min} and {top} and pin steps "
            f"among {value_words(steps)}, at most {auto.max_moves_per_minute} changes a minute, probing at most "
            f"{auto.probe_share * 100:g} % of the time in {auto.probe_seconds:g} s probes; turning it off returns "
            f"to {back} in one step"
        )
    else:
        note = f"the engine returns to the operator's setting ({back}) in one step"
    return new, [note]


PINNED_KEY = "speculation.pinned_steps"
"""The change a pin or its release shows: the engine's pinned step count (None: SGLang's policy)."""


def _pin_draft(req: ActionRequest, running: Profile, built: Profile, pinned: int | None) -> Draft | None:
    """A steps request read against the engine's live pin (``pinned``, its read-back; -1 or None: the
    policy chooses): releasing a pin, or pinning the count the profile already names. A profile cannot
    say whether its step count is pinned, so the engine's read-back decides; None: not such a case."""
    value = req.value
    if req.kind != "steps" or not isinstance(value, int) or isinstance(value, bool):
        return None
    is_pinned = pinned is not None and pinned != live_control.RELEASE_PINNED_STEPS
    releasing = value == live_control.RELEASE_PINNED_STEPS
    if not releasing and (is_pinned or value != running.speculation.num_steps):
        return None  # a new pin that the profile's step count shows (or a move between two pins)
    why = rules.validate_live_value(built, live_control.LIVE_STEPS_KEY, value)
    if why is not None:
        return _reject("speculation.num_steps", why)
    if releasing and not is_pinned and running.speculation.num_steps == built.speculation.num_steps:
        return Draft("noop", "no step count is pinned: SGLang's adaptive policy already chooses")
    updates: dict[str, Any] = {"num_steps": built.speculation.num_steps if releasing else value}
    auto = running.speculation.autopilot
    if auto.enabled:  # the operator takes the wheel, as for any steps set by hand
        updates["autopilot"] = {**auto.model_dump(mode="json"), "enabled": False}
    new = _with_speculation(running, **updates)
    if isinstance(new, Draft):
        return new
    old = pinned if is_pinned else (running.speculation.num_steps if releasing else None)
    words = (
        f"{PINNED_KEY} {value_words(old)} → unset: applied live, SGLang's adaptive policy chooses the step "
        f"count again (among {value_words(adaptive.live_step_choices(built.speculation))})"
        if releasing
        else f"{PINNED_KEY} unset → {value}: applied live, {value} steps were built at start-up"
    )
    changes = [Change(key=PINNED_KEY, old=old, new=None if releasing else value)]
    if auto.enabled:
        changes.append(Change(key="speculation.autopilot.enabled", old=True, new=False))
        words += "; the autopilot is on: steps set by hand turn it off"
    return Draft("live", words, changes, new, {live_control.LIVE_STEPS_KEY: value})


def plan_request(
    req: ActionRequest,
    running: Profile,
    load_named: Callable[[str], Profile],
    built: Profile | None = None,
    pinned: int | None = None,
) -> Draft:
    """Plan ``req`` against the server running ``running`` (live values included), launched with
    ``built`` (``running`` when none is given); ``pinned``: the engine's live pinned steps (-1: none)."""
    built = built or running
    pin = _pin_draft(req, running, built, pinned)
    if pin is not None:
        return pin
    made = _candidate(req, running, built, load_named)
    if isinstance(made, Draft):
        return made
    new, notes = made
    # A profile file is launched as it is; a change made from the running profile keeps the states
    # its server was built with (a live threshold of 0 or 1 is checked as the launch threshold).
    launch = new if req.kind == "apply_profile" else live_state.launch_profile(new, built)
    errors = rules.errors_of(rules.check_profile(launch, "<request>"))
    if errors:
        return _reject(errors[0].key, "; ".join(f"{i.key}: {i.rule}" for i in errors))
    changes = [  # what the operator sees and the audit keeps: env values and secrets hidden
        Change(key=c.key, old=redact_change(c.key, c.old), new=redact_change(c.key, c.new))
        for c in diff_profiles(running, new)
    ]
    change_plan = rules.classify_change(running, new, built)
    reasons = redact_reasons(notes + change_plan.reasons, running.server.env, new.server.env)
    if change_plan.mode == "live":
        live_args: dict[str, int] = {}
        for c in changes:
            if c.key == "speculation.threshold":
                value = live_control.NO_THRESHOLD if c.new is None else int(c.new)
                why = rules.validate_live_value(built, live_control.LIVE_THRESHOLD_KEY, value)
                if why is not None:
                    return _reject("speculation.threshold", why)
                live_args[live_control.LIVE_THRESHOLD_KEY] = value
            elif c.key == "speculation.num_steps":
                why = rules.validate_live_value(built, live_control.LIVE_STEPS_KEY, c.new)
                if why is not None:
                    return _reject("speculation.num_steps", why)
                live_args[live_control.LIVE_STEPS_KEY] = int(c.new)
        return Draft("live", "; ".join(reasons), changes, new, live_args)
    if change_plan.mode == "noop" and not changes:
        return Draft("noop", "; ".join(reasons) or "nothing changes", [], new)
    if change_plan.mode == "noop":
        # Only keys the agent applies itself (telemetry, identity, bench): no server call needed.
        return Draft("live", "; ".join(reasons), changes, new, {})
    return Draft("restart", "; ".join(reasons), changes, new, launch=launch)
