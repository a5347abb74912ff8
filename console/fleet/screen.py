"""The Fleet screen: one row per host, the fleet's total, the router's view of its workers, and the
last change asked of several hosts. It draws ``FleetState`` and posts what the operator asked for;
the App opens hosts and runs changes."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Container, VerticalScroll
from textual.events import Resize
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from console.fleet import router_words, words
from console.fleet.model import SORT_WORDS, FleetRow
from console.fleet.state import FleetState
from console.fleet.table import FleetTable
from console.widgets.footer import ConsoleFooter

WIDE_FROM = 100
"""From this many columns the link and the engine state have columns of their own, and the accept
length too; below, one state column says both and the accept length gives way (80 columns fit)."""


ROOM = 3
"""Columns the table cannot use: the body's padding and a spare one."""


class OpenHost(Message):
    def __init__(self, host: str) -> None:
        super().__init__()
        self.host = host


class ChangeAsked(Message):
    def __init__(self, hosts: list[str]) -> None:
        super().__init__()
        self.hosts = hosts


class FleetScreen(Screen[None]):
    AUTO_FOCUS = "#fleet-table"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "open", "Open host", show=True),
        Binding("space", "pick", "Pick"),
        Binding("a", "pick_all", "Pick all", show=False),
        Binding("s", "sort", "Sort"),
        Binding("S", "reverse", "Reverse", show=False),
        Binding("c", "change", "Change…"),
    ]
    DEFAULT_CSS = """
    #fleet-title { height: 1; background: $panel; padding: 0 1; }
    #fleet-table { height: auto; max-height: 1fr; }
    #fleet-table:focus { background-tint: $foreground 4%; }
    #fleet-total { height: 1; margin-bottom: 1; }
    #fleet-router-box { height: auto; max-height: 16; }
    #fleet-change { height: auto; margin-top: 1; }
    """

    def __init__(self, state: FleetState, *, readonly: bool) -> None:
        super().__init__()
        self.state = state
        self.readonly = readonly
        self.painted_version = -1
        self._wide: bool | None = None

    def compose(self) -> ComposeResult:
        yield Static(id="fleet-title")
        with Container(id="body"):
            yield FleetTable(id="fleet-table")
            yield Static(id="fleet-total")
            with VerticalScroll(id="fleet-router-box"):
                yield Static(id="fleet-router")
            yield Static(id="fleet-change")
        yield ConsoleFooter(compact=True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "change" and self.readonly:
            return None  # greyed, does nothing
        return True

    @property
    def cursor_host(self) -> str | None:
        table = self.query_one_optional("#fleet-table", FleetTable)
        return table.cursor_host if table is not None else None

    # -- painting -----------------------------------------------------------------------------
    def on_resize(self, event: Resize) -> None:
        if self._wide is not None and (event.size.width >= WIDE_FROM) != self._wide:
            self.painted_version = -1
            self.paint(self.state)

    def paint(self, state: FleetState) -> None:
        """Draw what changed since the last paint (the title's ages move every time)."""
        title = self.query_one_optional("#fleet-title", Static)
        if title is None:
            return
        rows = state.rows()
        title.update(words.title(state, rows, readonly=self.readonly))
        if state.router is not None:  # its age moves every time, as the title's do
            wide = self.size.width >= WIDE_FROM
            self.query_one("#fleet-router", Static).update(router_words.router_panel(state, wide))
        version = state.data_version()
        if version == self.painted_version:
            return
        self._paint_table(rows, state)
        self.query_one("#fleet-total", Static).update(words.total_line(state.total(rows)))
        if state.router is None:
            self.query_one("#fleet-router", Static).update(router_words.router_panel(state, wide=True))
        self.query_one("#fleet-change", Static).update(words.change_lines(state))
        self.painted_version = version

    def _paint_table(self, rows: list[FleetRow], state: FleetState) -> None:
        wide = self.size.width >= WIDE_FROM
        columns = words.columns(wide)
        cells = [words.cells(row, state, wide) for row in rows]
        labels = [label for _, label in columns]
        words.fit(cells, labels, self.size.width - ROOM)
        right = [key in words.RIGHT for key, _ in columns]
        self.query_one("#fleet-table", FleetTable).show(labels, right, [r.name for r in rows], cells)
        self._wide = wide

    # -- what the operator asks ---------------------------------------------------------------
    def on_fleet_table_selected(self, event: FleetTable.Selected) -> None:
        self.post_message(OpenHost(event.host))

    def action_open(self) -> None:
        host = self.cursor_host
        if host is not None:
            self.post_message(OpenHost(host))

    def action_pick(self) -> None:
        host = self.cursor_host
        if host is not None:
            self.state.toggle_pick(host)
            self.paint(self.state)

    def action_pick_all(self) -> None:
        self.state.pick_all()
        self.paint(self.state)

    def action_sort(self) -> None:
        self.state.cycle_sort()
        self.paint(self.state)
        self.notify(f"Sorted by {SORT_WORDS[self.state.sort]}", title="Fleet", timeout=2)

    def action_reverse(self) -> None:
        self.state.reverse()
        self.paint(self.state)

    def action_change(self) -> None:
        hosts = self.state.targets(self.cursor_host)
        if hosts:
            self.post_message(ChangeAsked(hosts))
