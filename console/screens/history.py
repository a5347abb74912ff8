"""History: the Grafana view. Throughput, load against the threshold, TTFT and ITL p50/p99, accept
length and KV usage over the window the operator picks (w: 1 m / 5 m / 15 m / 1 h), with the
speculation switches marked on every panel."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Grid
from textual.events import Resize
from textual.widgets import Static

from agent.wire import Snapshot
from console.model import ConsoleModel
from console.model.points import ChartPoint
from console.model.window import window_label
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.session import Session
from console.widgets.chart import ChartData, Rule, Series
from console.widgets.chart_panel import ChartPanel, bench_bands, window_legend
from console.widgets.format import latency
from console.widgets.ticks import Formatter, fmt_count, fmt_ms, fmt_pct, fmt_plain
from console.widgets.windows import accept_note, over, raw_label

CHART_INTERVAL_S = 1.0
WIDE_COLUMNS = 140
"""From this width the six panels sit three by two; below it, two by three."""

Line = tuple[str, Callable[[ChartPoint], float | None], str, str]
"""(label, value, colour, plotext marker)"""

PANELS: tuple[tuple[str, str, Formatter, tuple[Line, ...]], ...] = (
    (
        "throughput",
        "Throughput",
        fmt_count,
        (
            ("output", lambda p: p.output_tok_s, "$series-1", "braille"),
            ("prompt", lambda p: p.prompt_tok_s, "$series-6", "dot"),
        ),
    ),
    (
        "load",
        "Load",
        fmt_count,
        (
            ("running", lambda p: p.running, "$series-2", "braille"),
            ("queued", lambda p: p.queued, "$series-4", "dot"),
        ),
    ),
    (
        "ttft",
        "TTFT",
        fmt_ms,
        (
            ("p50", lambda p: p.ttft_p50_ms, "$series-1", "braille"),
            ("p99", lambda p: p.ttft_p99_ms, "$series-5", "dot"),
        ),
    ),
    (
        "itl",
        "ITL",
        fmt_ms,
        (
            ("p50", lambda p: p.itl_p50_ms, "$series-1", "braille"),
            ("p99", lambda p: p.itl_p99_ms, "$series-5", "dot"),
        ),
    ),
    (
        "accept",
        "Accept length",
        fmt_plain,
        (("tokens per verify", lambda p: p.accept_length, "$series-2", "braille"),),
    ),
    ("kv", "KV used", fmt_pct, (("of the pool", lambda p: p.kv_used_pct, "$series-6", "braille"),)),
)


class HistoryScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("history")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._charts_at = -CHART_INTERVAL_S

    def compose_body(self) -> ComposeResult:
        yield Static(id="charts-legend")
        with Grid(id="history-grid"):
            for key, title, _, _ in PANELS:
                yield ChartPanel(title, id=f"history-{key}")

    def on_resize(self, event: Resize) -> None:
        self.set_class(event.size.width >= WIDE_COLUMNS, "-wide")

    def on_screen_resume(self) -> None:
        self._charts_at = -CHART_INTERVAL_S
        super().on_screen_resume()

    def repaint(self) -> None:
        self._charts_at = -CHART_INTERVAL_S
        super().repaint()

    def paint_body(self, model: ConsoleModel) -> None:
        now = time.monotonic()
        if now - self._charts_at < CHART_INTERVAL_S and model.link.state == "connected":
            return
        self._charts_at = now
        window = self.session.window_s
        marks = model.chart_marks(window)
        markers, bands = marks.switches, bench_bands(marks)
        latest = model.latest or Snapshot(seq=0, time=0.0)
        spec = latest.speculation
        threshold = spec.threshold if spec.threshold_available else None
        notes = panel_notes(latest, model.points.in_window(window))
        self.query_one("#charts-legend", Static).update(
            window_legend(window_label(window), benches=bool(bands))
        )
        for key, _, fmt, lines in PANELS:
            series = tuple(
                Series(label, *model.points.series(value, window), color, marker=marker)
                for label, value, color, marker in lines
            )
            if key == "throughput" and self.session.show_raw:
                one_tick = model.points.series(lambda p: p.output_tok_s_raw, window)
                series = (*series, Series(raw_label(latest.throughput), *one_tick, "$series-4", marker="dot"))
            rule = None
            if key == "load" and threshold:
                history = model.points.series(lambda p: p.threshold, window)
                rule = Rule(float(threshold), f"threshold {threshold}", history=history)
            self.query_one(f"#history-{key}", ChartPanel).show(
                ChartData(
                    series=series, window_s=window, y_format=fmt, markers=markers, bands=bands, hline=rule
                ),
                note=notes.get(key, ""),
            )


def panel_notes(latest: Snapshot, points: list[ChartPoint]) -> dict[str, str]:
    """Beside each panel's title, the window its values cover (the newest snapshot's, as the agent
    states it); a latency panel whose window held percentiles above the top bucket says they are
    drawn at its bound (lower bounds, not values)."""
    notes = {
        "throughput": f"tok/s{over(latest.throughput.window_s)}",
        "ttft": over(latest.latency.window_s).strip(),
        "itl": over(latest.latency.window_s).strip(),
        "accept": accept_note(latest.speculation).strip(),
    }
    above: tuple[tuple[str, list[float | None]], ...] = (
        ("ttft", [p.ttft_p99_ms for p in points if p.ttft_above_top]),
        ("itl", [p.itl_p99_ms for p in points if p.itl_above_top]),
    )
    for key, values in above:
        tops = [v for v in values if v is not None]
        if tops:
            bound = latency(max(tops) / 1000.0, above_top=True)
            notes[key] = f"{notes[key]}; {bound} drawn at the top bucket".lstrip("; ")
    return notes
