"""The recommended threshold on synthetic on/off curves (pure arithmetic, no engine)."""

from __future__ import annotations

import math

import pytest

from agent.bench.recommend import LevelPair, recommend, zero_crossing

SWEEP = (1, 2, 4, 8, 16, 32, 64, 128, 250)


def curve(crossing: float, slope: float, rel_err: float = 0.005, levels=SWEEP) -> list[LevelPair]:
    """off/on = 2**(slope * (log2 C - log2 crossing)): the ratio crosses 1 exactly at ``crossing``."""
    pairs = []
    for c in levels:
        on = 100.0 * c / (1 + c / 40)
        off = on * 2 ** (slope * (math.log2(c) - math.log2(crossing)))
        pairs.append(LevelPair(c, on=on, off=off, on_rel_err=rel_err, off_rel_err=rel_err))
    return pairs


def test_crossing_between_sweep_points_is_interpolated() -> None:
    rec = recommend(curve(crossing=3.0, slope=0.3))
    assert rec.crossover == pytest.approx(3.0, rel=1e-6)
    assert rec.threshold == 3
    assert rec.measured_crossover == 4
    assert rec.confidence_label == "high"


def test_crossing_at_a_sweep_point_gives_that_point() -> None:
    rec = recommend(curve(crossing=24.0, slope=0.2))
    assert rec.crossover == pytest.approx(24.0, rel=1e-6)
    assert rec.threshold == 24
    assert rec.measured_crossover == 32


def test_off_never_ahead_means_speculate_always() -> None:
    pairs = [LevelPair(c, on=100.0 * c, off=90.0 * c, on_rel_err=0.01, off_rel_err=0.01) for c in SWEEP]
    rec = recommend(pairs)
    assert rec.threshold == 0
    assert rec.crossover is None
    assert rec.significant_from is None


def test_off_ahead_everywhere_means_never_speculate() -> None:
    pairs = [LevelPair(c, on=80.0 * c, off=100.0 * c, on_rel_err=0.01, off_rel_err=0.01) for c in SWEEP]
    rec = recommend(pairs)
    assert rec.threshold == 1
    assert rec.significant_from == 1


def test_small_advantage_within_noise_is_not_acted_on() -> None:
    # off is 3% ahead from c=16; with 1.5% noise per arm that is inside 2 sigma, with 0.2% it is not.
    def pairs(err: float) -> list[LevelPair]:
        return [
            LevelPair(c, on=100.0, off=103.0 if c >= 16 else 97.0, on_rel_err=err, off_rel_err=err)
            for c in SWEEP
        ]

    noisy = recommend(pairs(0.015))
    assert noisy.threshold == 0
    assert "within the noise" in noisy.reason
    quiet = recommend(pairs(0.002))
    assert quiet.significant_from == 16
    assert 8 < quiet.crossover < 16
    assert 8 < quiet.threshold <= 16


def test_a_lucky_point_below_the_crossover_is_ignored() -> None:
    pairs = curve(crossing=24.0, slope=0.3)
    blip = pairs[1]
    pairs[1] = LevelPair(blip.concurrency, on=blip.on, off=blip.on * 1.2, on_rel_err=0.005, off_rel_err=0.005)
    rec = recommend(pairs)
    assert rec.crossover == pytest.approx(24.0, rel=1e-6)
    assert rec.threshold == 24


def test_confidence_falls_with_noise_and_a_flat_crossing() -> None:
    sharp = recommend(curve(crossing=6.0, slope=0.4, rel_err=0.003))
    flat = recommend(curve(crossing=6.0, slope=0.05, rel_err=0.02))
    assert sharp.confidence > flat.confidence
    assert sharp.confidence_label == "high"
    assert flat.confidence_label in ("medium", "low")
    assert flat.range is not None
    low, high = flat.range
    assert low < 6.0 and (high is None or high > 6.0)


def test_order_of_levels_does_not_matter() -> None:
    pairs = curve(crossing=10.0, slope=0.3)
    assert recommend(list(reversed(pairs))) == recommend(pairs)


def test_zero_crossing_uses_the_last_rise() -> None:
    assert zero_crossing([1, 2, 4, 8], [0.1, -0.1, -0.1, 0.1]) == pytest.approx(2**2.5)
    assert zero_crossing([1, 2, 4], [-0.1, -0.2, -0.1]) is None


def test_no_levels_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one level"):
        recommend([])


def ci(value: float, rel: float) -> tuple[float, float]:
    return value * (1 - rel), value * (1 + rel)


def measured(c: int, on: float, off: float, on_rel: float, off_rel: float) -> LevelPair:
    return LevelPair(c, on=on, off=off, on_ci=ci(on, on_rel), off_ci=ci(off, off_rel))


def test_high_only_when_the_intervals_at_the_chosen_levels_do_not_overlap() -> None:
    # on ahead at 1..8, off ahead from 32; the crossing lies between 16 and 32.
    clear = [measured(c, 100.0, 100.0 * (0.8 if c <= 16 else 1.2), 0.02, 0.02) for c in (1, 4, 16, 32, 64)]
    rec = recommend(clear)
    assert 16 < rec.crossover < 32 and 16 < rec.threshold <= 32
    assert rec.chosen_levels == [16, 32] and rec.confidence_label == "high"
    assert rec.indistinguishable_at == []
    # the same means, but the level below the crossing is noisy: its intervals overlap
    blurred = [*clear[:2], measured(16, 100.0, 80.0, 0.15, 0.15), *clear[3:]]
    rec = recommend(blurred)
    assert rec.threshold == recommend(clear).threshold, "the means did not move"
    assert rec.confidence_label != "high" and rec.indistinguishable_at == [16]
    assert rec.confidence < recommend(clear).confidence


def test_the_threshold_interval_comes_from_the_arms_intervals() -> None:
    pairs = [measured(c, 100.0, 100.0 * (0.9 if c < 32 else 1.1), 0.02, 0.02) for c in (8, 16, 32, 64)]
    rec = recommend(pairs)
    assert rec.range is not None and rec.threshold_range is not None
    low, high = rec.range
    assert high is not None and low <= rec.crossover <= high
    assert rec.threshold_range[0] <= rec.threshold <= rec.threshold_range[1]
    wider = recommend(
        [measured(c, 100.0, 100.0 * (0.9 if c < 32 else 1.1), 0.04, 0.04) for c in (8, 16, 32, 64)]
    )
    assert wider.range is not None and wider.range[1] is not None
    assert wider.range[0] <= low and wider.range[1] >= high


def test_threshold_zero_is_high_only_when_on_stays_ahead_at_the_top() -> None:
    ahead = recommend([measured(c, 100.0, 90.0, 0.01, 0.01) for c in (1, 16, 128)])
    assert ahead.threshold == 0 and ahead.confidence_label == "high" and ahead.chosen_levels == [128]
    level = recommend(
        [*[measured(c, 100.0, 90.0, 0.01, 0.01) for c in (1, 16)], measured(128, 100.0, 99.0, 0.03, 0.03)]
    )
    assert level.threshold == 0 and level.confidence_label == "medium" and level.indistinguishable_at == [128]


def test_what_to_run_to_separate_indistinguishable_levels() -> None:
    pairs = [
        measured(16, 100.0, 80.0, 0.01, 0.01),
        measured(64, 100.0, 104.0, 0.03, 0.03),  # 4 % apart, ±3 % each: more repeats separate them
        measured(128, 100.0, 100.1, 0.03, 0.03),  # 0.1 % apart: no practical count will
        measured(250, 100.0, 120.0, 0.01, 0.01),
    ]
    rec = recommend(pairs, repeats=2)
    assert rec.indistinguishable_at == [64, 128]
    assert rec.to_separate is not None
    assert rec.to_separate["equal_within_noise"] == [128]
    assert 3 <= rec.to_separate["repeats"] <= 20
