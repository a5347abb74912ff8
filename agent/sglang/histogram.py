"""A Prometheus histogram as the agent reads it: cumulative buckets, windows of it, and quantiles.

Quantiles follow Prometheus' ``histogram_quantile``: linear interpolation inside the bucket the
rank falls in. Two cases are told apart instead of being papered over:

* the rank falls in the ``+Inf`` bucket: the value is *above the top bucket*. The quantile is then
  a lower bound, the top finite bound, flagged ``above_top`` (the console shows ``>30 s``), never
  the bound as if it were the value;
* the histogram is incomplete (no ``+Inf`` bucket: the page was cut; or no ``_count``): it gives
  no quantile at all.

Bounds and counts are kept as two tuples (bounds interned by the reader, so that two readings of
one family share one tuple): a window of a histogram is then one C-level subtraction per tick.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Quantile:
    value: float
    """Seconds (or the histogram's unit); a lower bound when ``above_top``."""
    above_top: bool = False


@dataclass(frozen=True, slots=True)
class Histogram:
    """Cumulative bucket counts of one family, all its label sets added up."""

    bounds: tuple[float, ...]
    """Bucket upper bounds, ascending; ``inf`` last when the page had the ``+Inf`` bucket."""
    counts: tuple[float, ...]
    """Cumulative count per bound."""
    count: float | None
    """``_count``; None when the page has none."""
    total: float | None = None
    """``_sum``; None when the page has none."""

    @classmethod
    def of(
        cls, buckets: Iterable[tuple[float, float]], count: float | None, total: float | None = None
    ) -> Histogram:
        """From ``(bound, cumulative count)`` pairs."""
        pairs = tuple(buckets)
        return cls(tuple(b for b, _ in pairs), tuple(c for _, c in pairs), count, total)

    @property
    def buckets(self) -> tuple[tuple[float, float], ...]:
        return tuple(zip(self.bounds, self.counts, strict=True))

    @property
    def complete(self) -> bool:
        """Has a ``+Inf`` bucket and a ``_count``: only then do its quantiles mean anything."""
        return bool(self.bounds) and self.bounds[-1] == math.inf and self.count is not None

    @property
    def observations(self) -> float:
        """How many observations it holds (the ``+Inf`` bucket; 0 when incomplete)."""
        return self.counts[-1] if self.complete else 0.0

    @property
    def top_bound(self) -> float | None:
        """The largest finite bucket bound."""
        finite = [le for le in self.bounds if le != math.inf]
        return finite[-1] if finite else None

    def minus(self, older: Histogram) -> Histogram | None:
        """The observations made since ``older``; None if the server restarted (a count went down)
        or the buckets differ."""
        if self.bounds is not older.bounds and self.bounds != older.bounds:
            return None
        diff = tuple(map(operator.sub, self.counts, older.counts))
        if diff and min(diff) < 0:
            return None
        count = None if self.count is None or older.count is None else self.count - older.count
        if count is not None and count < 0:
            return None
        total = None if self.total is None or older.total is None else self.total - older.total
        return Histogram(self.bounds, diff, count, total)

    def quantile(self, q: float) -> Quantile | None:
        """The ``q`` quantile (see the module docstring); None without observations or when incomplete."""
        if not self.complete or not 0.0 <= q <= 1.0:
            return None
        observed = self.counts[-1]
        if observed <= 0:
            return None
        rank = q * observed
        lower_bound, lower_count = 0.0, 0.0
        for upper, cumulative in zip(self.bounds, self.counts, strict=True):
            if cumulative >= rank:
                if upper == math.inf:
                    top = self.top_bound
                    return None if top is None else Quantile(top, above_top=True)
                if upper <= 0:
                    return Quantile(upper)
                in_bucket = cumulative - lower_count
                if in_bucket <= 0:
                    return Quantile(upper)
                return Quantile(lower_bound + (upper - lower_bound) * (rank - lower_count) / in_bucket)
            lower_bound, lower_count = upper, cumulative
        return None  # unreachable: the +Inf bucket holds every observation
