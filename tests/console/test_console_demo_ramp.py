"""The demo's load shape: the smooth 1 → peak → 1 the README promises, crossing the threshold once each way."""

from __future__ import annotations

import itertools
from pathlib import Path

from agent.profile import load_profile
from console.demo.traffic import target_concurrency

PROFILE = Path(__file__).resolve().parents[2] / "profiles" / "local-sim.toml"
PERIOD, PEAK = 120.0, 250


def _levels(step_s: float = 0.25) -> list[int]:
    return [target_concurrency(i * step_s, PERIOD, PEAK) for i in range(int(PERIOD / step_s))]


def test_the_ramp_climbs_holds_and_descends_without_turning_back() -> None:
    levels = _levels()
    top = levels.index(PEAK)
    last_top = len(levels) - 1 - levels[::-1].index(PEAK)
    assert levels[0] == 1 and levels[-1] == 1
    assert all(a <= b for a, b in itertools.pairwise(levels[: top + 1]))  # up, never back down
    assert all(a >= b for a, b in itertools.pairwise(levels[last_top:]))  # down, never back up
    assert set(levels[top : last_top + 1]) == {PEAK}
    # smooth: a quarter second never moves the target by more than 6 % (or one request)
    assert all(abs(b - a) <= max(1, 0.06 * a) for a, b in itertools.pairwise(levels))
    assert target_concurrency(PERIOD, PERIOD, PEAK) == 1  # and the next period starts over


def test_the_ramp_crosses_the_demo_threshold_once_each_way_and_shows_both_ends() -> None:
    threshold = load_profile(PROFILE).speculation.threshold
    assert threshold is not None
    above = [c >= threshold for c in _levels()]
    crossings = [i for i, (a, b) in enumerate(itertools.pairwise(above)) if a != b]
    assert len(crossings) == 2, crossings  # once up, once down: the badge does not flap on the ramp
    assert 0.2 <= sum(above) / len(above) <= 0.4  # speculation off under load for a good while
    low = sum(c <= 4 for c in _levels()) / len(above)
    assert low >= 0.2  # and a good while at the low concurrency where it pays
