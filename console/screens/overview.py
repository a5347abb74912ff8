"""Overview: is speculation helping right now, and is the server healthy."""

from __future__ import annotations

import time

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Static

from agent.wire import Snapshot
from console.model import ConsoleModel
from console.screens.base import LiveScreen
from console.widgets.autopilot import AutopilotLine
from console.widgets.badge import badge_text
from console.widgets.chart import ChartData, Series, TimeChart
from console.widgets.format import ms, num

WINDOW_S = 300.0
MIN_WINDOW_S = 60.0
CHART_INTERVAL_S = 1.0
"""plotext rebuilds a whole figure per draw (~15 ms at 120x40): charts move once a second, the
figures above them with every snapshot."""


def chart_window(model: ConsoleModel) -> float:
    """Five minutes, or less while there is less history, so a fresh console uses the chart's width."""
    if len(model.snapshots) < 2:
        return MIN_WINDOW_S
    span = model.snapshots[-1].time - model.snapshots[0].time
    return max(MIN_WINDOW_S, min(WINDOW_S, span))


_SEVERITY_STYLE = {"info": "cyan", "warning": "yellow", "critical": "bold red"}


def figures_text(snap: Snapshot) -> Text:
    t, load, lat, spec = snap.throughput, snap.load, snap.latency, snap.speculation
    text = Text()
    text.append("Throughput ", style="dim")
    text.append(num(t.output_tok_s, unit=" tok/s"), style="bold")
    text.append("   Running ", style="dim")
    text.append(num(load.running), style="bold")
    text.append("  Queued ", style="dim")
    text.append(num(load.queued), style="bold")
    text.append("   Accept len ", style="dim")
    text.append(num(spec.accept_length, ".2f"), style="bold")
    text.append("\nTTFT p50 ", style="dim")
    text.append(ms(lat.ttft_p50_s))
    text.append(" p99 ", style="dim")
    text.append(ms(lat.ttft_p99_s))
    text.append("   ITL p50 ", style="dim")
    text.append(ms(lat.itl_p50_s))
    text.append(" p99 ", style="dim")
    text.append(ms(lat.itl_p99_s))
    text.append("   req/s ", style="dim")
    text.append(num(t.requests_per_s, ".1f"))
    return text


def findings_text(snap: Snapshot) -> Text:
    if not snap.findings:
        return Text("✓ no health findings", style="green")
    text = Text()
    for n, f in enumerate(snap.findings):
        if n:
            text.append("\n")
        text.append(f"● {f.title}", style=_SEVERITY_STYLE.get(f.severity, ""))
        text.append(f" — {f.explanation} ", style="dim")
        text.append(f"→ {f.action}")
    return text


class OverviewScreen(LiveScreen):
    def __init__(self) -> None:
        super().__init__()
        self._charts_at = -CHART_INTERVAL_S

    def on_screen_resume(self) -> None:
        self._charts_at = -CHART_INTERVAL_S  # back in view: draw the charts at once
        super().on_screen_resume()

    def compose_body(self) -> ComposeResult:
        yield Static(id="badge", classes="value")
        yield AutopilotLine(id="autopilot", classes="value")
        yield Static(id="figures", classes="value")
        with Horizontal(id="charts"):
            yield TimeChart(id="throughput-chart", classes="chart")
            yield TimeChart(id="load-chart", classes="chart")
        yield Static(id="findings", classes="value")

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            self.query_one("#badge", Static).update("waiting for the first snapshot from the agent…")
            return
        self.query_one("#badge", Static).update(badge_text(snap.speculation))
        self.query_one(AutopilotLine).show(snap.autopilot)
        self.query_one("#figures", Static).update(figures_text(snap))
        self.query_one("#findings", Static).update(findings_text(snap))
        now = time.monotonic()
        if now - self._charts_at < CHART_INTERVAL_S and model.link.state == "connected":
            return
        self._charts_at = now
        window = chart_window(model)
        markers = tuple(model.switches_in(window))
        xs, ys = model.series(lambda s: s.throughput.output_tok_s, window)
        self.query_one("#throughput-chart", TimeChart).show(
            ChartData(
                title="tok/s  │ spec on/off",
                series=(Series("tok/s", tuple(xs), tuple(ys), "cyan"),),
                window_s=window,
                markers=markers,
            )
        )
        rx, ry = model.series(lambda s: s.load.running, window)
        qx, qy = model.series(lambda s: s.load.queued, window)
        threshold = snap.speculation.threshold if snap.speculation.threshold_available else None
        self.query_one("#load-chart", TimeChart).show(
            ChartData(
                title="running, queued  ─ threshold",
                series=(
                    Series("running", tuple(rx), tuple(ry), "green"),
                    Series("queued", tuple(qx), tuple(qy), "magenta"),
                ),
                window_s=window,
                hline=float(threshold) if threshold else None,
            )
        )
