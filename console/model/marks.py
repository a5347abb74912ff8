"""What the time charts mark besides their lines: speculation switches, and benchmark runs as spans.

A compare benchmark forces a switch at every arm change (21 in two minutes on the real H200), so a
marker per switch buries the throughput under vertical lines. The switches a bench forced are its
own, not the autopilot's or the engine's: inside a bench's span the charts draw one band instead, and
only the switches outside every span keep their markers. Deciding which switch falls where is done
here, on agent times, so the chart widget only draws the positions it is handed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class SpecSwitch:
    """Speculation turned on or off, as the agent said (a ``speculation.on``/``.off`` event, stamped
    with the time of the snapshot that first showed it); drawn as a marker on the charts."""

    time: float
    on: bool


@dataclass(frozen=True)
class BenchSpan:
    """A benchmark run in agent time: from its first event seen to its end (finished, failed or
    cancelled); ``end`` None while it is still running."""

    bench_id: str
    start: float
    end: float | None = None

    def holds(self, t: float) -> bool:
        """``t`` falls inside the run (both ends included: a switch stamped at the start or the end
        is the bench's own)."""
        return self.start <= t and (self.end is None or t <= self.end)


@dataclass(frozen=True)
class BenchBand:
    """One bench span as a chart draws it: x in seconds before the newest snapshot, cut to the window."""

    start: float
    end: float
    running: bool


@dataclass(frozen=True)
class ChartMarks:
    """The vertical marks of one time window: switch markers (x, on) and bench bands, x as seconds
    before the newest snapshot (negative), the same axis as the chart's points."""

    switches: tuple[tuple[float, bool], ...] = ()
    benches: tuple[BenchBand, ...] = ()


def chart_marks(
    switches: Iterable[SpecSwitch], spans: Iterable[BenchSpan], *, now: float, window_s: float
) -> ChartMarks:
    """The marks of the last ``window_s`` seconds before ``now`` (the newest snapshot's time).

    A span still running reaches ``now``; a span that ended before the window, or begins after
    ``now``, is not drawn, and neither is any switch inside a span, drawn or not. A switch outside
    every span keeps its marker, exactly as without benches.
    """
    start = now - window_s
    spans = tuple(spans)
    kept = tuple(
        (s.time - now, s.on)
        for s in switches
        if s.time >= start and not any(span.holds(s.time) for span in spans)
    )
    bands = []
    for span in sorted(spans, key=lambda s: s.start):
        end = now if span.end is None else min(span.end, now)
        if end < start or span.start > now:
            continue
        bands.append(BenchBand(max(span.start, start) - now, end - now, running=span.end is None))
    return ChartMarks(kept, tuple(bands))
