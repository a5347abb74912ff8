"""A few minutes of counters and histograms, and what they say over a stated window (pure, no I/O).

SGLang's lifetime totals are not what an operator needs: output tokens/s is a counter's rise over a
window, a recent TTFT percentile comes from the histogram buckets that filled within the window,
the accept length is generated tokens over verify calls within the window. Every answer here says
the span it really covers (``span_s``), which is shorter than the window asked for while the history
fills, so that a Snapshot can state the window of each number.

SGLang creates a labelled series at its first use, so an older point may lack a counter the newest
one has: the base of a window is the oldest point inside it that has the counter, else the newest
earlier one that has it. A counter that goes down means the server restarted: the history before
it is dropped, so that no rate ever spans two processes.
"""

from __future__ import annotations

import bisect
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from agent.sglang.histogram import Histogram


@dataclass(frozen=True, slots=True)
class Point:
    """One tick's cumulative values."""

    time: float
    counters: Mapping[str, float]
    histograms: Mapping[str, Histogram]


@dataclass(frozen=True, slots=True)
class Windowed:
    """A value over a window, and the seconds the window really covers."""

    value: float
    span_s: float


@dataclass(frozen=True, slots=True)
class RecentHistogram:
    histogram: Histogram
    """The observations made within the window (bucket deltas)."""
    span_s: float


def _time_of(point: Point) -> float:
    return point.time


class CounterWindow:
    """The recent points of one engine process; ``keep_s`` bounds how far back it remembers."""

    def __init__(self, keep_s: float) -> None:
        self.keep_s = keep_s
        self._points: deque[Point] = deque()

    def __len__(self) -> int:
        return len(self._points)

    def clear(self) -> None:
        self._points.clear()

    def add(self, time: float, counters: Mapping[str, float], histograms: Mapping[str, Histogram]) -> bool:
        """Remember one tick; False when its counters show a restarted server (history dropped)."""
        restarted = False
        if self._points:
            last = self._points[-1]
            if any(counters.get(k, float("inf")) < v for k, v in last.counters.items()) or any(
                (h := histograms.get(k)) is not None and h.observations < old.observations
                for k, old in last.histograms.items()
            ):
                self._points.clear()
                restarted = True
        self._points.append(Point(time, dict(counters), dict(histograms)))
        while len(self._points) > 2 and time - self._points[0].time > self.keep_s:
            self._points.popleft()
        return not restarted

    @property
    def now(self) -> float | None:
        return self._points[-1].time if self._points else None

    def _base(self, window_s: float, has: Callable[[Point], bool]) -> Point | None:
        earlier = len(self._points) - 1
        if earlier < 1:
            return None
        now = self._points[-1].time
        at = min(bisect.bisect_left(self._points, now - window_s, hi=earlier, key=_time_of), earlier - 1)
        if has(self._points[at]):
            return self._points[at]
        for i in range(at + 1, earlier):
            if has(self._points[i]):
                return self._points[i]
        for i in range(at - 1, -1, -1):
            if has(self._points[i]):
                return self._points[i]
        return None

    def _pair(self, name: str, window_s: float) -> tuple[Point, Point] | None:
        if not self._points or name not in self._points[-1].counters:
            return None
        base = self._base(window_s, lambda p: name in p.counters)
        return None if base is None else (base, self._points[-1])

    def delta(self, name: str, window_s: float) -> Windowed | None:
        """How much counter ``name`` rose within the window."""
        pair = self._pair(name, window_s)
        if pair is None:
            return None
        base, current = pair
        return Windowed(current.counters[name] - base.counters[name], current.time - base.time)

    def rate(self, name: str, window_s: float) -> Windowed | None:
        """Counter ``name``'s rise per second over the window; 0 on an idle server, None without a pair."""
        delta = self.delta(name, window_s)
        if delta is None or delta.span_s <= 0:
            return None
        return Windowed(delta.value / delta.span_s, delta.span_s)

    def last_rate(self, name: str) -> Windowed | None:
        """The rate over the last tick alone (raw: SGLang advances some counters in bursts)."""
        return self.rate(name, 0.0)

    def ratio(self, numerator: str, denominator: str, window_s: float) -> Windowed | None:
        """Rise of one counter over the rise of another, in one window (None when the second stood still)."""
        num, den = self.delta(numerator, window_s), self.delta(denominator, window_s)
        if num is None or den is None or den.value <= 0 or num.span_s != den.span_s:
            return None
        return Windowed(num.value / den.value, den.span_s)

    def histogram(self, name: str, window_s: float) -> RecentHistogram | None:
        """The observations of histogram ``name`` made within the window (same buckets at both ends)."""
        if not self._points:
            return None
        current = self._points[-1]
        newest = current.histograms.get(name)
        if newest is None:
            return None
        bounds = [le for le, _ in newest.buckets]

        def has(point: Point) -> bool:
            older = point.histograms.get(name)
            return older is not None and [le for le, _ in older.buckets] == bounds

        base = self._base(window_s, has)
        if base is None:
            return None
        recent = newest.minus(base.histograms[name])
        return None if recent is None else RecentHistogram(recent, current.time - base.time)
