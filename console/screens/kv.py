"""KV: how the pool is spent, what speculation's decode reserve costs, and what would fit."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Button, Input, Label, Static

from agent.wire import KvView
from agent.wire.api import KV_STATES, KvSideView, KvWhatIf
from console.link import LinkError
from console.model import ConsoleModel
from console.screens.base import LiveScreen
from console.widgets.format import gib, num
from console.widgets.stacked_bar import Segment, StackedBar

WHATIF_ROWS: tuple[tuple[str, Callable[[KvSideView], int | None]], ...] = (
    ("requests that fit", lambda side: side.requests_that_fit),
    ("tokens allocated per decode step", lambda side: side.alloc_len_per_decode),
    ("tokens reserved per request", lambda side: side.reserve_per_decode),
    ("tokens held", lambda side: side.tokens_held),
    ("tokens reserved", lambda side: side.tokens_reserved),
    ("KV pool", lambda side: side.pool_tokens),
)
WHATIF_COLUMNS: tuple[tuple[str, Callable[[KvWhatIf], KvSideView | None]], ...] = (
    (KV_STATES["on"], lambda answer: answer.on),
    (KV_STATES["off"], lambda answer: answer.off),
    (KV_STATES["baseline"], lambda answer: answer.baseline),
)
"""The agent's three server states: speculating, 0 steps inside the speculative server, launched without a drafter."""


def pool_segments(kv: KvView) -> tuple[Segment, ...]:
    used = kv.used_tokens or 0
    reserved = kv.reserved_tokens or 0
    free = kv.free_tokens if kv.free_tokens is not None else max(0, (kv.pool_tokens or 0) - used - reserved)
    return (
        Segment("used", used, "$kv-used"),
        Segment("reserved (decode over-allocation)", reserved, "$kv-reserved"),
        Segment("free", free, "$kv-free"),
    )


def reserve_text(kv: KvView, speculative: bool) -> Text:
    """The pool (and without the drafter), the reserve in the three states, what speculation holds
    and, with a drafter, what the draft takes (its own line: at 100 columns it was cut)."""
    text = Text()
    text.append("Pool ", style="dim")
    text.append(num(kv.pool_tokens, unit=" tokens"), style="bold")
    text.append(f"   page size {num(kv.page_size)}", style="dim")
    if speculative:
        text.append("   without the drafter ", style="dim")
        text.append(num(kv.pool_tokens_without_drafter, unit=" tokens"), style="bold")
    text.append(f"\nReserve per request: {KV_STATES['on']} ", style="dim")
    text.append(num(kv.reserve_per_request_on, unit=" tokens"), style="bold")
    text.append(f"  ·  {KV_STATES['off']} ", style="dim")
    text.append(num(kv.reserve_per_request_zero_step, unit=" tokens"), style="bold")
    text.append(f"  ·  {KV_STATES['baseline']} ", style="dim")
    text.append(num(kv.reserve_per_request_off, unit=" tokens"), style="bold")
    text.append("\nShare of the pool held for speculation ", style="dim")
    text.append(num(kv.speculation_share, ".1%"), style="bold")
    if speculative:
        text.append("\nThe draft takes ", style="dim")
        text.append(num(kv.draft_share_of_cell, ".1%"), style="bold")
        text.append(" of each KV cell, weights ", style="dim")
        text.append(gib(kv.draft_weight_bytes), style="bold")
        text.append(" per rank", style="dim")
    return text


def whatif_table(answer: KvWhatIf, context: int, running: int) -> Group:
    """The agent's answer as a table, then its own words on whether the requests fit. A side the
    agent leaves out (no drafter in the profile: no "on") is a column of dashes."""
    table = Table(title=f"What-if at context {context:,} with {running} running", expand=False)
    table.add_column("")
    for label, _ in WHATIF_COLUMNS:
        table.add_column(label, justify="right")
    sides = [side(answer) for _, side in WHATIF_COLUMNS]
    for label, value in WHATIF_ROWS:
        table.add_row(label, *(num(value(side) if side is not None else None) for side in sides))
    style = "$bad" if answer.overfull else "$ok"
    return Group(table, *(Text(line, style=style) for line in answer.fit_summary))


class KvScreen(LiveScreen):
    def compose_body(self) -> ComposeResult:
        yield Label("KV pool", classes="section")
        yield StackedBar(id="pool-bar", classes="value")
        yield Static(id="reserve", classes="value")
        yield Label("What-if", classes="section")
        with Horizontal(classes="form-row"):
            yield Label("context length")
            yield Input("32768", id="whatif-context", type="integer", max_length=8, compact=True)
            yield Label("running")
            yield Input(
                "", id="whatif-running", type="integer", max_length=5, placeholder="now", compact=True
            )
            yield Button("Ask the agent", id="whatif-ask", compact=True)
        yield Static(
            "Ask the agent how many requests fit: speculating, at 0 steps, and without the drafter.",
            id="whatif-result",
        )

    def paint_body(self, model: ConsoleModel) -> None:
        snap = model.latest
        if snap is None:
            return
        bar = self.query_one(StackedBar)
        bar.unit = ""
        bar.segments = pool_segments(snap.kv)
        self.query_one("#reserve", Static).update(reserve_text(snap.kv, snap.speculation.configured))

    def action_kv_whatif(self) -> None:
        """The registry's "KV what-if" (palette and help)."""
        self.ask_whatif()

    @on(Button.Pressed, "#whatif-ask")
    @on(Input.Submitted, "#whatif-context, #whatif-running")
    def _ask(self) -> None:
        self.ask_whatif()

    @work(exclusive=True, group="kv-whatif")
    async def ask_whatif(self) -> None:
        result = self.query_one("#whatif-result", Static)
        try:
            context = int(self.query_one("#whatif-context", Input).value)
        except ValueError:
            result.update(Text("context length must be a whole number of tokens", style="$bad"))
            return
        running_text = self.query_one("#whatif-running", Input).value
        latest = self.session.model.latest
        running = int(running_text) if running_text else (latest.load.running or 1) if latest else 1
        try:
            answer = await self.session.client.kv_whatif(running=max(1, running), context=context)
        except LinkError as exc:
            result.update(Text(f"the agent could not answer: {exc}", style="$bad"))
            return
        result.update(whatif_table(answer, context, running))
