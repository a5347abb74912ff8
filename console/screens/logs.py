"""Logs: the engine's log tail (searchable, fetched from the agent) and the event / audit stream."""

from __future__ import annotations

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widgets import Input, Label, RichLog

from console.link import LinkError
from console.model import ConsoleModel
from console.screens.base import LiveScreen
from console.widgets.format import clock

TAIL_LINES = 300
_KIND_STYLE = {"action": "bold cyan", "engine": "yellow", "speculation": "green", "finding": "magenta"}


class LogsScreen(LiveScreen):
    def __init__(self) -> None:
        super().__init__()
        self.shown_event_seq = -1

    def compose_body(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            yield Label("search")
            yield Input(id="log-search", placeholder="text in the engine log (enter)", compact=True)
        yield Label("Engine log", classes="section")
        yield RichLog(id="engine-log", max_lines=TAIL_LINES, wrap=False)
        yield Label("Events and audit", classes="section")
        yield RichLog(id="event-log", max_lines=1000, wrap=False)

    def on_mount(self) -> None:
        self.refresh_log()

    @on(Input.Submitted, "#log-search")
    def _search(self) -> None:
        self.refresh_log()

    @work(exclusive=True, group="logs-fetch")
    async def refresh_log(self) -> None:
        log = self.query_one("#engine-log", RichLog)
        search = self.query_one("#log-search", Input).value.strip() or None
        try:
            lines = await self.console.client.logs(TAIL_LINES, search)
        except LinkError as exc:
            log.clear()
            log.write(Text(f"Cannot read the engine log: {exc}", style="red"))
            return
        log.clear()
        for line in lines:
            log.write(line)
        if not lines:
            log.write(Text("(no lines" + (f" matching {search!r})" if search else ")"), style="dim"))

    def paint_body(self, model: ConsoleModel) -> None:
        log = self.query_one("#event-log", RichLog)
        for event in model.events:
            if event.seq <= self.shown_event_seq:
                continue
            self.shown_event_seq = event.seq
            line = Text(f"{clock(event.time)} ", style="dim")
            line.append(f"{event.kind:<11}", style=_KIND_STYLE.get(event.kind, ""))
            line.append(f" {event.message}")
            log.write(line)
