"""The demo's load shape: it must cross the shipped threshold early and come back down to 1."""

from __future__ import annotations

from pathlib import Path

from agent.profile import load_profile
from console.demo.traffic import target_concurrency

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml"


def test_ramp_crosses_the_demo_threshold_within_fifteen_seconds_and_returns_to_one() -> None:
    threshold = load_profile(PROFILE).speculation.threshold
    assert threshold is not None
    period, peak = 120.0, 250
    levels = [target_concurrency(t / 2, period, peak) for t in range(int(period * 2))]
    first_above = next(i / 2 for i, c in enumerate(levels) if c >= threshold)
    assert first_above <= 15.0
    assert max(levels) >= peak * 0.95
    assert levels[0] == 1 and levels[-1] <= 2
    # the descent is monotone: concurrency never jumps back up within one period
    top = levels.index(max(levels))
    assert all(a >= b for a, b in zip(levels[top:], levels[top + 1 :], strict=False))
