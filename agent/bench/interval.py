"""An arm's figure at one level and its 95 % interval: a t interval over its repeats, with the
variance moderated across the run.

Each repeat is one steady-state window, cut into slices of whole pacing cycles (``window.slices``);
its figure is its tokens over its seconds, and the arm's figure is the mean of its repeats' figures.
The interval is built on the log of the figures (noise here is relative) as ``mean x exp(±h)``,
h = t(0.975, df) x sqrt(v / R) for R repeats, where v estimates the variance of one repeat's figure.

Why not the repeats alone: two repeats give one degree of freedom, and t(0.975, 1) = 12.7 makes an
interval that is honest and useless (about ±20 % where the runs differ by 3 %). Why not the old
bootstrap over repeats and slices: with two repeats it spanned about from one repeat to the other,
which holds another run's figure at 16 of 24 checks on the real GPU-bound pair (67 %, where honest
intervals hold about 83 %). The variance is therefore moderated (empirical Bayes, as in Smyth 2004):

    v = (d0 x prior + d x s²) / (d0 + d),   df = d0 + d,

s² being the variance of the arm's own repeats (d = R - 1 degrees of freedom) and the prior the
arm's own within-window noise, scaled for the run:

    prior = k x w,   w = the mean over its repeats of a window's variance predicted by its slices,
    k = sum(d s²) / sum(d w) over every arm and level of the run, at least 1.

w says which arms are noisy (on the real engine one figure moves 0.5 % from window to window, another
7 %); k says how much more repeats differ than their slices predict (1.2 to 5 on the real engines:
the engine wanders on time scales longer than a slice), estimated from every cell of the run at
once, so it has as many degrees of freedom as the run has cells. The prior counts as d0 = 2 degrees
of freedom (``PRIOR_DF``): for two repeats the interval is a t with 3, t = 3.18. An arm without
slices to read (one slice per window) takes the run's pooled relative variance as its prior.

Where the repeats are: ``schedule.plan`` spreads them across the whole run (one pass over every
level, then the mirror pass), so the variance between them holds the drift a second run meets,
not only a few seconds' worth. On the real pair, drift that moved all four arms of one level by
2-8 % between runs was invisible to repeats taken back to back.

What a run can tell apart (``resolution``): two arms' intervals stop overlapping once their figures
differ by more than the sum of their half-widths; that sum, per level, is the smallest difference
the run resolves there. It shrinks about as t(df)/sqrt(R) with more repeats.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

CONFIDENCE = 0.95
PRIOR_DF = 2
"""Degrees of freedom the prior (the arm's window noise times the run's k) counts for."""
METHOD = (
    "95 % t interval on log figures over the repeats, variance moderated with a prior of the arm's "
    f"window noise (its slices) times the run's repeat-over-window ratio (prior weight {PRIOR_DF} df)"
)
Z975 = 1.959964
T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160,
        2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056,
        2.052, 2.048, 2.045, 2.042)  # fmt: skip
"""Student's t 97.5 % quantile for 1 ... 30 degrees of freedom."""


def t975(df: int) -> float:
    """Student's t 97.5 % quantile (beyond the table, within 0.1 % of it)."""
    if df < 1:
        return math.inf
    return T975[df - 1] if df <= len(T975) else Z975 + 2.4 / df


SliceSample = tuple[float, float]
"""(tokens, seconds) of one slice."""
Repeats = Sequence[Sequence[SliceSample]]
"""One arm at one level: each repeat's slices."""


@dataclass(frozen=True)
class Estimate:
    mean: float
    low: float | None
    high: float | None
    """None when nothing tells the noise apart (one slice of one repeat)."""
    repeats: int
    slices: int
    df: int = 0
    """Degrees of freedom of the t quantile used (0: no interval)."""

    @property
    def interval(self) -> tuple[float, float] | None:
        return None if self.low is None or self.high is None else (self.low, self.high)

    @property
    def half_width_rel(self) -> float | None:
        """Half the interval's width over the mean (the ± of a table)."""
        if self.interval is None or self.mean <= 0:
            return None
        return (self.interval[1] - self.interval[0]) / 2 / self.mean

    @property
    def half_width_log(self) -> float | None:
        """h: the interval is mean x exp(±h)."""
        if self.low is None or self.high is None or self.low <= 0:
            return None
        return math.log(self.high / self.low) / 2


@dataclass(frozen=True)
class RunNoise:
    """What every cell of a run says about its noise together (see the module docstring)."""

    k: float
    """Repeat variance over window-predicted variance, pooled over the run, at least 1."""
    k_df: int
    pooled: float | None
    """Pooled variance of one repeat's log figure, for cells without slices to read."""


ALONE = RunNoise(k=1.0, k_df=0, pooled=None)
"""A cell estimated on its own: no run to scale its window noise by."""


def _figure(samples: Sequence[SliceSample]) -> float:
    seconds = sum(s for _, s in samples)
    return sum(t for t, _ in samples) / seconds if seconds > 0 else 0.0


def _kept(repeats: Repeats) -> list[list[SliceSample]]:
    return [list(r) for r in repeats if r and sum(s for _, s in r) > 0 and _figure(r) > 0]


def window_variance(samples: Sequence[SliceSample]) -> float | None:
    """Variance of the log of a window's figure as its slices predict it (the ratio estimator,
    linearised: slices weighted by their seconds); None with fewer than two slices."""
    n = len(samples)
    if n < 2:
        return None
    rate = _figure(samples)
    mean_s = sum(s for _, s in samples) / n
    if rate <= 0 or mean_s <= 0:
        return None
    resid = [(t - rate * s) / (mean_s * rate) for t, s in samples]
    return sum(r * r for r in resid) / (n - 1) / n


def _repeat_variance(kept: list[list[SliceSample]]) -> float | None:
    logs = [math.log(_figure(r)) for r in kept]
    return statistics.variance(logs) if len(logs) > 1 else None


def _slice_variance(kept: list[list[SliceSample]]) -> float | None:
    known = [v for v in (window_variance(r) for r in kept) if v is not None]
    return statistics.fmean(known) if known else None


def run_noise(cells: Sequence[Repeats]) -> RunNoise:
    """k and the pooled variance from every cell of a run."""
    num = den = pooled_sum = 0.0
    k_df = pooled_df = 0
    for repeats in cells:
        kept = _kept(repeats)
        s2 = _repeat_variance(kept)
        if s2 is None:
            continue
        d = len(kept) - 1
        pooled_sum += d * s2
        pooled_df += d
        w = _slice_variance(kept)
        if w is not None and w > 0:
            num += d * s2
            den += d * w
            k_df += d
    k = max(1.0, num / den) if den > 0 else 1.0
    return RunNoise(k=k, k_df=k_df, pooled=pooled_sum / pooled_df if pooled_df else None)


def estimate(repeats: Repeats, noise: RunNoise | None = None) -> Estimate:
    """The mean of the repeats' figures and its 95 % interval; ``noise`` from ``run_noise`` over the
    run's cells (None: this cell alone, ``ALONE``)."""
    kept = _kept(repeats)
    if not kept:
        raise ValueError("an estimate needs at least one repeat with a measured slice")
    noise = noise or ALONE
    mean = statistics.fmean(_figure(r) for r in kept)
    count, slices = len(kept), sum(len(r) for r in kept)
    s2 = _repeat_variance(kept)
    d = count - 1
    w = _slice_variance(kept)
    prior = noise.k * w if w is not None else noise.pooled
    if prior is None:
        if s2 is None:
            return Estimate(mean, None, None, count, slices)
        variance, df = s2, d
    else:
        variance = (PRIOR_DF * prior + d * (s2 or 0.0)) / (PRIOR_DF + d)
        df = PRIOR_DF + d
    half = t975(df) * math.sqrt(variance / count)
    return Estimate(mean, mean * math.exp(-half), mean * math.exp(half), count, slices, df)


K = TypeVar("K", bound=Hashable)


def run_estimates(cells: Mapping[K, Repeats]) -> tuple[dict[K, Estimate], RunNoise]:
    """Every cell's estimate, each moderated with what the whole run says about its noise."""
    noise = run_noise(list(cells.values()))
    return {key: estimate(repeats, noise) for key, repeats in cells.items()}, noise


def resolution(a: Estimate, b: Estimate) -> float | None:
    """The smallest relative difference between two arms' figures that this run tells apart (their
    intervals stop overlapping): exp(h_a + h_b) - 1; None when either has no interval."""
    ha, hb = a.half_width_log, b.half_width_log
    return None if ha is None or hb is None else math.exp(ha + hb) - 1


def half_width_with(est: Estimate, repeats: int) -> float | None:
    """About how wide (h, on the log scale) the interval would be with ``repeats`` repeats of the
    same noise: h x t(df') / t(df) x sqrt(R / R'), df' = df + R' - R."""
    h = est.half_width_log
    if h is None or repeats < 1 or est.df < 1:
        return None
    df = est.df + repeats - est.repeats
    return h * t975(df) / t975(est.df) * math.sqrt(est.repeats / repeats)
