"""An arm's figure at one level and its confidence interval, over repeats and window slices.

Each repeat's window is cut into slices of whole pacing cycles (``window.slices``); the repeat's
figure is its tokens over its seconds, and the arm's figure is the mean of its repeats' figures.
The interval is a two-stage (hierarchical) percentile bootstrap: draw the repeats with replacement,
then within each drawn repeat its slices with replacement, and take the mean of the redrawn
repeats' figures; the 2.5th and 97.5th percentiles of 2,000 such means bound the 95 % interval.

With few samples a percentile bootstrap is too narrow: it reads the spread of the sample as the
spread of the population (short by (n-1)/n) and uses normal tails where a t has fatter ones. The
interval's distances from the mean are therefore widened by sqrt(n/(n-1)) x t(0.975, n-1) / 1.96
(Hesterberg's small-sample expansion), n being the slices in all: x1.9 for two repeats of two
slices, x1.3 for two of four, x1.1 for eight of two.

Why two stages: the noise has two layers that one formula misses. Within a window, cycles differ
(the host's scheduling, acceptance draws, a stall); between repeats the engine's state differs (the
step policy's EMA, the host's other load, what ran before), and a t-interval over slices pooled as
if independent would treat the second as if it were the first. Drawing repeats first keeps
between-repeat differences in the interval, however few repeats there are. With two repeats it
spans about from one repeat's figure to the other's, widened by each one's own noise; more repeats
narrow it (and are what to run when arms overlap, see ``recommend``). The draws are seeded from the
arm and level, so a stored result's interval can be recomputed exactly.
"""

from __future__ import annotations

import math
import random
import statistics
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
RESAMPLES = 2000
METHOD = (
    "95 % two-stage percentile bootstrap over repeats, then window slices (2000 resamples), "
    "widened by sqrt(n/(n-1)) t(n-1)/z for n slices"
)
Z975 = 1.959964
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042)  # fmt: skip
"""Student's t 97.5 % quantile for 1 ... 30 degrees of freedom."""


def small_sample_factor(n: int) -> float:
    """How much wider than the plug-in bootstrap a 95 % interval over ``n`` samples must be."""
    if n < 2:
        return math.inf
    df = n - 1
    t = T975[df - 1] if df <= len(T975) else Z975 + 2.4 / df
    return math.sqrt(n / df) * t / Z975


SliceSample = tuple[float, float]
"""(tokens, seconds) of one slice."""


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float | None
    high: float | None
    """None when there is a single slice of a single repeat: nothing to tell the noise from."""
    repeats: int
    slices: int

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)

    @property
    def half_width_rel(self) -> float | None:
        """Half the interval's width over the mean (the ± of a table)."""
        if self.interval is None or self.mean <= 0:
            return None
        return (self.interval[1] - self.interval[0]) / 2 / self.mean


def _figure(samples: Sequence[SliceSample]) -> float:
    seconds = sum(s for _, s in samples)
    return sum(t for t, _ in samples) / seconds if seconds > 0 else 0.0


def seed_for(*parts: object) -> int:
    return zlib.crc32(":".join(str(p) for p in parts).encode())


def estimate(
    repeats: Sequence[Sequence[SliceSample]],
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Estimate:
    """The mean of the repeats' figures and its bootstrap interval (see the module docstring)."""
    kept = [list(r) for r in repeats if r and sum(s for _, s in r) > 0]
    if not kept:
        raise ValueError("an estimate needs at least one repeat with a measured slice")
    mean = statistics.fmean(_figure(r) for r in kept)
    total_slices = sum(len(r) for r in kept)
    if total_slices < 2:
        return Estimate(mean, None, None, len(kept), total_slices)
    rng = random.Random(seed)
    count = len(kept)
    means: list[float] = []
    for _ in range(resamples):
        figures = []
        for _ in range(count):
            drawn = kept[rng.randrange(count)]
            n = len(drawn)
            figures.append(_figure([drawn[rng.randrange(n)] for _ in range(n)]))
        means.append(sum(figures) / count)
    means.sort()
    tail = (1 - confidence) / 2
    low = means[int(tail * (resamples - 1))]
    high = means[round((1 - tail) * (resamples - 1))]
    widen = small_sample_factor(total_slices)
    low, high = mean - (mean - min(low, mean)) * widen, mean + (max(high, mean) - mean) * widen
    return Estimate(mean, max(0.0, low), high, count, total_slices)
