"""Bench: start a concurrency sweep on the server (after a confirm), watch it, read the result.

Starting a benchmark puts up to hundreds of concurrent streams on the engine, so it is confirmed
like any change, and on a production profile the operator types the profile's name. A run the
agent refuses (it cannot measure an arm, the engine is not ready) is shown with the agent's reason.
While a run goes, its progress and ETA come from the newest progress event; when it ends, the run
history is fetched again and the result shown is always labelled with the run it belongs to. Each
figure is shown with its 95 % interval: ± in the table, a bar through the point on the chart.
"""

from __future__ import annotations

import math
import re
from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Input, Label, ProgressBar, Select, Static

from agent.wire.api import BenchPlan
from agent.wire.bench import DEFAULT_REPEATS, BenchRequest, StopRule
from console.link import LinkError
from console.model import ConsoleModel
from console.model.bench import BenchRun
from console.model.bench_result import ArmResult, BenchResult, RunSummary, parse_result, parse_runs
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.screens.confirm_dialog import ConfirmDialog
from console.session import Session
from console.widgets.chart import ChartData, Rule, Series
from console.widgets.chart_panel import ChartPanel
from console.widgets.filter import row_matches
from console.widgets.format import clock, duration, num
from console.widgets.ticks import fmt_count, log2_ticks

ARM_STYLE = {
    "sweep": ("$series-1", "●"),
    "on": ("$series-2", "●"),
    "off": ("$series-3", "■"),
    "adaptive": ("$series-1", "×"),
    "baseline": ("$series-5", "+"),
}
"""Each arm its colour and its own point glyph: where two lines overlap, both stay visible."""

DRAW_ORDER = ("sweep", "adaptive", "baseline", "off", "on")

MODE_WORDS = {
    "compare": "compare: at each level speculation on, off and adaptive; each repeat a pass over the "
    "levels, the next its mirror",
    "sweep": "sweep: each level with the server as it runs",
}

"""Windows per arm and level the console asks for: the fewest that give an interval over repeats."""


def figure_cell(arm: ArmResult) -> Text:
    """``14,246 ±3.6%``: the figure and its interval's half-width (a figure alone for older runs)."""
    text = Text(num(arm.tok_s))
    rel = arm.half_width_rel
    if rel is not None:
        text.append(f" ±{rel * 100:.1f}%", style="dim")
    if arm.counts_differ:
        text.append(" !", style="$warn-bold")
    return text


def result_title(result: BenchResult) -> str:
    when = f", finished {clock(result.finished_at)} UTC" if result.finished_at else ""
    return f"Run {result.bench_id} ({result.mode}{when})"


def result_table(result: BenchResult) -> Table:
    table = Table(
        title=f"{result_title(result)}: output tok/s",
        expand=False,
        title_justify="left",
        caption_justify="left",
    )
    table.add_column("asked", justify="right")
    table.add_column("ran", justify="right")
    for arm in result.arms:
        table.add_column(arm, justify="right", style=ARM_STYLE.get(arm, ("", ""))[0])
    if result.stopped:
        table.add_column("stopped", justify="left")
    for level in result.levels:
        reached = Text(num(level.reached, ".0f"), style="$warn" if level.short else "")
        cells: list[Text | str] = [figure_cell(level.arms[a]) if a in level.arms else "" for a in result.arms]
        if result.stopped:
            stop = level.stopped
            cells.append(Text(stop.cell, style="" if stop.outcome == "bound" else "$warn") if stop else "")
        table.add_row(str(level.asked), reached, *cells)
    if result.has_intervals:
        repeats = result.repeats
        if result.stopped:
            table.caption = "mean of the level's steady-state windows ± half its 95 % interval; "
        else:
            table.caption = (
                f"mean of {repeats} steady-state windows ± half its 95 % interval; " if repeats else ""
            )
        table.caption += "ran: running requests held in the window"
    else:
        table.caption = "ran: the engine's mean running requests"
    if any(level.short for level in result.levels):
        table.caption += "; yellow: fewer than asked"
    if any(arm.counts_differ for level in result.levels for arm in level.arms.values()):
        table.caption += "; !: the engine counted 2 % more or less than we received"
    if result.stopped:
        table.caption += f"\nwindows were added at a level {result.rule or 'under a stopping rule'}"
        table.caption += "".join(
            f"\n  c={level.asked}: {level.stopped.words}"
            for level in result.levels
            if level.stopped is not None
        )
    table.caption += "".join(f"\n{label}: {words}" for label, words in result.where)
    return table


def recommendation_text(result: BenchResult) -> Text:
    threshold = result.recommended_threshold
    if result.state != "finished":
        return Text(
            f"{result_title(result)} {result.state}: {result.error or 'no reason given'}", style="$bad"
        )
    if threshold is None:
        return Text(f"No recommendation. {result.reason}", style="$warn")
    words = "speculate at every batch size" if threshold == 0 else f"stop speculating at {threshold} running"
    return Text.assemble(
        ("Recommended threshold ", "bold"), (str(threshold), "$ok-bold"), f" ({words}). {result.reason}"
    )


def result_chart(result: BenchResult) -> ChartData:
    """tok/s against concurrency on a log axis (1–16 is not squashed against 250)."""
    series = []
    # "on" is drawn last, over "adaptive" (which often equals it): both stay visible, each with its glyph.
    for arm in sorted(result.arms, key=lambda a: DRAW_ORDER.index(a) if a in DRAW_ORDER else -1):
        color, glyph = ARM_STYLE.get(arm, ("$muted", "·"))
        pts = [(math.log2(lv.asked), t, lv.arms[arm].interval) for lv in result.levels if lv.asked > 0
               and arm in lv.arms and (t := lv.arms[arm].tok_s) is not None]  # fmt: skip
        if pts:
            intervals = tuple(p[2] for p in pts) if any(p[2] is not None for p in pts) else ()
            series.append(
                Series(
                    arm,
                    tuple(p[0] for p in pts),
                    tuple(p[1] for p in pts),
                    color,
                    points=glyph,
                    intervals=intervals,
                )
            )
    asked = [lv.asked for lv in result.levels if lv.asked > 0] or [1]
    threshold = result.recommended_threshold
    vline = (
        Rule(math.log2(threshold), f"recommended threshold {threshold}", "$rule")
        if threshold and threshold > 0
        else None
    )
    return ChartData(
        series=tuple(series),
        y_format=fmt_count,
        x_range=(math.log2(min(asked)), math.log2(max(asked))),
        x_ticks=tuple(log2_ticks(asked)),
        vline=vline,
    )


STATE_STYLE = {"finished": "$ok", "cancelled": "$warn", "failed": "$bad"}
EXTERNAL = "agent bench straight at the engine"


def progress_text(run: BenchRun) -> Text:
    text = Text()
    if run.state != "running":
        style = STATE_STYLE.get(run.state, "$bad")
        text.append(f"Run {run.bench_id} {run.state} at {clock(run.updated_at)} UTC", style=style)
        if run.error:
            text.append(f": {run.error}", style=style)
        return text
    text.append(f"Run {run.bench_id} running", style="bold")
    if run.external:
        text.append(
            f" ({EXTERNAL}: the agent hears only its start and end; Ctrl-C in that terminal stops it)"
        )
        return text
    if run.phase == "waiting":
        text.append(" · ")
        text.append(run.phase_words or "waiting for the engine to drain", style="$warn")
        return text
    if run.phase == "probing":
        text.append(f" · {run.phase_words or 'timing a first request and batch'}")
        return text
    if run.arm is not None:
        text.append(f" · {run.arm} arm")
    if run.concurrency is not None:
        text.append(f" · {run.concurrency} concurrent")
    if run.level_index is not None and run.levels:
        text.append(f" · level {run.level_index + 1} of {run.levels}")
    if run.repeat is not None and run.repeats and run.repeats > 1:
        text.append(f" · repeat {run.repeat + 1} of {run.repeats}")
    if run.completed is not None and run.requests:
        text.append(f" · {run.completed}/{run.requests} requests")
    eta = run.eta_s
    text.append(f" · about {duration(eta)} left" if eta is not None else " · ETA after the first requests")
    return text


def duration_text(plan: BenchPlan | str) -> Text:
    """The plan's expected duration and where it comes from (or why there is none)."""
    if isinstance(plan, str):
        return Text(plan, style="$warn")
    text = Text.assemble((f"about {duration(plan.expected_s)}", "bold"), f" ({plan.basis})")
    if plan.at_most_s is not None:
        text = Text.assemble(
            (
                f"about {duration(plan.expected_s)} for the first windows, {duration(plan.at_most_s)} at most",
                "bold",
            ),
            f" ({plan.basis})",
        )
    if plan.drain_wait_s and plan.busy_now:
        text.append(
            f"; first it waits up to {duration(plan.drain_wait_s)} for the {plan.busy_now} requests "
            "on the engine now to finish",
            style="$warn",
        )
    return text


def rule_words(request: BenchRequest) -> str:
    """The stopping rule of a start, in the confirm's words."""
    parts = []
    if request.until is not None:
        parts.append(f"until every arm's 95 % interval is within ±{request.until * 100:g} %")
    if request.budget_s is not None:
        budget = f"the run's {duration(request.budget_s)} are spent"
        parts.append(f"or {budget}" if parts else f"until {budget}")
    return (
        "the first windows of every arm at every level (the duration below says how many), then more at a level "
        + " ".join(parts)
        + ", up to the most a level may take"
    )


def confirm_body(
    request: BenchRequest, profile: str, where: str, plan: BenchPlan | str | None = None
) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim")
    table.add_column()
    levels = request.concurrency
    options = request.options
    table.add_row("mode", MODE_WORDS.get(request.mode, request.mode))
    table.add_row("levels", f"{', '.join(map(str, levels))} concurrent streams (up to {max(levels)} at once)")
    per_window = request.min_requests
    table.add_row(
        "measured",
        (f"windows of at least {per_window} completed requests" if per_window
         else "windows of two requests per stream (at least 8)")
        + ", at least 1 s, at the asked concurrency (the ramp is not measured)",
    )  # fmt: skip
    if request.until is not None or request.budget_s is not None:
        table.add_row("windows", rule_words(request))
    else:
        table.add_row("repeats", f"{options.repeats} windows per arm and level, for each figure's interval")
    if request.arms:
        table.add_row("arms", ", ".join(request.arms) + " only")
    table.add_row("tokens", f"{options.input_len} in, {options.output_len} out per request")
    table.add_row("against", Text.assemble((profile, "bold"), f" ({where}), beside the traffic it serves"))
    if plan is not None:
        table.add_row("duration", duration_text(plan))
    return table


_BUDGET = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|min|h)?\s*$")
_UNIT_S = {None: 1.0, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


def stop_fields(until: str, budget: str) -> StopRule | str | None:
    """The stopping rule from what the operator typed (``4%`` or ``0.04``; ``1200``, ``20m`` or
    ``1h``), None when both are empty, or what is wrong in words. The agent checks the ranges and
    names a field it refuses."""
    fields: dict[str, float] = {}
    text = until.strip()
    if text:
        try:
            fields["until"] = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            return f"until: {text} is not a share; type a percentage such as 4%"
    text = budget.strip()
    if text:
        match = _BUDGET.match(text)
        if match is None:
            return f"budget: {text} is not a duration; type seconds (1200) or minutes (20m) or hours (1h)"
        fields["budget_s"] = float(match.group(1)) * _UNIT_S[match.group(2)]
    return StopRule.model_validate(fields) if fields else None


def ended_words(run: BenchRun) -> Text:
    """What the table area says once a run ended without a result (cancelled, failed)."""
    how = run.error or run.message or "no reason given"
    return Text(
        f"Run {run.bench_id} {run.state} at {clock(run.updated_at)} UTC: {how}. It has no table; an "
        "earlier result can be opened from the list below.",
        style=STATE_STYLE.get(run.state, "$bad"),
    )


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
                value="compare",
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
        with Horizontal(classes="form-row"):
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
        self.query_one("#bench-apply", Button).disabled = True
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
        row.display = run is not None
        if run is None:
            return
        self.query_one(ProgressBar).update(progress=run.fraction)
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
                self._status(ended_words(run))
                if self.shown_result is None:
                    self.query_one("#bench-table", Static).update(ended_words(run))

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
        given: dict[str, int] = {}
        for key, selector in (("min_requests", "#bench-requests"), ("output_len", "#bench-output"),
                              ("input_len", "#bench-input")):  # fmt: skip
            text = self.query_one(selector, Input).value.strip()
            if text:
                given[key] = int(text)
        rule = stop_fields(
            self.query_one("#bench-until", Input).value, self.query_one("#bench-budget", Input).value
        )
        if isinstance(rule, str):
            return rule
        arms = [a.strip() for a in self.query_one("#bench-arms", Input).value.split(",") if a.strip()]
        if arms and mode != "compare":
            return "arms are a compare's (on, off, adaptive): choose compare, or leave arms empty"
        return BenchRequest(
            mode=mode,
            concurrency=levels,
            repeats=None if rule else DEFAULT_REPEATS,
            until=rule.until if rule else None,
            budget_s=rule.budget_s if rule else None,
            arms=arms or None,
            **given,
        )

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
        )
        if not await self.session.ask(dialog):
            self._status(Text("Cancelled; no benchmark started.", style="$warn"))
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
        self.query_one("#bench-apply", Button).disabled = True
        self.query_one("#bench-table", Static).update(
            Text(
                f"Run {bench_id} is running; its table appears here when it ends. The previous result "
                "is in the list below.",
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
        if not await self.session.ask(ConfirmDialog(f"Cancel benchmark {run.bench_id}?", body)):
            self._status(Text(f"Run {run.bench_id} keeps running.", style="$warn"))
            return
        try:
            answer = await self.session.client.bench_cancel(run.bench_id, self.session.operator)
        except LinkError as exc:
            self._status(Text(f"The agent did not cancel run {run.bench_id}: {exc}", style="$bad"))
            return
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
    async def show_result(self, bench_id: str) -> None:
        try:
            result = parse_result(await self.session.client.bench_result(bench_id))
        except LinkError as exc:
            self._status(Text(f"Cannot fetch run {bench_id}: {exc}", style="$bad"))
            return
        self.shown_result = bench_id
        self.query_one("#bench-table", Static).update(result_table(result))
        self._status(recommendation_text(result))
        self.recommended = result.recommended_threshold if result.state == "finished" else None
        self.query_one("#bench-apply", Button).disabled = self.session.readonly or self.recommended is None
        panel = self.query_one("#bench-chart", ChartPanel)
        panel.add_class("-shown")
        panel.show(result_chart(result), note="(log concurrency)")
