"""Issue 39, item 8: at 80 columns every field that matters shows, wrapping where a line is long.
Against the real agent on the simulated engine and the real app (Pilot); fails on the code before
issue 39, where the engine log's long lines were cut (Textual's RichLog wraps to at least 78
columns, wider than its pane at 80), the events pane dropped words after a resize (its lines kept
the old width), the GPU header lost "CUDA", the KV legend the free count and Controls "changes a
minute"."""

from __future__ import annotations

import re
from pathlib import Path

from console_testkit import RunningAgent, screen_text, until
from textual.widget import Widget
from textual.widgets import RichLog

from console.app import ConsoleApp
from console.link.local import LocalLink
from console.link.replay import ReplayLink
from console.screens.logs import LogsScreen

RECORDING = Path(__file__).parent / "data" / "local-sim.jsonl"
"""The snapshot tests' recording of the real agent on the sim (a benchmark's band, one finding)."""
LONG_LINE = (
    "[2026-12-06 06:58:31] Decode batch, #running-req: 71, token usage: 0.17, accept len: "
    "2.68, cuda graph: True, gen throughput (token/s): 1030.12, #queue-req: 3, tail-word-zebra"
)


def words(text: str) -> str:
    return " ".join(text.split())


def pane_text(app: ConsoleApp, widget: Widget) -> str:
    """What the terminal shows inside ``widget``'s scrollable content (no border, no scrollbar)."""
    region = widget.scrollable_content_region
    lines = screen_text(app).splitlines()[region.y : region.bottom]
    return "\n".join(line[region.x : region.right] for line in lines)


async def test_logs_wrap_at_80_columns_and_wrap_again_after_a_resize(agent: RunningAgent) -> None:
    app = ConsoleApp(LocalLink(agent.socket), operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        for value in (100, 120, 100, 120):
            await agent.act("threshold", value, operator="pilot")
        await pilot.press("l")
        screen = app.screen
        assert isinstance(screen, LogsScreen)
        engine = screen.query_one("#engine-log", RichLog)
        events = screen.query_one("#event-log", RichLog)
        with agent.engine_log.open("a", encoding="utf-8") as log:  # enough for a scrollbar
            log.write("".join(f"{n} {LONG_LINE}\n" for n in range(40)))
        await until(lambda: any("39 [2026" in line.text for line in engine.lines), what="the long lines")
        await until(lambda: len(screen.event_lines) >= 4, what="the events")
        await pilot.resize_terminal(80, 24)
        await until(lambda: app.size == (80, 24), what="the resize to 80x24")
        await pilot.pause()
        await until(lambda: engine.scrollable_content_region.width < 78, what="the panes to shrink")
        await pilot.pause()
        for pane in (engine, events):
            pane.scroll_end(animate=False)
        await pilot.pause()
        for pane in (engine, events):  # nothing past the pane's edge: no line is cut
            assert pane.virtual_size.width <= pane.scrollable_content_region.width, pane.id
        shown = words(pane_text(app, engine))
        assert words(f"39 {LONG_LINE}") in shown, pane_text(app, engine)  # wrapped, every word on screen
        last = words(screen.event_lines[-1].plain)
        assert last in words(pane_text(app, events)), (last, pane_text(app, events))


async def test_the_gpu_header_kv_legend_and_autopilot_row_are_whole_at_80_columns(
    sim_gpus_agent: RunningAgent,
) -> None:
    app = ConsoleApp(LocalLink(sim_gpus_agent.socket), operator="pilot")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.model.link.state == "connected" and app.model.readings, what="readings")
        await pilot.press("g")
        await until(lambda: "driver" in screen_text(app), what="the GPU header")
        assert re.search(r"CUDA \d", words(screen_text(app))), screen_text(app)
        await pilot.press("k")
        await until(lambda: "■ used" in screen_text(app), what="the KV legend")
        assert re.search(r"■ free [\d,]+ \(\d+%\)", screen_text(app)), screen_text(app)
        await pilot.press("c")
        await until(
            lambda: "autopilot" in screen_text(app) and "Turn on" in screen_text(app), what="Controls"
        )
        await pilot.pause()
        assert "changes a minute" in words(screen_text(app)), screen_text(app)


async def test_the_overviews_findings_stay_on_screen_at_80x24() -> None:
    """The charts give way to the findings: at 80x24 the recording's finding (its title and what to
    do) was below the screen's bottom, under the charts; only the status line's count said it."""
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="pilot")
    async with app.run_test(size=(80, 24)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        await pilot.pause()
        app.paint_now()
        await pilot.pause()
        items = app.model.health.items
        assert items, "the recording has a finding"
        shown = words(screen_text(app))
        for item in items:
            assert words(item.finding.title) in shown, shown
            assert words(item.finding.action)[:40] in shown, shown


async def test_a_figure_is_never_split_across_two_lines_at_80_or_100_columns() -> None:
    """Each figure keeps to one line, its value with its unit and its label: the badge read
    "threshold 130 · 65" with "running" below at 100 columns, the latencies "over 29" with "s"
    below at 80, and Controls "at most 4" with "changes a minute" below."""
    app = ConsoleApp(ReplayLink(RECORDING, speed=0), clock=lambda: 1000.0, operator="pilot")
    async with app.run_test(size=(100, 30)) as pilot:
        await until(lambda: app.model.link.state == "ended", what="the whole recording")
        snap = app.model.latest
        assert snap is not None and snap.speculation.threshold and snap.load.running is not None
        window = snap.latency.window_s
        assert window is not None
        expected = {
            "o": [
                f"threshold {snap.speculation.threshold} · {snap.load.running} running",
                f"over {window:.0f} s",
            ],
            "c": [
                f"threshold {snap.speculation.threshold} · {snap.load.running} running",
                "changes a minute",
            ],
        }
        for size in ((100, 30), (80, 24)):
            await pilot.resize_terminal(*size)
            await until(lambda s=size: app.size == s, what=f"the resize to {size}")
            for key, figures in expected.items():
                await pilot.press(key)
                await pilot.pause()
                app.paint_now()
                await pilot.pause()
                lines = [words(line) for line in screen_text(app).splitlines()]
                for figure in figures:
                    assert any(figure in line for line in lines), (size, key, figure, screen_text(app))
                if key == "c":
                    limit = next(line for line in lines if "changes a minute" in line)
                    assert re.search(r"at most \S+ changes a minute", limit), (size, limit)
