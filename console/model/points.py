"""The few numbers of a snapshot that the history charts draw, kept for an hour in a small ring.

A whole Snapshot is ~20 kB (GPU rows, KV view, findings); an hour of them at four a second would be
over a gigabyte. A chart needs a dozen floats per tick, so those are copied out once on arrival and
the snapshots themselves are kept only as long as the screens that read them need.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from agent.wire import Snapshot

POINTS_LEN = 4 * 3600
"""An hour at the fastest tick the agent allows (4 per second): the longest window an operator picks."""


@dataclass(frozen=True, slots=True)
class ChartPoint:
    """One tick as the charts see it; None is "unknown" and leaves a gap, never a zero."""

    time: float
    output_tok_s: float | None = None
    gauge_tok_s: float | None = None
    prompt_tok_s: float | None = None
    running: float | None = None
    queued: float | None = None
    threshold: float | None = None
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    accept_length: float | None = None
    kv_used_pct: float | None = None
    spec_on: bool | None = None


def _ms(seconds: float | None) -> float | None:
    return None if seconds is None else seconds * 1000.0


def _kv_pct(snap: Snapshot) -> float | None:
    kv = snap.kv
    if kv.pool_tokens is None or kv.used_tokens is None or kv.pool_tokens <= 0:
        return None
    return 100.0 * kv.used_tokens / kv.pool_tokens


def point_of(snap: Snapshot) -> ChartPoint:
    t, load, lat, spec = snap.throughput, snap.load, snap.latency, snap.speculation
    threshold = spec.threshold if spec.threshold_available and spec.threshold else None
    return ChartPoint(
        time=snap.time,
        output_tok_s=t.output_tok_s,
        gauge_tok_s=t.gauge_tok_s,
        prompt_tok_s=t.prompt_tok_s,
        running=None if load.running is None else float(load.running),
        queued=None if load.queued is None else float(load.queued),
        threshold=None if threshold is None else float(threshold),
        ttft_p50_ms=_ms(lat.ttft_p50_s),
        ttft_p99_ms=_ms(lat.ttft_p99_s),
        itl_p50_ms=_ms(lat.itl_p50_s),
        itl_p99_ms=_ms(lat.itl_p99_s),
        # Accept length means something only while drafting: an idle or non-speculating tick is a gap.
        accept_length=spec.accept_length if spec.on and (load.running or 0) > 0 else None,
        kv_used_pct=_kv_pct(snap),
        spec_on=spec.on,
    )


Series = tuple[tuple[float, ...], tuple[float, ...]]


class PointRing:
    """The chart history: appended on arrival, read as (seconds before the newest, value) pairs."""

    def __init__(self, maxlen: int = POINTS_LEN) -> None:
        self.points: deque[ChartPoint] = deque(maxlen=maxlen)

    def append(self, point: ChartPoint) -> None:
        self.points.append(point)

    def __len__(self) -> int:
        return len(self.points)

    def in_window(self, window_s: float) -> list[ChartPoint]:
        if not self.points:
            return []
        start = self.points[-1].time - window_s
        # Newest first until the window's start: a short window over a full ring stays cheap.
        out: list[ChartPoint] = []
        for point in reversed(self.points):
            if point.time < start:
                break
            out.append(point)
        out.reverse()
        return out

    def series(
        self, value: Callable[[ChartPoint], float | None], window_s: float, max_points: int = 240
    ) -> Series:
        """Points of one value over the last ``window_s`` seconds, x as seconds before the newest point.

        Relative times keep a chart independent of the wall clock (and so deterministic in tests);
        long windows are thinned to ``max_points`` by taking every n-th point, never averaged away.
        """
        chosen = self.in_window(window_s)
        if not chosen:
            return (), ()
        newest = chosen[-1].time
        step = max(1, len(chosen) // max_points)
        xs: list[float] = []
        ys: list[float] = []
        for point in chosen[::step]:
            y = value(point)
            if y is not None:
                xs.append(point.time - newest)
                ys.append(float(y))
        return tuple(xs), tuple(ys)

    def span_s(self) -> float:
        return self.points[-1].time - self.points[0].time if len(self.points) > 1 else 0.0
