"""What the autopilot may do, resolved once from the profile, and the constants it works with.

The operator sets the bounds (``[speculation.autopilot]`` in the profile, ``agent.profile.schema``);
the constants below are the autopilot's own time scales, named so that the README can state them.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.profile.schema import Profile
from agent.sglang.adaptive import live_step_choices
from agent.sglang.live_control import NO_THRESHOLD

PROBE_WINDOW_S = 600.0
"""``probe_share`` is a share of any window this long: 5 % is at most 30 s of probing in 10 minutes."""
MOVE_WINDOW_S = 60.0
"""``max_moves_per_minute`` counts every change the autopilot makes in any window this long."""
DECIDE_EVERY_S = 5.0
"""How often the policy is evaluated (every tick feeds the estimator)."""
SETTLE_S = 2.0
"""After a change of the live setting, ticks this young are not measured (the batch is in transition)."""
RESUME_AFTER_S = 30.0
"""Fresh telemetry this long after a revert (stale telemetry, engine restart) before it resumes."""
ACCEPT_SETTLE_S = 8.0
"""SGLang's accept-length gauge is taken only after the same step count has run this long: its window
is the last ``--decode-log-interval`` (40) decode batches, a few seconds."""
ACCEPT_SETTLE_COUNTERS_S = 90.0
"""Without that gauge, generated tokens over verify calls of finished requests stands in, and only
after the step count has run this long: a request finishing now was decoded over its whole life."""


@dataclass(frozen=True)
class PilotSettings:
    threshold_min: int
    threshold_max: int | None
    """None: it may remove the threshold (0, speculate at every batch size)."""
    steps: tuple[int, ...]
    """The step counts it may pin below the threshold (all built at start-up)."""
    max_moves_per_minute: int
    probe_s: float
    probe_share: float
    min_gain: float
    stale_after_s: float
    operator_threshold: int
    """The profile's threshold (0 = none): what turning it off, or a revert, returns to."""

    @property
    def dwell_s(self) -> float:
        """The least time between two moves its estimate asks for (probes are bounded apart)."""
        return max(15.0, MOVE_WINDOW_S / self.max_moves_per_minute)

    def clamp(self, threshold: int) -> int:
        """A threshold within the operator's bounds; 0 (none) only where no upper bound is set."""
        if threshold == NO_THRESHOLD:
            return NO_THRESHOLD if self.threshold_max is None else self.threshold_max
        top = self.threshold_max if self.threshold_max is not None else threshold
        return max(self.threshold_min, min(threshold, top))


def settings_of(profile: Profile) -> PilotSettings:
    spec = profile.speculation
    auto = spec.autopilot
    choices = live_step_choices(spec)
    return PilotSettings(
        threshold_min=auto.threshold_min,
        threshold_max=auto.threshold_max,
        steps=tuple(auto.steps or choices),
        max_moves_per_minute=auto.max_moves_per_minute,
        probe_s=auto.probe_seconds,
        probe_share=auto.probe_share,
        min_gain=auto.min_gain,
        stale_after_s=auto.stale_after_s,
        operator_threshold=spec.threshold if spec.threshold is not None else NO_THRESHOLD,
    )
