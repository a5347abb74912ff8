"""A level whose windows trend says so (issue 46): the slope's interval and its size against the noise,
on made-up windows; the result's ``trend`` and the table's ``~``; and once on the simulated engine,
whose steady windows must not read as a trend."""

from __future__ import annotations

import math
import random
from pathlib import Path

from agent.bench.aggregate import RunOutcome
from agent.bench.interval import ALONE, estimate, run_noise
from agent.bench.options import BenchOptions
from agent.bench.report import compare_table
from agent.bench.sweep import run_sweep
from agent.bench.trend import trend
from agent.profile.store import load_profile
from agent.sim.server import run_sim
from agent.wire.bench_result import BenchResult

PROFILES = Path(__file__).resolve().parents[2] / "profiles"
EAGLE3 = load_profile(PROFILES / "kimi-k25-eagle3.toml")


def window(rate: float, noise: float, rng: random.Random, slices: int = 8) -> list[tuple[float, float]]:
    """A window of ``slices`` one-second slices around ``rate`` with relative noise ``noise``."""
    return [(rate * (1 + rng.gauss(0.0, noise)), 1.0) for _ in range(slices)]


def test_windows_that_fall_step_by_step_trend() -> None:
    """Off at c=64 losing about 3 % a window, each window's slices within 2 %: a trend, and how much."""
    rng = random.Random(46)
    rates = [5600.0 * 0.97**i for i in range(6)]
    t = trend([(2.0 * i, window(r, 0.02, rng)) for i, r in enumerate(rates)])
    assert t is not None and t.trending and t.high < 0
    assert -0.16 < t.change < -0.11, t.change  # 0.97 ** 5 - 1 = -14 %
    assert t.windows == 6 and t.df == 6  # 4 of residual + the prior's 2


def test_windows_that_only_scatter_do_not_trend() -> None:
    """Windows that scatter 3 % (far more than their slices say): with the run's k, as a run scales its
    window noise, a 95 % interval reads a trend in about 1 of 20 such levels by chance."""
    rng = random.Random(7)
    cells = [
        [(float(i), window(5000.0 * (1 + rng.gauss(0.0, 0.03)), 0.02, rng)) for i in range(6)]
        for _ in range(60)
    ]
    noise = run_noise([[s for _, s in cell] for cell in cells])
    assert noise.k > 5  # the windows differ far beyond their slices
    found = [trend(cell, noise) for cell in cells]
    trending = sum(1 for t in found if t is not None and t.trending)
    assert trending <= 7, trending


def test_a_slope_too_small_to_matter_is_not_a_trend() -> None:
    """Windows that drift 0.3 % in all with slices that agree within 0.05 %: the slope is significant,
    its size is within one window's noise about the line, so the level does not trend."""
    rng = random.Random(3)
    windows = [
        (float(i), window(5000.0 * (1 - 0.0006 * i + rng.gauss(0.0, 0.004)), 0.0005, rng)) for i in range(6)
    ]
    t = trend(windows)
    assert t is not None and not t.trending
    assert abs(math.log1p(t.change)) <= t.noise or not t.significant


def test_fewer_than_three_windows_say_nothing() -> None:
    rng = random.Random(1)
    assert trend([(0.0, window(100.0, 0.01, rng)), (1.0, window(90.0, 0.01, rng))]) is None
    assert trend([(1.0, window(100.0, 0.01, rng))] * 3) is None  # one step: no slope


def test_the_result_and_the_table_say_the_level_trends() -> None:
    """The issue's shape: ``off`` falls window by window while ``baseline`` holds."""
    rng = random.Random(11)

    def outcomes(rates: list[float]) -> list[RunOutcome]:
        out = []
        for i, r in enumerate(rates):
            slices = window(r, 0.015, rng)
            result = {"repeat": i, "step": 2 * i, "requests": 50, "output_throughput": r, "window_s": 8.0}
            out.append(RunOutcome(result=result, part=([], None), slices=slices))  # type: ignore[arg-type]
        return out

    falling = [5600.0 * 0.96**i for i in range(6)]
    steady = [5100.0 * (1 + rng.gauss(0.0, 0.01)) for _ in range(6)]
    arms = {}
    for name, rates in (("off", falling), ("baseline", steady)):
        runs = outcomes(rates)
        figure = estimate([o.slices for o in runs], ALONE)
        drift = trend([(float(o.result["step"]), o.slices) for o in runs])
        assert drift is not None
        arms[name] = {"output_throughput": figure.mean, "output_throughput_ci_rel": figure.half_width_rel,
                      "trend": drift.as_dict()}  # fmt: skip
    assert arms["off"]["trend"]["trending"] is True and arms["off"]["trend"]["change"] < -0.15
    assert arms["baseline"]["trend"]["trending"] is False
    level = {"concurrency": 64, **arms}
    table = compare_table(
        BenchResult.model_validate({"levels": [level], "live_control": {"available": True}})
    )
    rows = table.splitlines()
    [row] = [row for row in rows if row.lstrip().startswith("64 ")]
    assert "%~" in row.split()[1] and "~" not in row.split()[2], row  # off trends, the baseline does not
    [line] = [row for row in rows if row.startswith("~ ")]
    assert (
        line.startswith("~ c=64 off: its 6 windows trend: the figure fell 1")
        and "drifted while it ran" in line
    )


async def test_a_steady_simulated_engine_does_not_trend() -> None:
    """Once on the sim: every level of a sweep records its trend, and a steady engine's is none."""
    options = BenchOptions(
        concurrency=(4,), input_len=64, output_len=96, min_requests=8, repeats=4, min_window_s=0.5
    )
    async with run_sim(EAGLE3, port=0, speedup=50, seed=9) as sim:
        result = await run_sweep(sim.url, options)
    [level] = result["levels"]
    assert level["trend"] is not None and level["trend"]["windows"] == 4
    assert level["trend"]["trending"] is False, level["trend"]
