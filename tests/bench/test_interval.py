"""An arm's figure and its interval: a t interval over repeats, moderated across the run."""

from __future__ import annotations

import math

import pytest

from agent.bench.interval import (
    PRIOR_DF,
    RunNoise,
    estimate,
    half_width_with,
    resolution,
    run_estimates,
    run_noise,
    t975,
    window_variance,
)


def repeat(rates: list[float], seconds: float = 1.0) -> list[tuple[float, float]]:
    return [(rate * seconds, seconds) for rate in rates]


def test_the_figure_is_the_mean_of_the_repeats_figures() -> None:
    est = estimate([repeat([100, 110]), [(400.0, 2.0), (100.0, 1.0)]])
    # repeat 1: 210 tokens / 2 s; repeat 2: 500 tokens / 3 s; each repeat counts once
    assert est.mean == pytest.approx((105.0 + 500 / 3) / 2)
    assert est.repeats == 2 and est.slices == 4
    assert est.interval is not None and est.interval[0] <= est.mean <= est.interval[1]


def test_a_single_slice_has_no_interval() -> None:
    est = estimate([repeat([100])])
    assert est.interval is None and est.half_width_rel is None and est.mean == 100


def test_nothing_measured_is_an_error() -> None:
    with pytest.raises(ValueError, match="at least one repeat"):
        estimate([[]])


def test_two_repeats_alone_are_a_t_interval_with_the_prior_counted_as_two_degrees_of_freedom() -> None:
    """The formula written out: v = (d0 k w + d s²) / (d0 + d), h = t(d0 + d) sqrt(v / R)."""
    a, b = repeat([100, 102, 98, 100]), repeat([110, 112, 108, 110])
    est = estimate([a, b])  # k = 1: this cell alone cannot say more
    logs = [math.log(100), math.log(110)]
    s2 = (logs[1] - logs[0]) ** 2 / 2
    w = ((window_variance(a) or 0) + (window_variance(b) or 0)) / 2
    v = (PRIOR_DF * w + 1 * s2) / (PRIOR_DF + 1)
    h = t975(PRIOR_DF + 1) * math.sqrt(v / 2)
    assert est.df == 3 and t975(3) == pytest.approx(3.182)
    assert est.interval == pytest.approx((est.mean * math.exp(-h), est.mean * math.exp(h)))


def test_repeats_that_disagree_widen_it_beyond_their_windows_noise() -> None:
    quiet_apart = [repeat([100, 100.5, 99.5, 100]), repeat([110, 110.5, 109.5, 110])]
    agreeing = [repeat([100, 100.5, 99.5, 100]), repeat([100, 100.5, 99.5, 100])]
    apart, same = estimate(quiet_apart), estimate(agreeing)
    assert apart.interval is not None and apart.interval[0] < 100 and apart.interval[1] > 110
    assert same.half_width_rel is not None and apart.half_width_rel is not None
    assert same.half_width_rel < apart.half_width_rel / 5


def test_the_run_scales_every_cells_window_noise_by_how_much_its_repeats_exceeded_it() -> None:
    """Cells whose repeats differ four times more (in variance) than their slices predict make k = 4,
    which then widens a cell whose own two repeats happened to agree."""
    noisy = [95, 105, 97, 103]
    drifting = {i: [repeat(noisy), repeat([r * 1.06 for r in noisy])] for i in range(6)}
    lucky = [repeat(noisy), repeat(noisy)]
    alone = estimate(lucky)
    figures, noise = run_estimates({**drifting, "lucky": lucky})
    assert noise.k > 2 and noise.k_df == 7  # every cell with two repeats counts
    assert figures["lucky"].half_width_rel is not None and alone.half_width_rel is not None
    assert figures["lucky"].half_width_rel > 1.3 * alone.half_width_rel


def test_k_is_never_below_one() -> None:
    """Repeats that agree better than their slices predict do not narrow the prior below them."""
    cells = [[repeat([90, 110, 95, 105]), repeat([90, 110, 95, 105])] for _ in range(4)]
    assert run_noise(cells).k == 1.0


def test_a_cell_without_slices_takes_the_runs_pooled_variance() -> None:
    noise = RunNoise(k=1.0, k_df=4, pooled=0.01**2)
    est = estimate([repeat([100]), repeat([100])], noise)  # one slice a window, two equal repeats
    h = t975(PRIOR_DF + 1) * math.sqrt(PRIOR_DF * 0.01**2 / (PRIOR_DF + 1) / 2)
    assert est.half_width_log == pytest.approx(h)


def test_more_repeats_narrow_it() -> None:
    noisy = [90, 110, 95, 105]
    few = estimate([repeat(noisy), repeat([n * 1.03 for n in noisy])])
    many = estimate([repeat(noisy), repeat([n * 1.03 for n in noisy])] * 4)
    assert few.half_width_rel is not None and many.half_width_rel is not None
    assert many.half_width_rel < few.half_width_rel / 2


def test_what_a_run_can_tell_apart_is_the_sum_of_the_half_widths() -> None:
    a = estimate([repeat([100, 102, 98, 100]), repeat([103, 105, 101, 103])])
    b = estimate([repeat([200, 204, 196, 200]), repeat([206, 210, 202, 206])])
    ha, hb = a.half_width_log, b.half_width_log
    assert ha is not None and hb is not None
    assert resolution(a, b) == pytest.approx(math.exp(ha + hb) - 1)
    four = half_width_with(a, 4)
    assert four is not None and four == pytest.approx(ha * t975(5) / t975(3) * math.sqrt(2 / 4))
    assert resolution(a, estimate([repeat([100])])) is None
