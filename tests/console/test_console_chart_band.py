"""The time chart draws a band where it is told to, behind its lines: shaded, labelled, with the lines
and the threshold rule drawn through it (console.widgets.chart). Which spans are bands is the model's
business (test_console_marks.py); here the chart is handed one and its rendered text is read."""

from __future__ import annotations

from textual.app import App, ComposeResult

from console.widgets.chart import BAND_GLYPH, Band, ChartData, Rule, Series, TimeChart

XS = tuple(float(x) for x in range(-300, 1, 5))
FLAT = Series("flat", XS, tuple(20.0 for _ in XS), "$series-1")
WIDTH, HEIGHT = 80, 20


class ChartApp(App[None]):
    def compose(self) -> ComposeResult:
        yield TimeChart(id="chart")


async def rendered(data: ChartData) -> list[str]:
    app = ChartApp()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        chart = app.query_one(TimeChart)
        chart.show(data)
        await pilot.pause()
        return chart.render().plain.splitlines()  # type: ignore[union-attr]


def band_columns(lines: list[str]) -> set[int]:
    return {i for line in lines for i, ch in enumerate(line) if ch == BAND_GLYPH}


async def test_no_band_no_shade() -> None:
    lines = await rendered(ChartData(series=(FLAT,), window_s=300.0))
    assert not band_columns(lines)


async def test_the_band_is_shaded_over_its_span_only_and_labelled() -> None:
    lines = await rendered(ChartData(series=(FLAT,), window_s=300.0, bands=(Band(-200.0, -100.0, "bench"),)))
    columns = band_columns(lines)
    assert columns, "the band is drawn"
    span = max(columns) - min(columns) + 1
    plot = len(lines[0].rstrip()) - lines[0].index("┌")  # the canvas, from its left corner to its right edge
    assert abs(span / plot - 1 / 3) < 0.08, f"a third of the window wide: {span} of {plot} columns"
    assert min(columns) > plot / 4, "it starts a third of the way in, not at the left edge"
    assert any(" bench " in line for line in lines), "labelled"
    shaded_rows = [line for line in lines if BAND_GLYPH in line]
    assert len(shaded_rows) >= HEIGHT - 6, "from the bottom of the chart to its top"


async def test_the_lines_and_the_threshold_are_drawn_over_the_band() -> None:
    high = Series("high", XS, tuple(50.0 for _ in XS), "$series-1")
    rule = Rule(30.0, "threshold 30")
    data = ChartData(series=(high,), window_s=300.0, bands=(Band(-300.0, 0.0, "bench"),), hline=rule)
    lines = await rendered(data)
    threshold_row = next(line for line in lines if "threshold 30" in line)
    assert BAND_GLYPH not in threshold_row and "─" * 20 in threshold_row, "the rule crosses the whole band"
    series_row = next(line for line in lines if sum("\u2801" <= ch <= "\u28ff" for ch in line) > 20)
    assert BAND_GLYPH not in series_row, "the series' line crosses it too"
    assert sum(BAND_GLYPH in line for line in lines) >= HEIGHT - 8, "the rest of the band is shaded"


async def test_after_a_resize_the_band_still_reaches_the_top() -> None:
    """The band is filled to the top tick, which depends on the height: a new height refills it."""
    app = ChartApp()
    async with app.run_test(size=(WIDTH, HEIGHT)) as pilot:
        chart = app.query_one(TimeChart)
        chart.show(ChartData(series=(FLAT,), window_s=300.0, bands=(Band(-200.0, -100.0, "bench"),)))
        await pilot.pause()
        await pilot.resize_terminal(WIDTH, 2 * HEIGHT)
        await pilot.pause()
        lines = chart.render().plain.splitlines()  # type: ignore[union-attr]
    assert len(lines) == 2 * HEIGHT
    rows = [n for n, line in enumerate(lines) if BAND_GLYPH in line or " bench " in line]
    assert rows[0] == 1 and len(rows) >= 2 * HEIGHT - 6, "from the first canvas row down to the bottom"
