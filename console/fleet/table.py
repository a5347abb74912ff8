"""The Fleet screen's host table: one Rich table drawn in one piece, with a row cursor of its own.

Textual's DataTable draws every cell again on any cell's update (its cache is keyed by an update
count): with 16 hosts at 4 ticks a second that was most of the console's CPU and held the loop long
enough to make ticks late. One Rich table per paint costs a fraction of it.
"""

from __future__ import annotations

from typing import ClassVar

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text
from textual.binding import Binding, BindingType
from textual.message import Message
from textual.widgets import Static


class FleetTable(Static, can_focus=True):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("up", "move(-1)", "Up", show=False),
        Binding("down", "move(1)", "Down", show=False),
        Binding("home", "move(-1000)", show=False),
        Binding("end", "move(1000)", show=False),
        Binding("enter", "select", "Open host", show=False),
    ]

    class Selected(Message):
        def __init__(self, host: str) -> None:
            super().__init__()
            self.host = host

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.labels: list[str] = []
        self.justify: list[bool] = []
        self.hosts: list[str] = []
        self.cells: list[list[Text]] = []
        self.cursor = 0

    @property
    def cursor_host(self) -> str | None:
        return self.hosts[self.cursor] if 0 <= self.cursor < len(self.hosts) else None

    def show(self, labels: list[str], right: list[bool], hosts: list[str], cells: list[list[Text]]) -> None:
        """New contents; the cursor stays on its host (wherever the order moved it)."""
        held = self.cursor_host
        self.labels, self.justify, self.hosts, self.cells = labels, right, hosts, cells
        if held in hosts:
            self.cursor = hosts.index(held)
        self.cursor = max(0, min(self.cursor, len(hosts) - 1))
        self.update(self._table())

    def as_text(self) -> dict[str, dict[str, str]]:
        """host → column label → the cell's words (for tests and the bench)."""
        return {
            h: dict(zip(self.labels, (c.plain for c in row), strict=True))
            for h, row in zip(self.hosts, self.cells, strict=True)
        }

    def _table(self) -> RenderableType:
        table = Table(box=None, padding=(0, 1), show_edge=False, expand=False, header_style="bold")
        for label, right in zip(self.labels, self.justify, strict=True):
            table.add_column(label, justify="right" if right else "left", no_wrap=True)
        for index, row in enumerate(self.cells):
            table.add_row(*row, style="reverse" if index == self.cursor and self.has_focus else None)
        return table

    def action_move(self, by: int) -> None:
        if self.hosts:
            self.cursor = max(0, min(len(self.hosts) - 1, self.cursor + by))
            self.update(self._table())

    def action_select(self) -> None:
        host = self.cursor_host
        if host is not None:
            self.post_message(self.Selected(host))

    def on_focus(self) -> None:
        self.update(self._table())

    def on_blur(self) -> None:
        self.update(self._table())
