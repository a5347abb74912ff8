"""What one streamed request measured, and bench_serving's percentile and spread fields.

Using bench_serving's field names and formulas (``benchmark/serving.py`` ``calculate_metrics``) lets an
operator put our numbers next to SGLang's own benchmark without translation; ``window_stats`` computes
a level's fields over its steady-state window with these.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass
class RequestRecord:
    """What one streamed request measured, times from ``time.perf_counter``.

    ``chunk_times``/``chunk_counts`` are each chunk's arrival and the cumulative output tokens it
    brought the count to: how many tokens a stream delivered inside a window is read from them.
    """

    start: float
    success: bool = False
    ttft: float = 0.0
    latency: float = 0.0
    prompt_tokens: int = 0
    output_tokens: int = 0
    itl: list[float] = field(default_factory=list)
    error: str | None = None
    worker: int = 0
    """Which closed-loop stream sent it (the window is paced by one stream's cycles)."""
    chunk_times: list[float] = field(default_factory=list)
    chunk_counts: list[int] = field(default_factory=list)
    done: bool = False
    """The request ended (answered or failed); False for one cut off when its level ended."""

    @property
    def end(self) -> float:
        return self.start + self.latency

    @property
    def first_token_at(self) -> float | None:
        return self.chunk_times[0] if self.chunk_times else None

    def tokens_by(self, when: float) -> int:
        """Output tokens this stream had delivered by ``when``."""
        at = bisect.bisect_right(self.chunk_times, when)
        return self.chunk_counts[at - 1] if at else 0

    def token_times(self) -> list[float]:
        """Each output token's arrival (the tokens of one chunk share its time)."""
        times: list[float] = []
        last = 0
        for when, count in zip(self.chunk_times, self.chunk_counts, strict=True):
            times.extend([when] * (count - last))
            last = count
        return times


def percentile(values: Sequence[float], q: float) -> float:
    """numpy's default ("linear") percentile, so p99 matches bench_serving's ``np.percentile``."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = (len(ordered) - 1) * q / 100.0
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def spread(prefix: str, values_s: Sequence[float]) -> dict[str, float]:
    values = list(values_s) or [0.0]
    return {
        f"mean_{prefix}_ms": statistics.fmean(values) * 1000,
        f"median_{prefix}_ms": statistics.median(values) * 1000,
        f"std_{prefix}_ms": statistics.pstdev(values) * 1000,
        f"p90_{prefix}_ms": percentile(values, 90) * 1000,
        f"p95_{prefix}_ms": percentile(values, 95) * 1000,
        f"p99_{prefix}_ms": percentile(values, 99) * 1000,
    }
