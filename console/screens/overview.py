"""Overview: is speculation helping right now, and is the server healthy."""

from __future__ import annotations

import time
from typing import ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.widgets import Static

from agent.profile.words import count_words
from agent.wire import Snapshot, Throughput
from agent.wire.snapshot import OutputCounter
from console.model import ConsoleModel
from console.model.bench import BenchRun
from console.model.window import window_label
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.session import Session
from console.widgets.autopilot import AutopilotLine
from console.widgets.badge import accept_text, badge_text
from console.widgets.chart import ChartData, Rule, Series
from console.widgets.chart_panel import ChartPanel, bench_bands, window_legend
from console.widgets.findings import findings_text
from console.widgets.flow import Flow
from console.widgets.format import latency, num
from console.widgets.ticks import fmt_count
from console.widgets.todo import todo_text
from console.widgets.windows import COUNTER_WORDS, over, raw_label

CHART_INTERVAL_S = 1.0
"""plotext rebuilds a whole figure per draw (~15 ms at 120x40): charts move once a second, the
figures above them with every snapshot."""


def figures_text(snap: Snapshot, *, raw: bool, switched_on_at: float | None = None) -> Flow:
    """The headline numbers, each with the window the agent computed it over. Throughput is the
    agent's count of output tokens (every client together), smoothed; ``raw`` adds the last tick's
    rate on its own line, the value one key away. ``switched_on_at``: the agent's last switch on.
    Each figure is a group of the :class:`Flow`: a narrow screen moves it whole to the next line."""
    t, load, lat, kv = snap.throughput, snap.load, snap.latency, snap.kv
    output = Text.assemble(
        ("Output ", "dim"), (num(t.output_tok_s, unit=" tok/s"), "bold"), (over(t.window_s), "dim")
    )
    prompt = Text.assemble(("prompt ", "dim"), num(t.prompt_tok_s, unit=" tok/s"))
    rate = Text.assemble(num(t.requests_per_s, ".1f"), (" req/s", "dim"))
    flow = Flow(output, prompt, rate)
    if raw:
        flow.add_line(
            Text.assemble(
                (f"{raw_label(t)}: output ", "dim"), (num(t.output_tok_s_raw, unit=" tok/s"), "$note-bold")
            ),
            Text.assemble(("prompt ", "dim"), (num(t.prompt_tok_s_raw, unit=" tok/s"), "$note")),
        )
    counts = Text.assemble(
        ("Running ", "dim"), (num(load.running), "bold"), ("  Queued ", "dim"), (num(load.queued), "bold")
    )
    used = None
    if kv.pool_tokens and kv.used_tokens is not None:
        used = Text.assemble(("KV used ", "dim"), f"{kv.used_tokens / kv.pool_tokens:.0%}")
    since_on = None if switched_on_at is None else snap.time - switched_on_at
    accept = Text("Accept len ", style="dim")
    accept.append_text(accept_text(snap.speculation, load, since_switch_on=since_on))
    flow.add_line(counts, used or "", accept)
    ttft = Text.assemble(
        ("TTFT p50 ", "dim"), latency(lat.ttft_p50_s, lat.ttft_p50_above_top),
        (" p99 ", "dim"), latency(lat.ttft_p99_s, lat.ttft_p99_above_top),
    )  # fmt: skip
    if lat.ttft_count is not None:
        ttft.append(f" ({count_words(lat.ttft_count, 'request')})", style="dim")
    itl = Text.assemble(
        ("ITL p50 ", "dim"), latency(lat.itl_p50_s, lat.itl_p50_above_top),
        (" p99 ", "dim"), latency(lat.itl_p99_s, lat.itl_p99_above_top),
        (f"  {over(lat.window_s).strip()}", "dim"),
    )  # fmt: skip
    return flow.add_line(ttft, itl)


def bench_note(run: BenchRun | None, counter: OutputCounter | None) -> Text | None:
    """While a benchmark runs, say why this screen's tok/s differs from the bench's table: which
    SGLang counter it reads (the agent says, ``Throughput.output_counter``) and what the bench counts."""
    if run is None or run.state != "running":
        return None
    return Text(
        f"Benchmark {run.bench_id} is running. {COUNTER_WORDS[counter]}; prompt tokens are shown "
        "apart. The bench's table counts only its own requests' output tokens, level by level.",
        style="$info",
    )


class OverviewScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("overview")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self._charts_at = -CHART_INTERVAL_S

    def on_screen_resume(self) -> None:
        self._charts_at = -CHART_INTERVAL_S  # back in view: draw the charts at once
        super().on_screen_resume()

    def repaint(self) -> None:
        self._charts_at = -CHART_INTERVAL_S
        super().repaint()

    def compose_body(self) -> ComposeResult:
        yield Static(id="badge", classes="value")
        yield Static(id="todo", classes="value")
        yield AutopilotLine(id="autopilot", classes="value")
        yield Static(id="figures", classes="value")
        # The findings before the charts: on a small terminal the charts give way, never the findings
        # (at 80x24 a long speculation reason and a benchmark's note pushed them off the screen).
        yield Static(id="findings", classes="value")
        yield Static(id="tokens-note")
        yield Static(id="charts-legend")
        with Horizontal(id="charts"):
            yield ChartPanel("tok/s", id="throughput-panel")
            yield ChartPanel("requests", id="load-panel")

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            self.query_one("#badge", Static).update("waiting for the first snapshot from the agent…")
            return
        raw = self.session.show_raw
        self.query_one("#badge", Static).update(badge_text(snap.speculation, snap.load, stale=model.stale))
        self.query_one("#todo", Static).update(todo_text(model.health.items, model.health.offered))
        self.query_one(AutopilotLine).show(snap.autopilot, snap.speculation.pinned_steps)
        figures = figures_text(snap, raw=raw, switched_on_at=model.switched_on_at())
        self.query_one("#figures", Static).update(figures)
        note = bench_note(model.bench.latest, snap.throughput.output_counter)
        note_widget = self.query_one("#tokens-note", Static)
        note_widget.display = note is not None
        if note is not None:
            note_widget.update(note)
        self.query_one("#findings", Static).update(findings_text(model.health.items, snap.time))
        now = time.monotonic()
        if now - self._charts_at < CHART_INTERVAL_S and model.link.state == "connected":
            return
        self._charts_at = now
        self._paint_charts(model, raw=raw)

    def action_do_offer(self) -> None:
        self.do_offer()

    @work(exclusive=True, group="control")
    async def do_offer(self) -> None:
        """The action the most severe finding offers: planned, confirmed and audited like any change."""
        say = self.query_one("#todo", Static).update
        offered = self.session.model.health.offered
        if offered is None or offered.offer is None:
            say(Text("What to do: no finding offers an action now.", style="dim"))
            return
        if self.session.readonly:
            say(Text("Read-only: this console changes nothing.", style="$info"))
            return
        await self.session.plan_confirm_apply(offered.offer.kind, offered.offer.value, say)

    def _paint_charts(self, model: ConsoleModel, *, raw: bool) -> None:
        window = self.session.window_s
        marks = model.chart_marks(window)
        markers, bands = marks.switches, bench_bands(marks)
        legend = window_legend(window_label(window), benches=bool(bands))
        self.query_one("#charts-legend", Static).update(legend)
        points = model.points
        latest = model.latest
        t = latest.throughput if latest is not None else Throughput()
        series = [
            Series(f"output{over(t.window_s)}", *points.series(lambda p: p.output_tok_s, window), "$series-1")
        ]
        if raw:
            one_tick = points.series(lambda p: p.output_tok_s_raw, window)
            series.append(Series(raw_label(t), *one_tick, "$series-4", marker="dot"))
        self.query_one("#throughput-panel", ChartPanel).show(
            ChartData(series=tuple(series), window_s=window, y_format=fmt_count, markers=markers, bands=bands)
        )
        threshold = None
        if latest is not None and latest.speculation.threshold_available and latest.speculation.threshold:
            threshold = latest.speculation.threshold
        rule = None
        if threshold:
            history = points.series(lambda p: p.threshold, window)
            rule = Rule(float(threshold), f"threshold {threshold}", history=history)
        self.query_one("#load-panel", ChartPanel).show(
            ChartData(
                series=(
                    Series("running", *points.series(lambda p: p.running, window), "$series-2"),
                    Series("queued", *points.series(lambda p: p.queued, window), "$series-4"),
                ),
                window_s=window,
                y_format=fmt_count,
                markers=markers,
                bands=bands,
                hline=rule,
            )
        )
