"""Audit: the agent's audit log, one row per change (what changed, who asked, from where, what came
of it), newest first, with the "/" filter of every list here (any cell). Fetched when the screen
comes into view and again after any action ends while it is in view; damaged lines the agent
skipped are counted above the table (the agent's ``corrupt`` list).

The table fits the screen's width (``console.widgets.table_fit``): the change wraps over more lines,
a name too long for its column ends with "…", and nothing runs past the edge, at 80 columns too."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.widgets import DataTable, Input, Static

from agent.profile.words import change_words, count_words
from agent.wire.actions import audit_kind_words, said
from agent.wire.audit import AuditPage, AuditRecord, change_or_subject, one_line_per_change
from console.link import LinkError
from console.model import ConsoleModel
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.session import Session
from console.widgets.filter import row_matches
from console.widgets.format import clock
from console.widgets.table_fit import ended, fit_widths, longest_word, natural_widths, wrapped

FETCH_RECORDS = 500
"""Records asked of the agent per fetch (the newest); the screen shows one row per change of them."""
STATUS_STYLE = {
    "applied": "$ok",
    "reconciled": "$ok",
    "failed": "$bad",
    "rejected": "$warn",
    "intent": "$warn",
}
COLUMNS = ("time", "operator", "kind", "outcome", "change", "from")
"""The outcome before the change, so that 100 columns show whether each change held; the message
of the row under the cursor is shown whole below the table."""
CHANGE = COLUMNS.index("change")
FLOORS = (8, 6, 9, 8, 16, 11)
"""The narrowest each column gets before the table scrolls: the time whole, "unix socket" whole,
a change wrapped at no fewer than 16 cells (and at its longest word where the others leave room:
a run's id keeps to one line), a name or a kind with its first letters and "…"."""


def audit_row(record: AuditRecord) -> tuple[str, ...]:
    """A record's cells in words (the filter matches these and the message, the table shows them)."""
    when = "unknown" if record.time is None else clock(record.time)
    return (
        when,
        record.operator or "unknown",
        audit_kind_words(record.kind) if record.kind else "unknown",
        record.status,
        change_or_subject(record, change_words(record.before, record.after, said)),
        record.where,
    )


class AuditScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("audit")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.page: AuditPage | None = None
        self.changes: list[tuple[AuditRecord, tuple[str, ...]]] = []
        """One per change of the page, newest first, with its cells: paired and worded once a fetch."""
        self.rows: list[AuditRecord] = []
        """What the table shows, in its order."""
        self.error: str | None = None
        self._actions_seen_at = -1.0

    def compose_body(self) -> ComposeResult:
        yield Input(id="audit-filter", placeholder="/ filter the audit lines", compact=True)
        yield Static(id="audit-status")
        table: DataTable[str | Text] = DataTable(id="audit-table", cursor_type="row")
        yield table
        yield Static(id="audit-detail")

    def on_mount(self) -> None:
        self._fit(self.query_one("#audit-table", DataTable), [])

    def _fit(self, table: DataTable[str | Text], rows: list[tuple[str, ...]]) -> list[int]:
        """The columns again, each as wide as the table's width allows (module docstring)."""
        available = table.scrollable_content_region.width or table.size.width or self.size.width
        word = longest_word([cells[CHANGE] for cells in rows])
        widths = fit_widths(natural_widths(COLUMNS, rows), available, wraps=CHANGE, floors=FLOORS, word=word)
        table.clear(columns=True)
        for name, width in zip(COLUMNS, widths, strict=True):
            table.add_column(name, key=name, width=width)
        return widths

    def on_resize(self, event: events.Resize) -> None:
        if self.changes:
            self._fill()

    def on_screen_resume(self) -> None:
        super().on_screen_resume()
        self.reload()

    def paint_body(self, model: ConsoleModel) -> None:
        """After any action ends (an audited change), the log is fetched again."""
        latest = model.latest
        if latest is None:
            return
        ended = model.actions.ended_since(self._actions_seen_at)
        if self._actions_seen_at < 0:
            self._actions_seen_at = latest.time
            return
        if ended:
            self._actions_seen_at = max(s.time for s in ended) + 1e-6
            self.reload()

    @work(exclusive=True, group="audit-fetch")
    async def reload(self) -> None:
        try:
            self.page = await self.session.client.audit(FETCH_RECORDS)
        except LinkError as exc:
            self.error = str(exc)
        else:
            self.error = None
            changes = reversed(one_line_per_change(self.page.lines))
            self.changes = [(r, audit_row(r)) for r in changes]
        self._fill()

    def shown(self) -> list[tuple[AuditRecord, tuple[str, ...]]]:
        """The changes, newest first, as the filter keeps them."""
        term = self.query_one("#audit-filter", Input).value.strip()
        return [(r, cells) for r, cells in self.changes if row_matches(term, *cells, r.message)]

    def _fill(self) -> None:
        table: DataTable[str | Text] = self.query_one("#audit-table", DataTable)
        row = table.cursor_row
        shown = self.shown()
        widths = self._fit(table, [cells for _, cells in shown])
        self.rows = [r for r, _ in shown]
        for n, (record, cells) in enumerate(shown):
            when, who, kind, status, change, where = cells
            outcome = Text(status, style=STATUS_STYLE.get(record.status, ""))
            first: tuple[str | Text, ...] = (when, who, kind, outcome)
            table.add_row(
                *(ended(v, w) for v, w in zip(first, widths, strict=False)),
                wrapped(change),
                ended(where, widths[-1]),
                key=record.id or f"row-{n}",
                height=None,
            )
        if shown and 0 < row < len(shown):
            table.move_cursor(row=row)
        self._show_status(len(shown))
        self._show_detail(table.cursor_row if shown else None)

    @on(DataTable.RowHighlighted, "#audit-table")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_detail(event.cursor_row)

    def _show_detail(self, row: int | None) -> None:
        """The row under the cursor, whole: its outcome's message, from where and by what client."""
        detail = self.query_one("#audit-detail", Static)
        if row is None or not 0 <= row < len(self.rows):
            detail.update("")
            return
        record = self.rows[row]
        kind = audit_kind_words(record.kind) if record.kind else "unknown"
        text = Text.assemble((f"{kind} {record.status}", "bold"))
        if record.message:
            text.append(f": {record.message}")
        client = record.source.client
        text.append(f"  (from {record.where}" + (f", {client})" if client else ")"), style="dim")
        detail.update(text)

    def _show_status(self, rows: int) -> None:
        text = Text()
        if self.error:
            text.append(f"Cannot read the audit log: {self.error}", style="$bad")
        elif self.page is None:
            text.append("reading the audit log…", style="dim")
        else:
            every = len(self.changes)
            text.append(
                f"{count_words(every, 'change')} in the newest {count_words(len(self.page.lines), 'record')}"
            )
            if rows != every:
                text.append(f", {rows} shown by the filter", style="bold")
            if self.page.corrupt:
                damaged = count_words(len(self.page.corrupt), "damaged line")
                text.append(f"   {damaged} skipped (torn or not JSON)", style="$warn")
        self.query_one("#audit-status", Static).update(text)

    @on(Input.Changed, "#audit-filter")
    def _filtered(self) -> None:
        self._fill()

    @on(Input.Submitted, "#audit-filter")
    def _filter_done(self) -> None:
        self.set_focus(self.query_one("#audit-table"))

    def action_filter(self) -> None:
        self.query_one("#audit-filter", Input).focus()

    def action_refresh_audit(self) -> None:
        self.reload()
