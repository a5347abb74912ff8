"""Turning an operator's request into a plan: what changes, and whether it is live, a restart, or refused.

Each kind of action has one rule in ``RULES`` (its entry in ``agent.wire.actions.CATALOGUE`` says
what it takes and how it reads). A rule turns the request into a candidate profile, or into a
finished plan (a pin, a refusal). The candidate must pass the profile schema and SGLang 0.5.23's
rules (``agent.sglang.rules``), and the SGLang surface decides
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
from dataclasses import dataclass, field, replace
from typing import Any

from agent.control.undo import LastChange, reverse
from agent.profile import Profile, ProfileError, diff_profiles
from agent.profile.schema import Speculation
from agent.profile.store import profile_from_dict
from agent.profile.words import given_words, value_words
from agent.sglang import adaptive, live_control, live_state, rules, support
from agent.sglang.redact import redact_change, redact_reasons
from agent.wire import ActionRequest, Change, PlanMode
from agent.wire.actions import CATALOGUE, PINNED_KEY, ActionKind, built_steps_words


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
    undoes: dict[str, Any] | None = None
    """An undo's: the change it reverses (its action id, kind and the value it puts back), for the audit."""


def _given(value: object) -> str:
    """What the operator sent, in words for a refusal (``agent.profile.words.given_words``); an empty
    text is an empty profile name here."""
    return "an empty name" if value == "" else given_words(value)


def _reject(field_name: str, why: str) -> Draft:
    return Draft(mode="rejected", reason=why, rejected_field=field_name)


@dataclass(frozen=True)
class Ask:
    """What a rule reads: the request, the server's running and launch profiles, the engine's pin."""

    req: ActionRequest
    running: Profile
    built: Profile
    pinned: int | None
    """The engine's live pinned step count from its read-back (-1 or None: its policy chooses)."""
    load_named: Callable[[str], Profile]
    last_change: Callable[[], LastChange | None] = lambda: None
    """The newest applied operator change in the audit (what an undo reverses)."""

    @property
    def spec(self) -> Speculation:
        return self.running.speculation


Candidate = tuple[Profile, list[str]]
"""The profile a request asks for, and the consequences the operator must read before confirming."""
Rule = Callable[[Ask], Candidate | Draft]


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


def _count(ask: Ask, *, bounded: bool = True) -> int | Draft:
    """The request's whole number within what its kind takes at all (the catalogue's bounds, unless
    the rule says more precisely what this server allows)."""
    spec = CATALOGUE[ask.req.kind]
    value = ask.req.value
    wrong = spec.wrong_type(value)
    if wrong is not None or not isinstance(value, int):
        return _reject(spec.key, wrong or f"{spec.name} takes {spec.allowed}")
    outside = spec.out_of_bounds(value) if bounded else None
    return _reject(spec.key, outside) if outside is not None else value


def _switch(ask: Ask) -> bool | Draft:
    spec = CATALOGUE[ask.req.kind]
    value = ask.req.value
    if not isinstance(value, bool):
        return _reject(spec.key, spec.wrong_type(value) or f"{spec.name} takes {spec.allowed}")
    return value


def _hand_off(ask: Ask) -> dict[str, Any]:
    """A threshold or steps set by hand while the autopilot is on: the operator takes the wheel, the
    autopilot goes off and the value asked for stays. Both in one candidate: a threshold of 0 (none)
    with the autopilot still on is no valid profile (it needs a threshold), so one after the other
    refused "threshold 0" while the autopilot ran."""
    auto = ask.spec.autopilot
    return {"autopilot": {**auto.model_dump(mode="json"), "enabled": False}} if auto.enabled else {}


def _handed_off(ask: Ask, made: Profile | Draft) -> Candidate | Draft:
    if isinstance(made, Draft):
        return made
    notes = []
    if ask.spec.autopilot.enabled:
        notes.append(f"the autopilot is on: a {ask.req.kind} set by hand turns it off, and this value stays")
    return made, notes


# -- one rule per kind --------------------------------------------------------------------------


def _threshold(ask: Ask) -> Candidate | Draft:
    value = _count(ask)
    if isinstance(value, Draft):
        return value
    threshold = None if value == live_control.NO_THRESHOLD else value
    return _handed_off(ask, _with_speculation(ask.running, threshold=threshold, **_hand_off(ask)))


def _steps(ask: Ask) -> Candidate | Draft:
    """A live server pins a step count it built (or releases the pin): always shown as the pin
    (``PINNED_KEY``), whatever the profile's own step count says. A server without live step
    control changes its launch step count (a restart)."""
    steps = CATALOGUE["steps"]
    unavailable = support.threshold_unavailable_reason(ask.built)
    value = _count(ask, bounded=unavailable is not None)  # a live server: its built steps say more
    if isinstance(value, Draft):
        return value
    if unavailable is not None:
        if value == live_control.RELEASE_PINNED_STEPS:
            return _reject(steps.key, f"steps: this server has no step pin to release ({unavailable})")
        return _handed_off(ask, _with_speculation(ask.running, num_steps=value, **_hand_off(ask)))
    return _pin(ask, value)


def _pin(ask: Ask, value: int) -> Draft:
    steps = CATALOGUE["steps"]
    running, built = ask.running, ask.built
    choices = [s for s in support.prebuilt_steps(built) if s > 0]
    releasing = value == live_control.RELEASE_PINNED_STEPS
    if not releasing and value not in choices:
        return _reject(
            steps.key,
            f"steps: {value} is not a step count this server built; built steps: {built_steps_words(choices)}; "
            "pin one of them or release the pin (a restart with speculation.live_steps builds others)",
        )
    why = rules.validate_live_value(built, live_control.LIVE_STEPS_KEY, value)
    if why is not None:
        return _reject(steps.key, why)
    is_pinned = ask.pinned is not None and ask.pinned != live_control.RELEASE_PINNED_STEPS
    if releasing and not is_pinned and running.speculation.num_steps == built.speculation.num_steps:
        return Draft("noop", "steps are not pinned: SGLang's adaptive policy already chooses")
    if is_pinned and value == ask.pinned:
        return Draft("noop", f"steps are pinned at {value} already")
    updates: dict[str, Any] = {"num_steps": built.speculation.num_steps if releasing else value}
    updates.update(_hand_off(ask))
    new = _with_speculation(running, **updates)
    if isinstance(new, Draft):
        return new
    old = ask.pinned if is_pinned else (running.speculation.num_steps if releasing else None)
    new_value = None if releasing else value
    was, now = steps.words(old, long=True), steps.words(new_value, long=True)
    words = (
        f"steps {was} → {now}: applied live, SGLang's adaptive policy chooses the step count again "
        f"(among {value_words(adaptive.live_step_choices(built.speculation))})"
        if releasing
        else f"steps {was} → {value}: applied live, {value} steps were built at start-up "
        f"(built steps: {built_steps_words(choices)})"
    )
    changes = [Change(key=PINNED_KEY, old=old, new=new_value)]
    if ask.spec.autopilot.enabled:
        changes.append(Change(key="speculation.autopilot.enabled", old=True, new=False))
        words += "; the autopilot is on: steps set by hand turn it off"
    return Draft("live", words, changes, new, {live_control.LIVE_STEPS_KEY: value})


def _topk(ask: Ask) -> Candidate | Draft:
    value = _count(ask)
    if isinstance(value, Draft):
        return value
    spec = ask.spec
    updates: dict[str, Any] = {"eagle_topk": value}
    notes: list[str] = []
    if value > 1 and spec.adaptive:
        updates.update(adaptive=False, threshold=None, live_steps=None, **_without_zero_step_skip(spec))
        notes.append(
            f"topk {value} turns SGLang's adaptive mode off (it supports only topk = 1), so the speculation "
            f"threshold and the live step choice{_and_skip(spec)} go away: the server speculates at every "
            "batch size"
        )
    new = _with_speculation(ask.running, **updates)
    return new if isinstance(new, Draft) else (new, notes)


def _adaptive(ask: Ask) -> Candidate | Draft:
    value = _switch(ask)
    if isinstance(value, Draft):
        return value
    spec = ask.spec
    updates: dict[str, Any] = {"adaptive": value}
    notes: list[str] = []
    if not value and (spec.threshold is not None or spec.live_steps or spec.skip_zero_step_draft_extend):
        updates.update(threshold=None, live_steps=None, **_without_zero_step_skip(spec))
        gone = "; the 0-step draft-extend skip goes too" if spec.skip_zero_step_draft_extend else ""
        notes.append(f"without adaptive mode there is no speculation threshold and no live step choice{gone}")
    new = _with_speculation(ask.running, **updates)
    return new if isinstance(new, Draft) else (new, notes)


def _apply_profile(ask: Ask) -> Candidate | Draft:
    value = ask.req.value
    if not isinstance(value, str) or not value:
        return _reject("value", f"value: the name of a saved profile is needed (got {_given(value)})")
    try:
        return ask.load_named(value), []
    except ProfileError as exc:
        first = exc.issues[0]
        return _reject(first.key or first.file, "; ".join(str(i) for i in exc.issues))


def _autopilot(ask: Ask) -> Candidate | Draft:
    """Turning the speculation autopilot on or off (``agent.control.autopilot``)."""
    key = CATALOGUE["autopilot"].key
    value = _switch(ask)
    if isinstance(value, Draft):
        return value
    spec = ask.spec
    if value:
        unavailable = support.threshold_unavailable_reason(ask.built)
        if unavailable is not None:
            return _reject(key, f"{key}: the autopilot moves the live threshold, and {unavailable}")
    new = _with_speculation(
        ask.running, autopilot={**spec.autopilot.model_dump(mode="json"), "enabled": value}
    )
    if isinstance(new, Draft):
        return new
    auto = spec.autopilot
    back = f"threshold {spec.threshold}" if spec.threshold is not None else "no threshold"
    if value:
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


def _undo(ask: Ask) -> Candidate | Draft:
    """The last applied change, reversed: its kind's request for the value the audit says it found,
    planned by that kind's rule (so its bounds and consequences hold), named as an undo."""
    wrong = CATALOGUE["undo"].wrong_type(ask.req.value)
    if wrong is not None:
        return _reject("value", wrong)
    last = ask.last_change()
    if last is None:
        return _reject("undo", "undo: the audit holds no applied change to undo")
    back = reverse(last)
    if isinstance(back, str):
        return _reject("undo", back)
    kind, value = back
    request = ask.req.model_copy(update={"kind": kind, "value": value})
    draft = plan_request(request, ask.running, ask.load_named, ask.built, ask.pinned)
    who = f" by {last.operator}" if last.operator else ""
    head = f"undo of {last.action_id} ({last.words()}{who}): {CATALOGUE[kind].name} back to " + CATALOGUE[
        kind
    ].words(value, long=True)
    undoes = {"action_id": last.action_id, "kind": kind, "value": value}
    return replace(draft, reason=f"{head}; {draft.reason}" if draft.reason else head, undoes=undoes)


RULES: dict[ActionKind, Rule] = {
    "threshold": _threshold,
    "steps": _steps,
    "topk": _topk,
    "adaptive": _adaptive,
    "apply_profile": _apply_profile,
    "autopilot": _autopilot,
    "undo": _undo,
}
"""One rule per kind of ``agent.wire.actions.CATALOGUE``: a test finds every kind here."""


def plan_request(
    req: ActionRequest,
    running: Profile,
    load_named: Callable[[str], Profile],
    built: Profile | None = None,
    pinned: int | None = None,
    last_change: Callable[[], LastChange | None] = lambda: None,
) -> Draft:
    """Plan ``req`` against the server running ``running`` (live values included), launched with
    ``built`` (``running`` when none is given); ``pinned``: the engine's live pinned steps (-1: none);
    ``last_change``: the audit's newest applied change (an undo reverses it)."""
    built = built or running
    rule = RULES.get(req.kind)
    if rule is None:
        return _reject("kind", f"kind: {req.kind} has no rule in this agent's planner")
    made = rule(Ask(req, running, built, pinned, load_named, last_change))
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
                threshold = new.speculation.threshold
                value = live_control.NO_THRESHOLD if threshold is None else threshold
                why = rules.validate_live_value(built, live_control.LIVE_THRESHOLD_KEY, value)
                if why is not None:
                    return _reject("speculation.threshold", why)
                live_args[live_control.LIVE_THRESHOLD_KEY] = value
            elif c.key == "speculation.num_steps":
                steps = new.speculation.num_steps
                why = rules.validate_live_value(built, live_control.LIVE_STEPS_KEY, steps)
                if why is not None or steps is None:
                    return _reject(
                        "speculation.num_steps", why or "speculation.num_steps: a step count is needed"
                    )
                live_args[live_control.LIVE_STEPS_KEY] = steps
        return Draft("live", "; ".join(reasons), changes, new, live_args)
    if change_plan.mode == "noop" and not changes:
        return Draft("noop", "; ".join(reasons) or "nothing changes", [], new)
    if change_plan.mode == "noop":
        # Only keys the agent applies itself (telemetry, identity, bench): no server call needed.
        return Draft("live", "; ".join(reasons), changes, new, {})
    return Draft("restart", "; ".join(reasons), changes, new, launch=launch)
