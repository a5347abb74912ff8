"""How often one run's interval holds another run's figure, on runs drawn from a stated noise model.

The model is the one the estimator stands on, with the spreads measured on the real engines: each
run has 12 arm-levels (3 levels x 4 arms) whose slice-to-slice noise ranges over 0.5-7 %, and whose
repeats differ by more than their slices predict (repeat variance k times the window's, k = 4 give
or take 1.6x per arm-level: the real pairs' runs measured 1.2-5). Two repeats of four slices, as a
default compare makes. Between two runs the figures differ by the repeats' noise (the schedule
spreads the repeats over the run, so what a second run meets is what a second pass meets).

Honest 95 % intervals of two equal runs hold each other's figure about 83 % of the time; the issue
asks for at least 80 %. The old bootstrap over repeats and slices held 73 % on this model; the
seeded draw makes the figure the same on every run of the test. The real engine's own figures come
from ``python -m bench.studies.bench_repeat --from`` (the README's "Repeats and intervals").
"""

from __future__ import annotations

import math
import random
import statistics

from agent.bench.interval import SliceSample, run_estimates

Run = dict[int, list[list[SliceSample]]]


def _draw_cells(rng: random.Random) -> dict[int, tuple[float, float, float]]:
    """(log mean, slice noise, repeat noise) per arm-level."""
    cells = {}
    for i in range(12):
        slice_sd = math.exp(rng.uniform(math.log(0.005), math.log(0.07)))
        k = 4.0 * math.exp(rng.uniform(-0.5, 0.5))
        window_sd = slice_sd / 2  # a window's mean of 4 slices
        cells[i] = (math.log(1000.0 * (i + 1)), slice_sd, window_sd * math.sqrt(k - 1))
    return cells


def _run(rng: random.Random, cells: dict[int, tuple[float, float, float]]) -> Run:
    run: Run = {}
    for key, (mu, slice_sd, repeat_sd) in cells.items():
        run[key] = []
        for _ in range(2):
            shift = rng.gauss(0, repeat_sd)
            slices = []
            for _ in range(4):
                seconds = rng.uniform(0.8, 1.2)
                slices.append((math.exp(mu + shift + rng.gauss(0, slice_sd)) * seconds, seconds))
            run[key].append(slices)
    return run


def test_one_runs_intervals_hold_another_runs_figures_at_least_80_percent_of_the_time() -> None:
    rng = random.Random(24)
    held = checked = 0
    widths: list[float] = []
    for _ in range(150):
        cells = _draw_cells(rng)
        first, _ = run_estimates(_run(rng, cells))
        second, _ = run_estimates(_run(rng, cells))
        for mine, other in ((first, second), (second, first)):
            for key, est in mine.items():
                assert est.interval is not None and est.half_width_rel is not None
                checked += 1
                held += est.interval[0] <= other[key].mean <= est.interval[1]
                widths.append(est.half_width_rel / cells[key][1])
    cover = held / checked
    assert checked == 3600
    assert 0.80 <= cover <= 0.97, cover  # honest, and not so wide that everything is held
    # useful: the typical half-width is about 1.5 slice-noises, not tens of them (t(1) over two
    # repeats alone would make it about 6)
    assert statistics.median(widths) < 3.0
