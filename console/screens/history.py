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

from console.model import ConsoleModel
from console.model.points import ChartPoint
from console.model.window import window_label
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.widgets.chart import ChartData, Rule, Series
from console.widgets.chart_panel import ChartPanel, window_legend
from console.widgets.ticks import Formatter, fmt_count, fmt_ms, fmt_pct, fmt_plain

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
            ("output tok/s", lambda p: p.output_tok_s, "cyan", "braille"),
            ("prompt tok/s", lambda p: p.prompt_tok_s, "blue", "dot"),
        ),
    ),
    (
        "load",
        "Load",
        fmt_count,
        (
            ("running", lambda p: p.running, "green", "braille"),
            ("queued", lambda p: p.queued, "magenta", "dot"),
        ),
    ),
    (
        "ttft",
        "TTFT",
        fmt_ms,
        (
            ("p50", lambda p: p.ttft_p50_ms, "cyan", "braille"),
            ("p99", lambda p: p.ttft_p99_ms, "yellow", "dot"),
        ),
    ),
    (
        "itl",
        "ITL",
        fmt_ms,
        (
            ("p50", lambda p: p.itl_p50_ms, "cyan", "braille"),
            ("p99", lambda p: p.itl_p99_ms, "yellow", "dot"),
        ),
    ),
    (
        "accept",
        "Accept length",
        fmt_plain,
        (("tokens per verify", lambda p: p.accept_length, "green", "braille"),),
    ),
    ("kv", "KV used", fmt_pct, (("of the pool", lambda p: p.kv_used_pct, "blue", "braille"),)),
)


class HistoryScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("history")]

    def __init__(self) -> None:
        super().__init__()
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
        window = self.console.chart_window_s
        markers = tuple(model.switches_in(window))
        latest = model.latest
        spec = latest.speculation if latest is not None else None
        threshold = spec.threshold if spec is not None and spec.threshold_available else None
        self.query_one("#charts-legend", Static).update(window_legend(window_label(window)))
        for key, _, fmt, lines in PANELS:
            series = tuple(
                Series(label, *model.points.series(value, window), color, marker=marker)
                for label, value, color, marker in lines
            )
            if key == "throughput" and self.console.show_raw:
                gauge = model.points.series(lambda p: p.gauge_tok_s, window)
                series = (*series, Series("raw (SGLang gauge)", *gauge, "magenta", marker="dot"))
            rule = None
            if key == "load" and threshold:
                history = model.points.series(lambda p: p.threshold, window)
                rule = Rule(float(threshold), f"threshold {threshold}", history=history)
            self.query_one(f"#history-{key}", ChartPanel).show(
                ChartData(series=series, window_s=window, y_format=fmt, markers=markers, hline=rule)
            )
