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
from typing import NamedTuple

from agent.sglang.histogram import Histogram


@dataclass(frozen=True, slots=True)
class Point:
    """One tick's cumulative values."""

    time: float
    counters: Mapping[str, float]
    histograms: Mapping[str, Histogram]


class Windowed(NamedTuple):
    """A value over a window, and the seconds the window really covers."""

    value: float
    span_s: float


class RecentHistogram(NamedTuple):
    histogram: Histogram
    """The observations made within the window (bucket deltas)."""
    span_s: float


def _time_of(point: Point) -> float:
    return point.time


_empty: dict[tuple[float, ...], Histogram] = {}


def _nothing_new(histogram: Histogram) -> Histogram:
    """No observation since: the same buckets, every count 0 (an idle server's every tick)."""
    found = _empty.get(histogram.bounds)
    if found is None:
        if len(_empty) > 64:
            _empty.clear()
        zeros = (0.0,) * len(histogram.bounds)
        found = _empty[histogram.bounds] = Histogram(histogram.bounds, zeros, 0.0, 0.0)
    return found


class CounterWindow:
    """The recent points of one engine process; ``keep_s`` bounds how far back it remembers."""

    def __init__(self, keep_s: float) -> None:
        self.keep_s = keep_s
        self._points: deque[Point] = deque()
        self._bases: dict[tuple[str, float], Point | None] = {}
        """(counter, window) → the window's base point: a tick asks for some twice."""
        self._starts: dict[float, int] = {}
        """window → index of the oldest point inside it, for the newest point."""

    def __len__(self) -> int:
        return len(self._points)

    def clear(self) -> None:
        self._points.clear()
        self._bases.clear()
        self._starts.clear()

    def add(self, time: float, counters: Mapping[str, float], histograms: Mapping[str, Histogram]) -> bool:
        """Remember one tick; False when its counters show a restarted server (history dropped).

        The mappings are kept as given (a reading's, never changed after it is made): an idle
        server's readings share them from tick to tick."""
        self._bases.clear()
        self._starts.clear()
        restarted = False
        if self._points and self._points[-1].counters is not counters:  # not an idle server's same reading
            last = self._points[-1]
            if any(counters.get(k, float("inf")) < v for k, v in last.counters.items()) or any(
                (h := histograms.get(k)) is not None and h.observations < old.observations
                for k, old in last.histograms.items()
            ):
                self._points.clear()
                restarted = True
        self._points.append(Point(time, counters, histograms))
        while len(self._points) > 2 and time - self._points[0].time > self.keep_s:
            self._points.popleft()
        return not restarted

    @property
    def now(self) -> float | None:
        return self._points[-1].time if self._points else None

    def _start(self, window_s: float) -> int:
        """Index of the oldest earlier point inside the window (the newest earlier one if none is)."""
        at = self._starts.get(window_s)
        if at is None:
            earlier = len(self._points) - 1
            now = self._points[-1].time
            found = bisect.bisect_left(self._points, now - window_s, hi=earlier, key=_time_of)
            at = self._starts[window_s] = min(found, earlier - 1)
        return at

    def _base(self, window_s: float, has: Callable[[Point], bool]) -> Point | None:
        earlier = len(self._points) - 1
        if earlier < 1:
            return None
        at = self._start(window_s)
        if has(self._points[at]):
            return self._points[at]
        for i in range(at + 1, earlier):
            if has(self._points[i]):
                return self._points[i]
        for i in range(at - 1, -1, -1):
            if has(self._points[i]):
                return self._points[i]
        return None

    def _counter_base(self, name: str, window_s: float) -> Point | None:
        key = (name, window_s)
        if key in self._bases:
            return self._bases[key]
        points = self._points
        base = None
        if len(points) > 1:
            at = self._start(window_s)
            if name in points[at].counters:  # nearly always: a series stays once it appeared
                base = points[at]
            else:
                base = self._base(window_s, lambda p: name in p.counters)
        self._bases[key] = base
        return base

    def delta(self, name: str, window_s: float) -> Windowed | None:
        """How much counter ``name`` rose within the window."""
        if not self._points:
            return None
        current = self._points[-1]
        value = current.counters.get(name)
        if value is None:
            return None
        base = self._counter_base(name, window_s)
        if base is None:
            return None
        return Windowed(value - base.counters[name], current.time - base.time)

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
        bounds = newest.bounds

        def has(point: Point) -> bool:
            older = point.histograms.get(name)
            return older is not None and (older.bounds is bounds or older.bounds == bounds)

        base = self._base(window_s, has)
        if base is None:
            return None
        older = base.histograms[name]
        recent = _nothing_new(newest) if older is newest else newest.minus(older)
        return None if recent is None else RecentHistogram(recent, current.time - base.time)
