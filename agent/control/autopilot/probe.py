"""Probing: which side to measure at the batch running now, and the bounds on how much (pure).

A probe is a short change of the live setting so that the side the autopilot lacks data for runs at
the batch that runs now: 0 steps (threshold at its lowest, at most the batch) or k steps (no threshold,
k pinned). It is worth it only where that side could be the better one; the side never measured at
these contexts comes first, then one measured elsewhere, then one only borrowed from a neighbouring
batch, then one measured too uncertainly or too long ago. The budget bounds probing to a share of any
``PROBE_WINDOW_S`` and every change to ``max_moves_per_minute``.
"""

from __future__ import annotations

from collections import deque

from agent.control.autopilot.estimator import Estimator, batch_bin
from agent.control.autopilot.policy import Setting
from agent.control.autopilot.settings import MOVE_WINDOW_S, PROBE_WINDOW_S, PilotSettings
from agent.sglang.live_control import NO_THRESHOLD

STALE_S = 600.0
"""A measurement older than this is worth refreshing when it could decide."""


class Budget:
    """The changes of the last minute and the probes of the last ``PROBE_WINDOW_S``."""

    def __init__(self) -> None:
        self._changes: deque[float] = deque()
        self._probes: deque[tuple[float, float]] = deque()

    def changed(self, now: float) -> None:
        self._changes.append(now)

    def probed(self, start: float, end: float) -> None:
        self._probes.append((start, end))

    def moves(self, now: float) -> int:
        while self._changes and self._changes[0] <= now - MOVE_WINDOW_S:
            self._changes.popleft()
        return len(self._changes)

    def share(self, now: float) -> float:
        start = now - PROBE_WINDOW_S
        while self._probes and self._probes[0][1] < start:
            self._probes.popleft()
        spent = sum(min(end, now) - max(begin, start) for begin, end in self._probes if end > start)
        return max(0.0, spent) / PROBE_WINDOW_S

    def allows(self, now: float, seconds: float, share: float) -> bool:
        return self.share(now) + seconds / PROBE_WINDOW_S <= share + 1e-9


def feasible(settings: PilotSettings, arm: int, running: int) -> bool:
    """A probe must stay within the operator's threshold bounds."""
    if arm == 0:
        return running >= max(1, settings.threshold_min)
    return settings.threshold_max is None or running < settings.threshold_max


def probe_arm(
    est: Estimator, settings: PilotSettings, ctx: int, running: int, arm_now: int, now: float
) -> int | None:
    """The arm most worth a probe at this batch, or None."""
    b = batch_bin(running)
    here = est.predict(ctx, arm_now, b, now)
    if here is None:
        return None  # learn the side that runs first
    never = est.accept.never_pays(settings.steps, now)
    measured = est.arms(ctx)
    best_need, best_arm = (0.1, 0.0), None
    for arm in (0, *settings.steps):
        if arm == arm_now or (arm > 0 and never) or not feasible(settings, arm, running):
            continue
        other = est.predict(ctx, arm, b, now)
        if other is None:
            need = (1.0 if arm not in measured else 0.8, 0.0)
        else:
            optimistic = other.tok_s * (1 + 2 * other.se_rel)
            if optimistic < here.tok_s * (1 - 2 * here.se_rel):
                continue  # it cannot win here: nothing to learn
            if not other.own:
                need = (0.5, optimistic)
            else:
                need = (max(other.se_rel, 0.3 if other.age_s > STALE_S else 0.0), optimistic)
        if need > best_need:
            best_need, best_arm = need, arm
    return best_arm


def probe_setting(settings: PilotSettings, current: Setting, arm: int) -> Setting:
    """The live setting that runs ``arm`` at the batch running now."""
    if arm == 0:
        return Setting(max(1, settings.threshold_min), current.steps)
    return Setting(NO_THRESHOLD if settings.threshold_max is None else settings.threshold_max, arm)
