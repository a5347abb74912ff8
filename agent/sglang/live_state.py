"""What a running server was built with, apart from the live values applied to it since.

SGLang 0.5.23 builds its runtime states (one per candidate step count, the 0-step state included)
once, at start-up, from the launch profile's adaptive config. Through k25console's patch the threshold
and the pinned steps then change live, and the agent records the running profile with those live
values in it: "threshold unset" for a live 0 (speculate at every batch size), ``threshold = 1`` for
"never speculate". Neither says anything about what the server has: a server launched with
``threshold = 32`` keeps its 0-step state whatever the live threshold is. Decisions about "live or
restart" therefore read the launch profile (``built``), and a server started again (after a crash,
or for a planned restart) is launched so that it has the states again, then given the live values.
"""

from __future__ import annotations

from agent.profile.schema import Profile
from agent.sglang import adaptive, live_control
from agent.sglang.support import adaptive_active


def _launchable_threshold(threshold: int | None) -> bool:
    """Whether a threshold can be written into the adaptive config at start-up (0-step slot ≥ 2)."""
    return threshold is not None and threshold > adaptive.FIRST_SLOT


def launch_profile(wanted: Profile, built: Profile) -> Profile:
    """The profile to launch so that the new server has the states ``built``'s server had.

    ``wanted`` is the running profile with the operator's live values (and perhaps a restart-only
    change); ``built`` is what the running server was launched with. A live threshold of 0 (unset in
    the profile) or 1 is not launchable as such: without a threshold SGLang builds no 0-step state,
    and at 1 it builds no speculating states at all. Where ``built`` had a threshold (so its server
    had the 0-step state) and ``wanted`` still runs adaptive mode, the launch keeps ``built``'s
    threshold; ``live_args_to_restore`` then says what to set once the server is ready.
    """
    spec = wanted.speculation
    if _launchable_threshold(spec.threshold) or not adaptive_active(wanted):
        return wanted
    kept = built.speculation.threshold
    if not _launchable_threshold(kept) or not adaptive_active(built):
        return wanted
    return wanted.model_copy(update={"speculation": spec.model_copy(update={"threshold": kept})})


def relaunch_profile(launched: Profile, running: Profile) -> Profile:
    """The profile to start a server again with (after a crash, or to finish a restart): ``launched``
    with ``running``'s live threshold where the launch can carry it, so that the new server serves
    the operator's value from its first request instead of the launch's until it is put back.

    Only where both thresholds are launchable (the server builds the same states either way); the
    pinned steps stay live values, put back once the server is ready (``live_args_to_restore``).
    """
    threshold = running.speculation.threshold
    if (
        threshold == launched.speculation.threshold
        or not _launchable_threshold(threshold)
        or not _launchable_threshold(launched.speculation.threshold)
        or not adaptive_active(launched)
        or not adaptive_active(running)
    ):
        return launched
    spec = launched.speculation.model_copy(update={"threshold": threshold})
    return launched.model_copy(update={"speculation": spec})


def live_threshold(profile: Profile) -> int:
    """The live-key value of a profile's threshold (unset is ``NO_THRESHOLD``)."""
    threshold = profile.speculation.threshold
    return live_control.NO_THRESHOLD if threshold is None else threshold


def live_args_to_restore(launched: Profile, running: Profile) -> dict[str, int]:
    """The live keys to set on a server launched with ``launched`` so that it runs ``running``'s values.

    Empty when the launch already carries them, or when the server has no live control (not
    adaptive): then there is nothing to put back.
    """
    if not adaptive_active(launched) or not adaptive_active(running):
        return {}
    args: dict[str, int] = {}
    if live_threshold(running) != live_threshold(launched):
        args[live_control.LIVE_THRESHOLD_KEY] = live_threshold(running)
    steps = running.speculation.num_steps
    if steps is not None and steps != launched.speculation.num_steps:
        args[live_control.LIVE_STEPS_KEY] = steps
    return args
