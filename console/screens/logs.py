"""Logs: the engine log, followed live (a tail fetched every two seconds while this screen is in
view), with search matches highlighted, n/N between them and a match count; below it, the events
and audit stream, wrapped so a long reason is read whole (bench progress stays on the Bench screen;
the adaptive policy's step changes are counted in the title, not listed one by one: an operator's
own step change is an action line)."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal
from textual.widgets import Input, Label, RichLog, Static

from agent.wire import ActionEvent
from console.link import LinkError
from console.model import ConsoleModel
from console.model.logtail import matching_lines, new_lines, step_match
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.session import Session
from console.widgets.action_words import action_words
from console.widgets.format import clock
from console.widgets.wrap_log import WrappingLog

TAIL_LINES = 300
"""Lines asked of the agent per fetch; consecutive fetches overlap and are joined."""
KEEP_LINES = 2000
POLL_S = 2.0
EVENT_LINES = 1000
_KIND_STYLE = {"action": "$info-bold", "engine": "$warn", "speculation": "$ok", "finding": "$note"}
UNLISTED = frozenset({"speculation.steps"})
"""Counted in the title instead of listed (see the module docstring)."""
MATCH_STYLE = "$log-match"
CURRENT_STYLE = "$log-current"


def events_title(model: ConsoleModel) -> Text:
    """ "Events and audit · 38 adaptive step changes, the last 2 → 3 at 16:51:02"."""
    text = Text("Events and audit")
    last = model.last_step_change
    if last is not None:
        noun = "change" if model.step_changes == 1 else "changes"
        old, new = last.data.old, last.data.new
        moved = f" {old} → {new}" if old is not None and new is not None else ""
        text.append(
            f" · {model.step_changes} speculation step {noun}, the last{moved} at {clock(last.time)}",
            style="dim",
        )
    return text


class LogsScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("logs")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.shown_event_seq = -1
        self.lines: list[str] = []
        self._fetched: list[str] = []
        self.term = ""
        self.matches: list[int] = []
        self.current: int | None = None
        """Position in ``matches`` of the match in view, or None."""
        self.following = True
        self.error: str | None = None
        self.event_lines: list[Text] = []
        """The events pane's lines as written, so a search can highlight and count them too."""

    def compose_body(self) -> ComposeResult:
        with Horizontal(classes="form-row"):
            yield Label("search")
            yield Input(id="log-search", placeholder="a term to find in the log and the events (enter), then n / N",
                        compact=True)  # fmt: skip
        yield Static(id="log-status")
        yield Label("Engine log", classes="section")
        yield WrappingLog(id="engine-log", max_lines=KEEP_LINES)
        yield Label("Events and audit", id="events-title", classes="section")
        yield WrappingLog(id="event-log", max_lines=EVENT_LINES)

    def on_mount(self) -> None:
        self.refresh_log()
        self.set_interval(POLL_S, self._poll)

    def _poll(self) -> None:
        if self.is_current and not self.session.paused:
            self.refresh_log()

    # -- fetching ---------------------------------------------------------------------------------
    @work(exclusive=True, group="logs-fetch")
    async def refresh_log(self) -> None:
        try:
            fetched = await self.session.client.logs(TAIL_LINES)
        except LinkError as exc:
            self.error = str(exc)
            self._show_status()
            return
        self.error = None
        added, replaced = new_lines(self._fetched, fetched)
        self._fetched = list(fetched)
        if replaced:
            self.lines = list(fetched)
        elif added:
            self.lines = [*self.lines, *added][-KEEP_LINES:]
        else:
            self._show_status()
            return
        self.matches = matching_lines(self.lines, self.term)
        if replaced or not self.term:
            self._redraw()
        else:
            log = self.query_one("#engine-log", RichLog)
            for line in added:
                log.write(self._styled(line, None))
            if self.following:
                log.scroll_end(animate=False)
        self._show_status()

    # -- drawing ----------------------------------------------------------------------------------
    def _styled(self, line: str, current_line: int | None, index: int = -1) -> Text:
        """The line with every match highlighted; the match in view also gets a band across its line."""
        text = Text(line, style=CURRENT_STYLE if self.term and index == current_line else "")
        if self.term:
            text.highlight_words([self.term], style=MATCH_STYLE, case_sensitive=False)
        return text

    def _redraw(self) -> None:
        log = self.query_one("#engine-log", RichLog)
        log.clear()
        current_line = self.matches[self.current] if self.current is not None and self.matches else None
        if not self.lines:
            log.write(Text("(the engine log is empty so far)", style="dim"))
        for n, line in enumerate(self.lines):
            log.write(self._styled(line, current_line, n))
        if current_line is not None and not self.following:
            self.call_after_refresh(
                log.scroll_to, y=max(0, current_line - log.size.height // 2), animate=False
            )
        else:
            log.scroll_end(animate=False)

    def _redraw_events(self) -> None:
        log = self.query_one("#event-log", RichLog)
        log.clear()
        for line in self.event_lines:
            log.write(self._marked(line))

    def _marked(self, line: Text) -> Text:
        if not self.term:
            return line
        marked = line.copy()
        marked.highlight_words([self.term], style=MATCH_STYLE, case_sensitive=False)
        return marked

    @property
    def event_matches(self) -> int:
        term = self.term.lower()
        return sum(1 for line in self.event_lines if term and term in line.plain.lower())

    def _show_status(self) -> None:
        text = Text()
        if self.error:
            text.append(f"Cannot read the engine log: {self.error}", style="$bad")
        elif self.following:
            text.append("● following the engine log", style="$ok")
        else:
            text.append("❚❚ holding the view (f to follow)", style="$warn")
        if self.term:
            count = len(self.matches)
            where = f"{self.current + 1} of {count}" if self.current is not None and count else f"{count}"
            text.append(f"   {where} match{'es' if count != 1 else ''} in the engine log, ", style="bold")
            text.append(f"{self.event_matches} in events for ", style="bold")
            text.append(self.term, style=MATCH_STYLE)
            if count:
                text.append("   n next · N previous", style="dim")
        self.query_one("#log-status", Static).update(text)

    # -- searching --------------------------------------------------------------------------------
    @on(Input.Submitted, "#log-search")
    def _search(self, event: Input.Submitted) -> None:
        self.term = event.value.strip()
        self.matches = matching_lines(self.lines, self.term)
        self.current = None
        self.set_focus(None)  # n / N work at once
        self._redraw_events()
        if self.matches:
            self._jump(forward=False)  # the newest match first: in a log, the latest is the one wanted
        else:
            self.following = True
            self._redraw()
            self._show_status()

    def _jump(self, *, forward: bool) -> None:
        self.current = step_match(self.matches, self.current, forward)
        if self.current is None:
            return
        self.following = False
        self._redraw()
        self._show_status()

    def action_logs_refresh(self) -> None:
        self.refresh_log()

    def action_search(self) -> None:
        self.query_one("#log-search", Input).focus()

    def action_next_match(self) -> None:
        self._jump(forward=True)

    def action_previous_match(self) -> None:
        self._jump(forward=False)

    def action_toggle_follow(self) -> None:
        self.following = not self.following
        if self.following:
            self.current = None
            self._redraw()
        self._show_status()

    # -- the event stream -------------------------------------------------------------------------
    def paint_body(self, model: ConsoleModel) -> None:
        log = self.query_one("#event-log", RichLog)
        self.query_one("#events-title", Label).update(events_title(model))
        for event in model.events:
            if event.seq <= self.shown_event_seq:
                continue
            if event.name in UNLISTED:
                self.shown_event_seq = event.seq
                continue
            if isinstance(event, ActionEvent) and event.data.action_id in model.actions.looking_up:
                break  # its words are on the way: keep the log in order, write it when they arrive
            self.shown_event_seq = event.seq
            line = Text(f"{clock(event.time)} ", style="dim")
            line.append(f"{event.kind:<11}", style=_KIND_STYLE.get(event.kind, ""))
            line.append(" ")
            line.append_text(
                action_words(event, model.actions) if isinstance(event, ActionEvent) else Text(event.message)
            )
            self.event_lines = [*self.event_lines, line][-EVENT_LINES:]
            log.write(self._marked(line))
        if self.term:
            self._show_status()
