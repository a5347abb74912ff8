"""Per-level statistics, named and computed the way SGLang's ``bench_serving`` names and computes them.

Using bench_serving's field names and formulas (``benchmark/serving.py`` ``calculate_metrics``) lets an
operator put our numbers next to SGLang's own benchmark without translation.
"""

from __future__ import annotations

import bisect
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any


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


def _peaks(done: Sequence[RequestRecord]) -> tuple[float, int]:
    """Peak output tokens in any 1-s bucket and peak concurrent requests, as bench_serving buckets them."""
    if not done:
        return 0.0, 0
    t0 = min(r.start for r in done)
    seconds = math.ceil(max(r.end for r in done) - t0) + 1
    tokens = [0] * seconds
    running = [0] * seconds
    for r in done:
        t = r.start + r.ttft
        for gap in [0.0, *r.itl]:
            t += gap
            bucket = int(t - t0)
            if 0 <= bucket < seconds:
                tokens[bucket] += 1
        for s in range(int(r.start - t0), min(int(r.end - t0) + 1, seconds)):
            running[s] += 1
    return float(max(tokens)), max(running)


def throughput_relative_error(records: Sequence[RequestRecord]) -> float:
    """Relative standard error of the level's output throughput.

    In a closed loop, throughput = concurrency x tokens / mean(e2e) (Little's law), so its relative
    error is that of the mean end-to-end latency over the completed requests. This is the noise the
    recommendation compares on/off differences against.
    """
    latencies = [r.latency for r in records if r.success]
    if len(latencies) < 2:
        return 1.0
    mean = statistics.fmean(latencies)
    if mean <= 0:
        return 1.0
    return statistics.stdev(latencies) / mean / math.sqrt(len(latencies))


def level_metrics(records: Sequence[RequestRecord], duration_s: float) -> dict[str, Any]:
    """bench_serving's ``BenchmarkMetrics`` fields for one level (those that need no tokenizer)."""
    done = [r for r in records if r.success]
    dur = max(duration_s, 1e-9)
    total_input = sum(r.prompt_tokens for r in done)
    total_output = sum(r.output_tokens for r in done)
    tpots = [(r.latency - r.ttft) / (r.output_tokens - 1) for r in done if r.output_tokens > 1]
    itls = [gap for r in done for gap in r.itl]
    e2e = [r.latency for r in done]
    peak_tokens, peak_running = _peaks(done)
    out: dict[str, Any] = {
        "duration": duration_s,
        "completed": len(done),
        "failed": len(records) - len(done),
        "total_input_tokens": total_input,
        "total_output_tokens": total_output,
        "request_throughput": len(done) / dur,
        "input_throughput": total_input / dur,
        "output_throughput": total_output / dur,
        "total_throughput": (total_input + total_output) / dur,
    }
    out |= spread("e2e_latency", e2e)
    out |= spread("ttft", [r.ttft for r in done])
    out |= spread("tpot", tpots)
    out |= spread("itl", itls)
    out |= {
        "concurrency": sum(e2e) / dur,
        "max_output_tokens_per_s": peak_tokens,
        "max_concurrent_requests": peak_running,
        "output_throughput_rel_err": throughput_relative_error(done),
    }
    errors = sorted({r.error for r in records if r.error})
    if errors:
        out["errors"] = errors[:5]
    return out
