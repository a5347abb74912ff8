"""A chart with its title and legend: every line, rule and marker named in its own colour and style.

plotext's legend knows only plotted series; the threshold rule and the speculation switch markers
are lines too, and an operator must be able to tell which is which without guessing. The markers and
the bench bands are the same on every time chart of a screen: ``window_legend`` names them once.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from console.model.marks import ChartMarks
from console.widgets.chart import BAND_GLYPH, Band, ChartData, TimeChart

_STYLE_GLYPH = {"braille": "⣤", "dot": "•", "hd": "▄", "fhd": "▄", "sd": "▄"}


def legend_text(title: str, data: ChartData | None, *, note: str = "") -> Text:
    """One row, cut with an ellipsis when narrow: two panels side by side keep their charts level
    (a legend that wrapped on one of them pushed its chart a row down at 80 columns)."""
    text = Text(title, style="bold", no_wrap=True, overflow="ellipsis")
    if note:
        text.append(f" {note}", style="dim")
    if data is None:
        return text
    for s in data.series:
        glyph = s.points or _STYLE_GLYPH.get(s.marker, s.marker)
        text.append("  ")
        _bold(text, glyph, s.color)
        text.append(f" {s.label}")
    if any(span is not None for s in data.series for span in s.intervals):
        text.append("  │ 95 % interval", style="dim")
    for rule, glyph in ((data.hline, "─"), (data.vline, "│")):
        if rule is not None:
            text.append("  ")
            _bold(text, glyph, rule.color)
            text.append(f" {rule.label}")
    return text


def _bold(text: Text, glyph: str, style: str) -> None:
    """A legend glyph in a chart's named style (console.theme), bold: the line's own colour."""
    start = len(text)
    text.append(glyph, style=style)
    text.stylize("bold", start, len(text))


def bench_bands(marks: ChartMarks) -> tuple[Band, ...]:
    """The model's bench spans as the chart's shaded bands, one "bench" label each."""
    return tuple(Band(b.start, b.end, "bench") for b in marks.benches)


def window_legend(window_label: str, *, switches: bool = True, benches: bool = False) -> Text:
    """The line over a group of time charts: their window (and the key that changes it) and what
    the vertical markers on every one of them mean; ``benches``: a bench band is in view, and its
    words say why the switches inside it have no marker (the bench forced them). The bands are named
    here, once for every chart, like the markers; the line stays one row on a 100-column terminal."""
    text = Text.assemble(("last ", "dim"), (window_label, "bold"), (" (w changes it)", "dim"))
    if switches:
        text.append("   markers: ", style="dim")
        _bold(text, "│", "$ok")
        text.append(" speculation on  ")
        _bold(text, "│", "$bad")
        text.append(" off")
    if benches:
        text.append("   ")
        _bold(text, BAND_GLYPH * 2, "$band")
        text.append(" bench: its own switches unmarked")
    return text


class ChartPanel(Vertical):
    """Title and legend on top (wrapping when narrow), the chart below."""

    DEFAULT_CSS = """
    ChartPanel { height: 1fr; }
    ChartPanel > .chart-legend { height: 1; }
    ChartPanel > TimeChart { height: 1fr; }
    """

    def __init__(self, title: str, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.title = title

    def compose(self) -> ComposeResult:
        yield Static(legend_text(self.title, None), classes="chart-legend")
        yield TimeChart(classes="chart")

    @property
    def chart(self) -> TimeChart:
        return self.query_one(TimeChart)

    def show(self, data: ChartData, *, note: str = "") -> bool:
        self.query_one(".chart-legend", Static).update(legend_text(self.title, data, note=note))
        return self.chart.show(data)
