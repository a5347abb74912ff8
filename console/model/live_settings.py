"""The speculation settings running now, as the Controls fields show them.

Read from the newest snapshot (the engine's own read-back), so a field always starts from what the
server does, not from what was typed last. ``None`` means the server gives no value for it: the
field is left empty (an empty field cannot be applied by reflex).
"""

from __future__ import annotations

from dataclasses import dataclass

from agent.wire import Speculation


@dataclass(frozen=True)
class LiveSettings:
    threshold: int | None
    """0 is "no threshold" (SGLang's NO_THRESHOLD): speculate at every batch size."""
    steps: int | None
    """The pinned live step count; None while the adaptive policy chooses (or unknown)."""
    topk: int | None
    adaptive: bool | None

    def value(self, kind: str) -> int | bool | None:
        """The live value of an action kind that Controls shows; None for any other kind."""
        if kind == "threshold":
            return self.threshold
        if kind == "steps":
            return self.steps
        if kind == "topk":
            return self.topk
        return self.adaptive if kind == "adaptive" else None


def live_settings(spec: Speculation) -> LiveSettings:
    """What runs now. Adaptive mode is on exactly when the engine reports its adaptive live state
    (the read-back behind ``threshold_available``): SGLang has that state only in adaptive mode."""
    if not spec.configured:
        return LiveSettings(None, None, None, None)
    pinned = spec.pinned_steps if spec.pinned_steps is not None and spec.pinned_steps >= 0 else None
    return LiveSettings(
        threshold=spec.threshold if spec.threshold_available else None,
        steps=pinned,
        topk=spec.topk,
        # With the engine down or unanswering there is no read-back this tick: unknown, not "off".
        adaptive=spec.threshold_available if spec.on is not None else None,
    )
