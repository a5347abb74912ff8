"""Bench: start a concurrency sweep on the server, watch it, read the table and the recommended threshold."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, ProgressBar, Select, Static

from agent.wire import Event
from console.link import LinkError
from console.model import ConsoleModel
from console.screens.action_flow import plan_confirm_apply
from console.screens.base import LiveScreen
from console.widgets.chart import ChartData, Series, TimeChart
from console.widgets.format import num

ARMS = (("on", "green"), ("off", "red"), ("adaptive", "cyan"), ("baseline", "yellow"))


def level_rows(result: dict[str, Any]) -> list[tuple[int, dict[str, float | None]]]:
    """(concurrency, {arm: output tok/s}) per level, for a compare result or a plain sweep."""
    rows = []
    for row in result.get("levels", []):
        conc = int(row.get("concurrency", row.get("max_concurrency", 0)))
        values: dict[str, float | None] = {}
        if "output_throughput" in row:
            values["sweep"] = row["output_throughput"]
        for arm, _ in ARMS:
            if isinstance(row.get(arm), dict):
                values[arm] = row[arm].get("output_throughput")
        rows.append((conc, values))
    return rows


def result_table(result: dict[str, Any]) -> Table:
    rows = level_rows(result)
    arms = [a for a in ("sweep", *(a for a, _ in ARMS)) if any(a in v for _, v in rows)]
    table = Table(title="output tok/s by concurrency", expand=False)
    table.add_column("concurrency", justify="right")
    for arm in arms:
        table.add_column(arm, justify="right")
    for conc, values in rows:
        table.add_row(str(conc), *(num(values.get(arm)) for arm in arms))
    return table


def recommendation_text(result: dict[str, Any]) -> Text:
    threshold = result.get("recommended_threshold")
    reason = (result.get("recommendation") or {}).get("reason", "")
    if threshold is None:
        return Text(f"No recommendation. {reason}", style="yellow")
    words = "speculate at every batch size" if threshold == 0 else f"stop speculating at {threshold} running"
    return Text.assemble(
        ("Recommended threshold ", "bold"), (str(threshold), "bold green"), f" ({words}). {reason}"
    )


class BenchScreen(LiveScreen):
    def __init__(self) -> None:
        super().__init__()
        self.available: bool | None = None
        self.bench_id: str | None = None
        self.shown_event_seq = -1
        self.recommended: int | None = None

    def compose_body(self) -> ComposeResult:
        yield Static("Asking the agent whether it can run benchmarks…", id="bench-availability")
        with Horizontal(classes="form-row"):
            yield Label("concurrency")
            yield Input("1,2,4,8,16,32,64,128,250", id="bench-levels", compact=True)
            yield Select(
                [("compare on/off", "compare"), ("sweep as it runs", "sweep")],
                value="compare",
                allow_blank=False,
                id="bench-mode",
                compact=True,
            )
            yield Button("Start", id="bench-start", classes="apply", compact=True)
        with Horizontal(classes="form-row"):
            yield Label("requests per level")
            yield Input("", id="bench-requests", type="integer", placeholder="default", compact=True)
            yield Label("output tokens")
            yield Input("256", id="bench-output", type="integer", compact=True)
            yield Label("input tokens")
            yield Input("1024", id="bench-input", type="integer", compact=True)
        yield ProgressBar(id="bench-progress", total=1.0, show_eta=False)
        yield Static("", id="bench-status")
        with Horizontal(classes="form-row"):
            yield Button("Apply recommended threshold", id="bench-apply", classes="apply", compact=True)
            yield Static("", id="bench-apply-result")
        with Horizontal(id="bench-results"):
            yield Static("", id="bench-table")
            yield TimeChart(id="bench-chart", classes="chart")

    def on_mount(self) -> None:
        if self.console.readonly:
            self.query_one("#bench-start", Button).disabled = True
        self.query_one("#bench-apply", Button).disabled = True
        self.check_available()

    @work(exclusive=True, group="bench-check")
    async def check_available(self) -> None:
        label = self.query_one("#bench-availability", Static)
        try:
            runs = await self.console.client.bench_runs()
        except LinkError as exc:
            self.available = False
            if exc.status == 404:
                label.update(
                    Text(
                        "The agent on this host has no benchmark runner yet (GET /v1/bench: 404).",
                        style="yellow",
                    )
                )
            else:
                label.update(Text(f"Benchmarks unavailable: {exc}", style="yellow"))
            return
        self.available = True
        label.update(f"{len(runs)} earlier run(s) on this host.")
        finished = [r for r in runs if r.get("state") == "finished" and r.get("bench_id")]
        if finished and self.bench_id is None:
            self.show_result(str(finished[0]["bench_id"]))  # the agent lists the newest first

    def paint_body(self, model: ConsoleModel) -> None:
        events = [e for e in model.events if e.kind == "bench" and e.seq > self.shown_event_seq]
        for event in events:
            self._bench_event(event)
            self.shown_event_seq = event.seq

    def _bench_event(self, event: Event) -> None:
        data = event.data
        fraction = data.get("fraction")
        if isinstance(fraction, int | float):
            self.query_one(ProgressBar).update(progress=float(fraction))
        failed = event.name in ("bench.failed", "bench.cancelled")
        self.query_one("#bench-status", Static).update(Text(event.message, style="red" if failed else ""))
        bench_id = data.get("bench_id") or self.bench_id
        if event.name == "bench.finished" and bench_id:
            self.query_one(ProgressBar).update(progress=1.0)
            self.show_result(str(bench_id))

    @on(Button.Pressed, "#bench-start")
    def _start(self) -> None:
        self.start()

    @work(exclusive=True, group="bench-start")
    async def start(self) -> None:
        status = self.query_one("#bench-status", Static)
        if self.console.readonly:
            status.update(Text("Read-only: benchmarks are disabled.", style="cyan"))
            return
        try:
            levels = [int(x) for x in self.query_one("#bench-levels", Input).value.split(",") if x.strip()]
        except ValueError:
            status.update(Text("concurrency must be whole numbers separated by commas", style="red"))
            return
        mode = self.query_one("#bench-mode", Select).value
        body: dict[str, Any] = {"concurrency": levels, "mode": mode}
        for key, selector in (("requests_per_level", "#bench-requests"), ("output_len", "#bench-output"),
                              ("input_len", "#bench-input")):  # fmt: skip
            text = self.query_one(selector, Input).value.strip()
            if text:
                body[key] = int(text)
        try:
            self.bench_id = await self.console.client.bench_start(body)
        except LinkError as exc:
            status.update(Text(f"The agent did not start the run: {exc}", style="red"))
            return
        self.query_one(ProgressBar).update(progress=0.0)
        status.update(f"Run {self.bench_id} started; progress follows.")

    @on(Button.Pressed, "#bench-apply")
    def _apply_pressed(self) -> None:
        self.apply_recommended()

    @work(exclusive=True, group="bench-apply")
    async def apply_recommended(self) -> None:
        """The recommendation becomes a normal threshold action: planned, confirmed, audited."""
        if self.console.readonly or self.recommended is None:
            return
        await plan_confirm_apply(
            self,
            self.console.client,
            "threshold",
            self.recommended,
            self.console.operator,
            self.query_one("#bench-apply-result", Static).update,
        )

    @work(exclusive=True, group="bench-result")
    async def show_result(self, bench_id: str) -> None:
        try:
            result = await self.console.client.bench_result(bench_id)
        except LinkError as exc:
            self.query_one("#bench-status", Static).update(
                Text(f"Cannot fetch run {bench_id}: {exc}", style="red")
            )
            return
        self.query_one("#bench-table", Static).update(result_table(result))
        self.query_one("#bench-status", Static).update(recommendation_text(result))
        rows = level_rows(result)
        series = []
        for arm, color in (("sweep", "cyan"), *ARMS):
            pts = [(float(c), y) for c, v in rows if (y := v.get(arm)) is not None]
            if pts:
                series.append(Series(arm, tuple(p[0] for p in pts), tuple(p[1] for p in pts), color))
        top = max((c for c, _ in rows), default=1)
        threshold = result.get("recommended_threshold")
        self.recommended = threshold if isinstance(threshold, int) else None
        self.query_one("#bench-apply", Button).disabled = self.console.readonly or self.recommended is None
        chart = self.query_one("#bench-chart", TimeChart)
        chart.add_class("-shown")
        chart.show(
            ChartData(
                title="tok/s vs concurrency (│ recommended threshold)",
                series=tuple(series),
                window_s=0.0,
                markers=((float(threshold), False),) if threshold else (),
                x_range=(0.0, float(top)),
            )
        )
