"""Logs that follow, and views the operator sets and keeps (real app, real agent on the sim)."""

from __future__ import annotations

from console_testkit import SIM_THRESHOLD, RunningAgent, text_of, until
from textual.widgets import Input, RichLog

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.screens.history import PANELS, HistoryScreen
from console.screens.logs import LogsScreen
from console.widgets.chart_panel import ChartPanel


def make_app(agent: RunningAgent) -> ConsoleApp:
    return ConsoleApp(LocalLink(agent.socket), operator="pilot")


def write_engine_log(agent: RunningAgent, *lines: str) -> None:
    """Lines as SGLang would append them to the engine log the agent serves."""
    with agent.engine_log.open("a", encoding="utf-8") as log:
        for line in lines:
            log.write(line + "\n")


async def test_the_log_follows_new_lines_and_searches_with_a_count_and_n_between_matches(
    agent: RunningAgent,
) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        write_engine_log(agent, "Decode batch. #running-req: 3 marker-one", "Prefill batch. marker-two")
        # Nothing pressed: the tail follows the file as it grows.
        await until(lambda: any("marker-two" in line for line in screen.lines), what="new lines, followed")
        log = screen.query_one("#engine-log", RichLog)
        await until(lambda: any("marker-two" in line.text for line in log.lines), what="them on screen")
        assert "following" in text_of(app, "#log-status")

        write_engine_log(agent, "Decode batch. #running-req: 9 marker-three")
        await until(lambda: any("marker-three" in line for line in screen.lines), what="the third line")
        search = screen.query_one("#log-search", Input)
        search.value = "decode batch"
        await pilot.click("#log-search")
        await pilot.press("enter")
        await until(lambda: len(screen.matches) >= 2, what="the matches")
        count = len(screen.matches)
        # The newest match first, then N goes back and n forward, wrapping; the count says where.
        assert screen.current == count - 1 and f"{count} of {count} matches" in text_of(app, "#log-status")
        await pilot.press("N")
        assert screen.current == count - 2 and f"{count - 1} of {count} matches" in text_of(
            app, "#log-status"
        )
        await pilot.press("n", "n")
        assert screen.current == 0
        assert not screen.following and "holding" in text_of(app, "#log-status")
        # Matches are highlighted where they are.
        highlight = app.console.get_style("$log-match").bgcolor  # the theme's match style
        assert highlight is not None
        for marker in ("marker-one", "marker-three"):
            line = next(s for s in log.lines if marker in s.text)
            assert any(
                f"on {highlight.name}" in str(seg.style) for seg in line if "decode batch" in seg.text.lower()
            )
        # f follows again; a line written now shows up and is counted.
        await pilot.press("f")
        assert screen.following
        write_engine_log(agent, "Decode batch. marker-four")
        await until(lambda: len(screen.matches) == count + 1, what="a new match counted")
        assert f"{count + 1} matches in the engine log" in text_of(app, "#log-status")
        events = screen.query_one("#event-log", RichLog)
        assert not any("bench.progress" in s.text for s in events.lines)


async def test_the_chart_window_is_the_operators_and_stays_put(agent: RunningAgent) -> None:
    app = make_app(agent)
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: len(app.model.snapshots) >= 2, what="snapshots")
        panel = app.screen.query_one("#throughput-panel", ChartPanel)
        await until(lambda: panel.chart.data is not None, what="the first chart")
        assert panel.chart.data is not None and panel.chart.data.window_s == 300.0
        await pilot.press("w")
        await until(lambda: panel.chart.data is not None and panel.chart.data.window_s == 900.0, what="15 m")
        assert "last 15 m" in text_of(app, "#charts-legend")
        seen = len(app.model.snapshots)
        await until(lambda: len(app.model.snapshots) >= seen + 3, what="more snapshots")
        app.paint_now()
        assert app.chart_window_s == 900.0 and panel.chart.data.window_s == 900.0, "the window stays put"

        # r: the agent's one-tick rate beside the smoothed one, in the figures and on the chart.
        await pilot.press("r")
        await until(lambda: "raw, last" in text_of(app, "#figures"), what="the raw value")
        await until(lambda: panel.chart.data is not None and any(s.label.startswith("raw, last")
                    for s in panel.chart.data.series), what="the raw line on the chart")  # fmt: skip
        await pilot.press("r")
        await until(lambda: "raw" not in text_of(app, "#figures"), what="the raw value hidden again")

        # History: every panel, the window the operator chose, the threshold rule labelled.
        await pilot.press("h")
        screen = app.screen
        assert isinstance(screen, HistoryScreen)
        load = screen.query_one("#history-load", ChartPanel)
        await until(lambda: load.chart.data is not None, what="the history panels")
        for key, *_ in PANELS:
            data = screen.query_one(f"#history-{key}", ChartPanel).chart.data
            assert data is not None and data.window_s == 900.0, key
        assert load.chart.data is not None and load.chart.data.hline is not None
        assert load.chart.data.hline.label == f"threshold {SIM_THRESHOLD}"
        assert f"threshold {SIM_THRESHOLD}" in str(load.query_one(".chart-legend").content)
