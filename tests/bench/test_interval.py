"""An arm's figure and its interval over repeats and window slices (pure arithmetic)."""

from __future__ import annotations

import pytest

from agent.bench.interval import estimate, seed_for, small_sample_factor


def repeat(rates: list[float], seconds: float = 1.0) -> list[tuple[float, float]]:
    return [(rate * seconds, seconds) for rate in rates]


def test_the_figure_is_the_mean_of_the_repeats_figures() -> None:
    est = estimate([repeat([100, 110]), [(400.0, 2.0), (100.0, 1.0)]], seed=1)
    # repeat 1: 210 tokens / 2 s; repeat 2: 500 tokens / 3 s; each repeat counts once
    assert est.mean == pytest.approx((105.0 + 500 / 3) / 2)
    assert est.repeats == 2 and est.slices == 4
    assert est.interval is not None and est.interval[0] <= est.mean <= est.interval[1]


def test_a_single_slice_has_no_interval() -> None:
    est = estimate([repeat([100])])
    assert est.interval is None and est.half_width_rel is None and est.mean == 100


def test_repeats_that_disagree_widen_the_interval_beyond_their_own_noise() -> None:
    """Pooled as if independent, the slices of two repeats 10 % apart would look tight; drawing the
    repeats first keeps their disagreement in the interval."""
    quiet_apart = [repeat([100, 100.5, 99.5, 100]), repeat([110, 110.5, 109.5, 110])]
    est = estimate(quiet_apart, seed=3)
    assert est.interval is not None
    low, high = est.interval
    assert low < 101 and high > 109, est
    agreeing = estimate([repeat([100, 100.5, 99.5, 100]), repeat([100, 100.5, 99.5, 100])], seed=3)
    assert agreeing.half_width_rel is not None and est.half_width_rel is not None
    assert agreeing.half_width_rel < est.half_width_rel / 5


def test_more_slices_and_repeats_narrow_it() -> None:
    noisy = [90, 110, 95, 105]
    few = estimate([repeat(noisy), repeat(noisy)], seed=5)
    many = estimate([repeat(noisy * 4)] * 6, seed=5)
    assert few.half_width_rel is not None and many.half_width_rel is not None
    assert many.half_width_rel < few.half_width_rel / 2


def test_the_interval_is_reproducible_from_its_seed() -> None:
    data = [repeat([100, 120, 90]), repeat([105, 95, 115])]
    seed = seed_for("on", 64)
    assert estimate(data, seed=seed) == estimate(data, seed=seed)
    assert seed_for("on", 64) != seed_for("off", 64)


def test_nothing_measured_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one repeat"):
        estimate([[]])


def test_few_samples_widen_the_interval() -> None:
    """Two repeats of two slices get almost twice the plug-in bootstrap's width; many get little."""
    assert small_sample_factor(4) == pytest.approx(1.87, abs=0.01)
    assert small_sample_factor(16) == pytest.approx(1.12, abs=0.01)
    assert small_sample_factor(200) == pytest.approx(1.0, abs=0.01)
    assert small_sample_factor(1) == float("inf")
