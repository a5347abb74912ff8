"""A time-series chart on textual-plotext that rebuilds only when its data changed.

plotext redraws the whole figure on every render (tens of milliseconds on a big terminal), so the
chart keeps the inputs it last drew and ignores a redraw request with the same ones.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual_plotext import PlotextPlot


@dataclass(frozen=True)
class Series:
    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    color: str


@dataclass(frozen=True)
class ChartData:
    title: str
    series: tuple[Series, ...]
    window_s: float
    markers: tuple[tuple[float, bool], ...] = ()
    hline: float | None = None
    hline_label: str = ""
    y_min: float | None = 0.0
    x_range: tuple[float, float] | None = None
    """Set for a chart whose x is not time (the bench's concurrency axis)."""


class TimeChart(PlotextPlot):
    """Seconds before now on x (negative), values on y; vertical markers and one horizontal rule."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: ChartData | None = None
        self.builds = 0

    def show(self, data: ChartData) -> bool:
        """Draw ``data``; returns False when it is what is already drawn (nothing to do)."""
        if data == self._data:
            return False
        self._data = data
        plt = self.plt
        plt.clear_figure()
        plt.title(data.title)
        if data.x_range is not None:
            plt.xlim(*data.x_range)
            plt.xlabel("concurrency")
        else:
            plt.xlim(-data.window_s, 0)
            plt.xlabel("seconds ago")
        top = 1.0
        for s in data.series:
            if s.ys:
                top = max(top, max(s.ys))
                plt.plot(list(s.xs), list(s.ys), label=s.label, color=s.color, marker="braille")
        if data.hline is not None:
            top = max(top, data.hline)
            plt.hline(data.hline, color="orange")
        if data.y_min is not None:
            plt.ylim(data.y_min, top * 1.1)
        for x, on in data.markers:
            plt.vline(x, color="green" if on else "red")
        self.builds += 1
        self.refresh()
        return True
