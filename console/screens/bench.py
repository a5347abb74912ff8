"""Bench: start a benchmark on the server (compare on/off or a sweep, after a confirm), watch it, read the result.

Starting a benchmark puts up to hundreds of concurrent streams on the engine, so it is confirmed
like any change, and on a production profile the operator types the profile's name. A run the
agent refuses (it cannot measure an arm, the engine is not ready) is shown with the agent's reason.
While a run goes, its progress and ETA come from the newest progress event; when it ends, the run
history is fetched again and the result shown is always labelled with the run it belongs to. Each
figure is shown with its 95 % interval: ± in the table, a bar through the point on the chart.
"""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Input, Label, ProgressBar, Select, Static

from agent.wire.api import BenchPlan
from agent.wire.bench import DEFAULT_REPEATS
from agent.wire.bench_request import BenchRequest
from console.link import LinkError
from console.model import ConsoleModel
from console.model.bench_result import RunSummary, parse_result, parse_runs
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.screens.confirm_dialog import ConfirmDialog
from console.session import Session
from console.widgets.bench_words import (
    EXTERNAL,
    STATE_STYLE,
    confirm_body,
    ended_words,
    progress_text,
    recommendation_text,
    request_or_words,
    result_chart,
    result_table,
    stop_fields,
)
from console.widgets.chart_panel import ChartPanel
from console.widgets.filter import row_matches

__all__ = ["BenchScreen", "stop_fields"]


class BenchScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("bench")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.available: bool | None = None
        self.bench_id: str | None = None
        self.shown_result: str | None = None
        self.recommended: int | None = None
        self.runs: list[RunSummary] = []
        self._ended_seen: set[str] = set()

    def compose_body(self) -> ComposeResult:
        yield Static("Asking the agent whether it can run benchmarks…", id="bench-availability")
        with Horizontal(classes="form-row"):
            yield Label("concurrency")
            yield Input("1,2,4,8,16,32,64,128,250", id="bench-levels", compact=True)
            yield Select(
                [("compare on/off", "compare"), ("sweep as it runs", "sweep")],
                value=self.session.bench_mode,
                allow_blank=False,
                id="bench-mode",
                compact=True,
            )
            yield Button("Start…", id="bench-start", classes="apply", compact=True)
        with Horizontal(classes="form-row", id="bench-form-2"):
            yield Label("requests per window")
            yield Input("", id="bench-requests", type="integer", placeholder="default", compact=True)
            yield Label("output tokens")
            yield Input("256", id="bench-output", type="integer", compact=True)
            yield Label("input tokens")
            yield Input("1024", id="bench-input", type="integer", compact=True)
        with Horizontal(classes="form-row", id="bench-form-3"):
            yield Label("until ±")
            yield Input("", id="bench-until", placeholder="4%", compact=True)
            yield Label("budget")
            yield Input("", id="bench-budget", placeholder="20m", compact=True)
            yield Label("arms")
            yield Input("", id="bench-arms", placeholder="all", compact=True)
        with Horizontal(id="bench-progress-row"):
            yield ProgressBar(id="bench-progress", total=1.0, show_eta=False)
            yield Button("Cancel run…", id="bench-cancel", classes="apply", compact=True, disabled=True)
            yield Static("", id="bench-progress-text")
        yield Static("", id="bench-status")
        with Horizontal(classes="form-row", id="bench-apply-row"):
            yield Button("Apply recommended threshold", id="bench-apply", classes="apply", compact=True)
            yield Static("", id="bench-apply-result")
        with Horizontal(id="bench-results"):
            with Vertical(id="bench-left"):
                yield Static("", id="bench-table")
                yield Input(id="bench-filter", placeholder="/ filter the runs", compact=True)
                runs: DataTable[str] = DataTable(id="bench-runs", cursor_type="row")
                yield runs
            yield ChartPanel("tok/s", id="bench-chart")

    def on_mount(self) -> None:
        if self.session.readonly:
            self.query_one("#bench-start", Button).disabled = True
        self._offer_apply()
        self.load_runs()

    def _runs_table(self) -> DataTable[str]:
        """The run list, its columns added on first use: a paint (which may fetch the list when a run
        ends) can come before this screen's mount handler."""
        table: DataTable[str] = self.query_one("#bench-runs", DataTable)
        if not table.columns:
            for label, key in (
                ("earlier run", "id"),
                ("mode", "mode"),
                ("state", "state"),
                ("threshold", "t"),
            ):
                table.add_column(label, key=key)
        return table

    # -- history ----------------------------------------------------------------------------------
    @work(exclusive=True, group="bench-runs")
    async def load_runs(self) -> None:
        """The agent's run list, newest first; fetched on arrival and again whenever a run ends."""
        label = self.query_one("#bench-availability", Static)
        try:
            runs = parse_runs(await self.session.client.bench_runs())
        except LinkError as exc:
            self.available = False
            if exc.status == 404:
                label.update(Text("The agent on this host has no benchmark runner (GET /v1/bench: 404).",
                                  style="$warn"))  # fmt: skip
            else:
                label.update(Text(f"Benchmarks unavailable: {exc}", style="$warn"))
            return
        self.available = True
        self.runs = runs
        finished = [r for r in runs if r.state == "finished"]
        if runs:
            words = f"{len(runs)} run{'s' if len(runs) != 1 else ''} on this host"
            words += f" (newest finished: {finished[0].bench_id})" if finished else ""
        else:
            words = "No benchmark has run on this host yet"
        label.update(words + ". Start asks you to confirm.")
        self._fill_runs()
        if finished and self.shown_result is None and self.bench_id is None:
            self.show_result(finished[0].bench_id)

    def _fill_runs(self) -> None:
        """The run list, as many as fit the filter (k9s' "/": rows that contain the typed text)."""
        term = self.query_one("#bench-filter", Input).value.strip().lower()
        table = self._runs_table()
        table.clear()
        for run in [r for r in self.runs if row_matches(term, r.bench_id, r.mode, r.state)][:20]:
            threshold = "" if run.recommended_threshold is None else str(run.recommended_threshold)
            table.add_row(run.bench_id, run.mode, run.state, threshold, key=run.bench_id)

    @on(Select.Changed, "#bench-mode")
    def _mode_changed(self, event: Select.Changed) -> None:
        """The palette's "Start bench …" says the mode chosen here."""
        self.session.bench_mode = "sweep" if event.value == "sweep" else "compare"

    @on(Input.Changed, "#bench-filter")
    def _filtered(self) -> None:
        self._fill_runs()

    @on(Input.Submitted, "#bench-filter")
    def _filter_done(self) -> None:
        self.set_focus(self.query_one("#bench-runs"))

    def action_filter(self) -> None:
        self.query_one("#bench-filter", Input).focus()

    def action_bench_start(self) -> None:
        self.start()

    def action_cancel_run(self) -> None:
        self.cancel()

    @on(DataTable.RowSelected, "#bench-runs")
    def _run_selected(self, event: DataTable.RowSelected) -> None:
        if event.row_key.value is not None:
            self.show_result(str(event.row_key.value))

    # -- following a run --------------------------------------------------------------------------
    def paint_body(self, model: ConsoleModel) -> None:
        run = model.bench.runs.get(self.bench_id) if self.bench_id else model.bench.latest
        going = model.bench.running
        self.query_one("#bench-cancel", Button).disabled = (
            self.session.readonly or going is None or going.external or model.link.state != "connected"
        )
        row = self.query_one("#bench-progress-row")
        # A run that ended without a result has no progress to show (a bar left part-filled would say
        # it goes on): the status line says, once, how it ended. A finished one shows its full bar.
        row.display = run is not None and run.state in ("running", "finished")
        if run is None:
            return
        self.query_one(ProgressBar).update(progress=1.0 if run.state == "finished" else run.fraction)
        self.query_one("#bench-progress-text", Static).update(progress_text(run))
        if run.state != "running" and run.bench_id not in self._ended_seen:
            self._ended_seen.add(run.bench_id)
            self.load_runs()
            if run.external:
                self._status(Text(f"Run {run.bench_id} ({EXTERNAL}) {run.state}; its result is where that "
                                  "command wrote it (--json).", style=STATE_STYLE.get(run.state, "$bad")))  # fmt: skip
            elif run.state == "finished":
                self.show_result(run.bench_id)
            else:
                self._status(ended_words(run, self._newest_finished()))
                if self.shown_result is None:
                    self.query_one("#bench-table", Static).update("")
                self.show_result(run.bench_id, only_partial=True)  # the windows it completed, if any

    def _newest_finished(self) -> str | None:
        """The newest finished run the list holds (its result can be opened there), or None."""
        return next((r.bench_id for r in self.runs if r.state == "finished"), None)

    def _offer_apply(self) -> None:
        """ "Apply recommended threshold" is there only while a shown result recommends one."""
        self.query_one("#bench-apply-row").display = self.recommended is not None
        self.query_one("#bench-apply", Button).disabled = self.session.readonly or self.recommended is None

    def _status(self, text: Text | str) -> None:
        self.query_one("#bench-status", Static).update(text)

    # -- starting ---------------------------------------------------------------------------------
    @on(Button.Pressed, "#bench-start")
    def _start(self) -> None:
        self.start()

    def _request(self) -> BenchRequest | str:
        """The run the fields ask for, or what is wrong with them (nothing is sent then)."""
        try:
            levels = [int(x) for x in self.query_one("#bench-levels", Input).value.split(",") if x.strip()]
        except ValueError:
            return "concurrency must be whole numbers separated by commas, e.g. 1,2,4,8"
        if not levels:
            return "concurrency needs at least one level, e.g. 1,2,4,8"
        mode = "sweep" if self.query_one("#bench-mode", Select).value == "sweep" else "compare"
        given: dict[str, object] = {}
        for key, selector in (("min_requests", "#bench-requests"), ("output_len", "#bench-output"),
                              ("input_len", "#bench-input")):  # fmt: skip
            text = self.query_one(selector, Input).value.strip()
            if text:
                try:
                    given[key] = int(text)
                except ValueError:
                    return f"{key}: {text} is not a whole number"
        rule = stop_fields(
            self.query_one("#bench-until", Input).value, self.query_one("#bench-budget", Input).value
        )
        if isinstance(rule, str):
            return rule
        arms = [a.strip() for a in self.query_one("#bench-arms", Input).value.split(",") if a.strip()]
        if arms and mode != "compare":
            return "arms are a compare's (on, off, adaptive): choose compare, or leave arms empty"
        given |= {"mode": mode, "concurrency": levels, "repeats": None if rule else DEFAULT_REPEATS,
                  "until": rule.until if rule else None, "budget_s": rule.budget_s if rule else None,
                  "arms": arms or None}  # fmt: skip
        return request_or_words(given)

    @work(exclusive=True, group="bench-start")
    async def start(self) -> None:
        if self.session.readonly:
            self._status(Text("Read-only: benchmarks are disabled.", style="$info"))
            return
        request = self._request()
        if isinstance(request, str):
            self._status(Text(request, style="$bad"))
            return
        latest = self.session.model.latest
        profile = latest.profile_name if latest is not None and latest.profile_name else "this server"
        production = bool(latest and latest.production)
        try:
            plan: BenchPlan | str = await self.session.client.bench_plan(request)
        except LinkError as exc:
            if exc.status == 422:
                reason = exc.detail if isinstance(exc.detail, str) else str(exc)
                self._status(Text.assemble(("The agent refused the run: ", "$bad-bold"), (reason, "$bad")))
                return
            plan = f"unknown: the agent could not estimate it ({exc})"
        dialog = ConfirmDialog(
            f"Start a benchmark on {profile}?",
            confirm_body(request, profile, self.session.link.describe(), plan),
            challenge=profile if production else None,
            yes="Start run",
            no="Don't start",
        )
        if not await self.session.ask(dialog):
            self._status(Text("Not confirmed: no benchmark started.", style="$warn"))
            return
        if dialog.typed is not None:  # the agent checks the name again itself
            request = request.model_copy(update={"confirm_production": dialog.typed})
        request = request.model_copy(update={"operator": self.session.operator})  # who asks, for the audit
        try:
            bench_id = await self.session.client.bench_start(request)
        except LinkError as exc:
            reason = exc.detail if isinstance(exc.detail, str) else str(exc)
            self._status(
                Text.assemble(("The agent refused to start the run: ", "$bad-bold"), (reason, "$bad"))
            )
            return
        self.bench_id = bench_id
        self.shown_result = None
        self.recommended = None
        self._offer_apply()
        earlier = self._newest_finished()
        self.query_one("#bench-table", Static).update(
            Text(
                f"Run {bench_id} is running; its table appears here when it ends."
                + (f" The newest finished run, {earlier}, is in the list below." if earlier else ""),
                style="dim",
            )
        )
        self.query_one("#bench-chart", ChartPanel).remove_class("-shown")
        self.query_one(ProgressBar).update(progress=0.0)
        self._status(f"Run {bench_id} started; progress follows.")
        self.load_runs()

    # -- cancelling -------------------------------------------------------------------------------
    @on(Button.Pressed, "#bench-cancel")
    def _cancel_pressed(self) -> None:
        self.cancel()

    @work(exclusive=True, group="bench-cancel")
    async def cancel(self) -> None:
        """Stop the running benchmark, after a confirm; the agent audits it and ends the run."""
        if self.session.readonly:
            self._status(Text("Read-only: benchmarks cannot be cancelled here.", style="$info"))
            return
        run = self.session.model.bench.running
        if run is None:
            self._status(Text("No benchmark is running; nothing to cancel.", style="$warn"))
            return
        if run.external:
            self._status(Text(f"Run {run.bench_id} is {EXTERNAL}: stop it with Ctrl-C where it runs.",
                              style="$warn"))  # fmt: skip
            return
        body = Table.grid(padding=(0, 1))
        body.add_column(style="dim")
        body.add_column()
        body.add_row("now", progress_text(run))
        body.add_row("then", "its requests in flight are cut, the live threshold it forced is put back, "
                     "and what it measured so far is not kept")  # fmt: skip
        asked = ConfirmDialog(f"Cancel benchmark {run.bench_id}?", body, yes="Stop run", no="Keep running")
        if not await self.session.ask(asked):
            self._status(Text(f"Run {run.bench_id} keeps running.", style="$warn"))
            return
        try:
            answer = await self.session.client.bench_cancel(run.bench_id, self.session.operator)
        except LinkError as exc:
            self._status(Text(f"The agent did not cancel run {run.bench_id}: {exc}", style="$bad"))
            return
        if run.bench_id in self._ended_seen:
            return  # it ended while the answer came back: the status line says how, once
        style = "$warn" if answer.cancelled else "$bad"
        self._status(Text(answer.message or f"Run {run.bench_id}: cancel sent.", style=style))

    # -- the result -------------------------------------------------------------------------------
    @on(Button.Pressed, "#bench-apply")
    def _apply_pressed(self) -> None:
        self.apply_recommended()

    @work(exclusive=True, group="bench-apply")
    async def apply_recommended(self) -> None:
        """The recommendation becomes a normal threshold action: planned, confirmed, audited."""
        if self.session.readonly or self.recommended is None:
            return
        await self.session.plan_confirm_apply(
            "threshold", self.recommended, self.query_one("#bench-apply-result", Static).update
        )

    @work(exclusive=True, group="bench-result")
    async def show_result(self, bench_id: str, only_partial: bool = False) -> None:
        """A stored run's table, chart and words; ``only_partial``: only where the run, cut short,
        kept windows (a run that kept none has said how it ended already)."""
        try:
            result = parse_result(await self.session.client.bench_result(bench_id))
        except LinkError as exc:
            self._status(Text(f"Cannot fetch run {bench_id}: {exc}", style="$bad"))
            return
        if only_partial and result.partial is None:
            return
        self.shown_result = bench_id
        self.query_one("#bench-table", Static).update(result_table(result))
        self._status(recommendation_text(result))
        self.recommended = result.recommended_threshold if result.state == "finished" else None
        self._offer_apply()
        panel = self.query_one("#bench-chart", ChartPanel)
        if len({level.asked for level in result.levels}) < 2:  # one level (a run cut short): no axis to draw
            panel.remove_class("-shown")
            return
        panel.add_class("-shown")
        panel.show(result_chart(result), note="(log concurrency)")
