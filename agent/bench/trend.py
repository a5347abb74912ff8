"""Whether an arm's windows at one level trend: a slope across them beyond their noise (issue 46).

The interval (``agent.bench.interval``) treats an arm's windows at a level as repeats of one figure:
a figure that drifts while the level runs (on the real engine "off" at c=64 ran 5,363 and 5,635 tok/s,
then 4,300 to 4,724, the GPU waiting on the host) only widens that interval, and the table read "±15 %"
as if it were noise. Here the windows' log figures are regressed on their place in the run (the step
each ran at), and the level is said to trend when both hold:

* the slope's 95 % interval excludes 0: a t interval on the residual variance, moderated with the
  arm's window noise as the interval module moderates a figure's variance (``PRIOR_DF`` degrees of
  freedom of the window noise its slices predict, times the run's k), so three or four windows can
  show a trend the slices say is far beyond their noise;
* the change the slope makes over the level's windows, ``slope x (last step - first step)`` on the
  log scale, is larger than one window's noise (the moderated standard deviation of a window about
  the line): a significant slope too small to matter is not a trend.

Three windows at least (one degree of freedom of residual). The result's ``trend`` field and the
table's ``~`` mark say so; the figure and its interval are left as they are.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from agent.bench.interval import PRIOR_DF, RunNoise, SliceSample, t975, window_variance

MIN_WINDOWS = 3


@dataclass(frozen=True)
class Trend:
    windows: int
    slope: float
    """Per step of the run, on the log scale (-0.02: about 2 % lower a step)."""
    low: float
    high: float
    """The slope's 95 % interval."""
    df: int
    change: float
    """Relative change the slope makes from the level's first window to its last (-0.2: 20 % lower)."""
    noise: float
    """One window's relative noise about the line (moderated standard deviation, log scale)."""

    @property
    def significant(self) -> bool:
        return self.low > 0 or self.high < 0

    @property
    def trending(self) -> bool:
        return self.significant and abs(math.log1p(self.change)) > self.noise

    def as_dict(self) -> dict[str, Any]:
        return {**asdict(self), "trending": self.trending}


def _figure(samples: Sequence[SliceSample]) -> float:
    seconds = sum(s for _, s in samples)
    return sum(t for t, _ in samples) / seconds if seconds > 0 else 0.0


def trend(
    windows: Sequence[tuple[float, Sequence[SliceSample]]], noise: RunNoise | None = None
) -> Trend | None:
    """The trend of one arm's windows at one level: ``(step, slices)`` per window, in any order; None
    with fewer than ``MIN_WINDOWS`` measured windows or no spread of steps."""
    kept = [(float(x), list(s)) for x, s in windows if s and _figure(s) > 0]
    if len(kept) < MIN_WINDOWS:
        return None
    kept.sort(key=lambda w: w[0])
    xs = [x for x, _ in kept]
    ys = [math.log(_figure(s)) for _, s in kept]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx <= 0:
        return None
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    d = len(kept) - 2
    resid = sum((y - my - slope * (x - mx)) ** 2 for x, y in zip(xs, ys, strict=True)) / d
    predicted = [v for v in (window_variance(s) for _, s in kept) if v is not None]
    k = noise.k if noise is not None else 1.0
    prior = k * statistics.fmean(predicted) if predicted else (noise.pooled if noise is not None else None)
    if prior is None:
        variance, df = resid, d
    else:
        variance, df = (PRIOR_DF * prior + d * resid) / (PRIOR_DF + d), PRIOR_DF + d
    half = t975(df) * math.sqrt(variance / sxx)
    change = math.expm1(slope * (xs[-1] - xs[0]))
    return Trend(len(kept), slope, slope - half, slope + half, df, change, math.sqrt(variance))
