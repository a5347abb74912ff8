"""A chart on textual-plotext with round ticks in the label's unit, that rebuilds only when its data changed.

plotext redraws the whole figure on every render (tens of milliseconds on a big terminal), so the
chart keeps the inputs it last drew and ignores a redraw request with the same ones. Ticks are chosen
here (``console.widgets.ticks``), not by plotext: round values, the unit on every label, and as many
as the chart's height has room for. The legend is drawn by the panel around the chart
(``console.widgets.chart_panel``), where it can name styles plotext's own legend cannot (the
threshold rule, the switch markers, the bench bands).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from rich.console import Console
from textual.app import RenderResult
from textual.color import Color
from textual.events import Resize
from textual_plotext import PlotextPlot

from console.widgets.ticks import Formatter, axis_labels, even_ticks, fmt_count, time_ticks

FALLBACK_RGB = (128, 128, 128)
"""A style with no colour (a theme that leaves one out): drawn mid-grey rather than not at all."""


def style_rgb(console: Console, name: str) -> tuple[int, int, int]:
    """A named style's colour (console.theme), as the RGB plotext draws: plotext's own named colours
    are ANSI ones, which each terminal draws its own way; a legend must show the colour the line has."""
    color = console.get_style(name, default="none").color
    if color is None:
        return FALLBACK_RGB
    r, g, b = color.get_truecolor()
    return (r, g, b)


@dataclass(frozen=True)
class Series:
    label: str
    xs: tuple[float, ...]
    ys: tuple[float, ...]
    color: str
    """A named style of console.theme ("$series-1", "$ok"...): its colour is the line's."""
    marker: str = "braille"
    """plotext's line marker: "braille" (thin), "dot", "hd", or one character."""
    points: str | None = None
    """A glyph drawn at each measured point as well (bench levels), so overlapping lines stay apart."""
    intervals: tuple[tuple[float, float] | None, ...] = ()
    """Per point, the interval drawn as a bar through it (a bench arm's 95 % interval); empty: none."""


@dataclass(frozen=True)
class Rule:
    """A horizontal (threshold) or vertical (bench threshold) line with its label written beside it."""

    value: float
    label: str
    color: str = "$rule"
    history: tuple[tuple[float, ...], tuple[float, ...]] | None = None
    """For a time chart: the rule's value over the window (a threshold that moved), drawn as a step
    line instead of one level across the whole window."""


@dataclass(frozen=True)
class Band:
    """A span of x shaded from the bottom of the chart to its top, behind every line (a benchmark run),
    its label written at its top left."""

    start: float
    end: float
    label: str
    color: str = "$band"


BAND_GLYPH = "░"
"""The band's shading: a light shade in a dim colour reads as a background; lines cut through it."""


@dataclass(frozen=True)
class ChartData:
    series: tuple[Series, ...]
    window_s: float = 300.0
    """Time charts: x runs from −window_s to 0 (now)."""
    y_format: Formatter = fmt_count
    markers: tuple[tuple[float, bool], ...] = ()
    """Speculation switched on (True) or off (False) at these x."""
    bands: tuple[Band, ...] = ()
    """Shaded spans of x behind the lines (time charts: a benchmark running)."""
    hline: Rule | None = None
    vline: Rule | None = None
    y_min: float = 0.0
    y_min_step: float = 0.0
    """The least step between y ticks: 1 for counts (requests, tok/s), so an empty axis reads 0 / 1."""
    x_range: tuple[float, float] | None = None
    """Set for a chart whose x is not time (the bench's log2 concurrency axis)."""
    x_ticks: tuple[tuple[float, str], ...] = field(default=())
    """Ticks for a non-time x axis; time charts get round "−5m … now" ticks."""


def y_tick_count(height: int) -> int:
    """How many steps the y axis has room for: one per three rows, between two and four."""
    return max(2, min(4, (height - 3) // 3))


def data_top(data: ChartData) -> float:
    """The highest y anything of ``data`` reaches (lines, interval bars, the threshold rule)."""
    top = 0.0
    if data.hline is not None:
        top = max(top, data.hline.value)
        if data.hline.history is not None and data.hline.history[1]:
            top = max(top, max(data.hline.history[1]))
    for s in data.series:
        top = max(
            [top, *s.ys, *(span[1] for _, span in zip(s.xs, s.intervals, strict=False) if span is not None)]
        )
    return top


PLOT_FRAME_ROWS = 3
"""plotext's rows around the canvas: the top frame, the x axis, its labels."""


def y_axis(data: ChartData, top: float, height: int) -> tuple[list[float], float]:
    """The y ticks at this height, evenly spaced on the canvas rows, and the axis top
    (``ticks.even_ticks``: at or a little above the last tick)."""
    rows = max(2, height - PLOT_FRAME_ROWS)
    min_step = data.y_min_step or (1.0 if data.y_format is fmt_count else 0.0)
    return even_ticks(data.y_min, max(top, data.y_min), rows, y_tick_count(height), min_step)


def labelled_ticks(ticks: list[float], labels: list[str], height: int) -> tuple[list[float], list[str]]:
    """The ticks that get a label at this height. A chart of one canvas row (80x24's Bench chart)
    has room for one: the top, which says the scale. Two labels on one row made plotext draw
    either one, so the same data read "1k" in one run and "0" in the next."""
    if height - PLOT_FRAME_ROWS >= 2 or len(ticks) < 2:
        return ticks, labels
    return ticks[-1:], labels[-1:]


def y_ticks_of(data: ChartData, top: float, height: int) -> list[float]:
    """The y ticks at this height."""
    return y_axis(data, top, height)[0]


class TimeChart(PlotextPlot):
    """Seconds before now on x (negative), values on y; vertical markers, one rule each way."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._data: ChartData | None = None
        self._top = 1.0
        self._left = 0.0
        self._ticks_for_height = -1
        self._built_for_height = -1
        self._built_theme = ""
        """The theme the colours were drawn in: a new theme draws the same data again."""
        self.builds = 0

    @property
    def data(self) -> ChartData | None:
        return self._data

    def show(self, data: ChartData) -> bool:
        """Draw ``data``; returns False when it is what is already drawn (nothing to do)."""
        if data == self._data and self.app.theme == self._built_theme:
            return False
        self._data = data
        self._build(data)
        self.builds += 1
        self.refresh()
        return True

    def _rgb(self, name: str) -> tuple[int, int, int]:
        return style_rgb(self.app.console, name)

    def _build(self, data: ChartData) -> None:
        rgb = self._rgb
        self._built_theme = self.app.theme
        plt = self.plt
        plt.clear_figure()
        if data.x_range is not None:
            plt.xlim(*data.x_range)
            ticks = data.x_ticks
        else:
            plt.xlim(-data.window_s, 0)
            ticks = tuple(time_ticks(data.window_s))
        if ticks:
            plt.xticks([x for x, _ in ticks], [label for _, label in ticks])
        top = data_top(data)
        left = data.x_range[0] if data.x_range is not None else -data.window_s
        self._built_for_height = self.size.height
        if data.bands:  # first, so every line is drawn over them; they reach the top tick of this height
            y_ticks, y_top = y_axis(data, top, self.size.height)
            for band in data.bands:
                plt.plot([band.start, band.end], [y_top, y_top], color=rgb(band.color),
                         marker=BAND_GLYPH, fillx=y_ticks[0])  # fmt: skip
        rule = data.hline
        if rule is not None:
            if rule.history is not None and rule.history[0]:
                plt.plot(
                    list(rule.history[0]), list(rule.history[1]), color=rgb(rule.color), marker="braille"
                )
            elif data.bands:  # plotext draws its own rules under every plot: the band would hide it
                right = data.x_range[1] if data.x_range is not None else 0.0
                plt.plot([left, right], [rule.value, rule.value], color=rgb(rule.color), marker="─")
            else:
                plt.hline(rule.value, color=rgb(rule.color))
        for s in data.series:
            for x, span in zip(s.xs, s.intervals, strict=False):
                if span is not None:  # the bars first: each arm's line and points are drawn over them
                    plt.plot([x, x], [span[0], span[1]], color=rgb(s.color), marker="│")
        for s in data.series:
            if s.ys:
                plt.plot(list(s.xs), list(s.ys), color=rgb(s.color), marker=s.marker)
        for s in data.series:  # the point glyphs last, so a later line never hides an earlier arm's points
            if s.ys and s.points:
                plt.scatter(list(s.xs), list(s.ys), color=rgb(s.color), marker=s.points)
        for x, on in data.markers:
            plt.vline(x, color=rgb("$ok" if on else "$bad"))
        if data.vline is not None:
            plt.vline(data.vline.value, color=rgb(data.vline.color))
        self._top = top
        self._ticks_for_height = -1  # y ticks depend on the height: set at render time
        self._left = left

    def _apply_y_ticks(self, height: int) -> None:
        rgb = self._rgb
        data = self._data
        if data is None or height == self._ticks_for_height:
            return
        self._ticks_for_height = height
        ticks, y_top = y_axis(data, self._top, height)
        self.plt.ylim(ticks[0], y_top)
        shown, labels = labelled_ticks(ticks, axis_labels(data.y_format, ticks), height)
        self.plt.yticks(shown, labels)
        # Rule labels sit on their line at the left (a threshold) or the top (a vertical rule), in the
        # canvas colour so the label reads as a gap in the line.
        canvas = Color.parse(self.app.theme_variables["surface"]).rgb
        if data.hline is not None:
            at = (
                data.hline.history[1][0] if data.hline.history and data.hline.history[1] else data.hline.value
            )
            self.plt.text(f" {data.hline.label} ", self._left, at, color=rgb(data.hline.color),
                          background=canvas, alignment="left")  # fmt: skip
        if data.vline is not None:
            self.plt.text(f" {data.vline.label} ", data.vline.value, y_top, color=rgb(data.vline.color),
                          background=canvas, alignment="left")  # fmt: skip
        for band in data.bands if height - PLOT_FRAME_ROWS >= 6 else ():  # a short chart: the legend names it
            self.plt.text(f" {band.label} ", band.start, y_top, color=rgb("$muted"), background=canvas,
                          alignment="left")  # fmt: skip

    def render(self) -> RenderResult:
        if self._data is not None and self._data.bands and self.size.height != self._built_for_height:
            self._build(self._data)  # the bands were filled to the top tick of another height
        self._apply_y_ticks(self.size.height)
        return super().render()

    def on_resize(self, event: Resize) -> None:
        if self._data is not None:
            self._build(self._data)  # text labels were placed for the old height: place them again
