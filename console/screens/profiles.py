"""Profiles: list, view, diff against what runs, load (plan + confirm), save the running settings."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Button, DataTable, Input, Static, TextArea

from agent.profile import Profile, ProfileError, dump_profile, parse_profile
from agent.wire.api import ProfileDiff, ProfileEntry, ProfileIssues, ProfileIssueView
from console.link import LinkError
from console.model import ConsoleModel
from console.registry import screen_bindings
from console.screens.base import LiveScreen
from console.screens.confirm_dialog import ConfirmDialog
from console.session import Pending, Session
from console.widgets.action_words import ended_text
from console.widgets.filter import row_matches
from console.widgets.format import human_setting
from console.widgets.table_fit import PADDING, ended, wrapped


def issues_text(detail: object) -> Text:
    """A 422 from the agent names file, key and rule for each problem (``ProfileIssues``); one per line."""
    try:
        issues = ProfileIssues.model_validate(detail).issues
    except ValidationError:
        issues = []
    if not issues:
        return Text(detail if isinstance(detail, str) else "the agent refused the profile", style="$bad")
    text = Text("The agent refused the profile:", style="$bad-bold")
    for issue in issues:
        text.append(f"\n  {issue_words(issue)}")
    return text


def issue_words(issue: ProfileIssueView) -> str:
    """A profile issue as one line: "file: key: rule"."""
    where = ": ".join(part for part in (issue.file, issue.key) if part)
    return f"{where}: {issue.rule}" if where else issue.rule


def warnings_text(warnings: list[ProfileIssueView]) -> Text:
    text = Text(style="$warn")
    for n, warning in enumerate(warnings):
        if n:
            text.append("\n")
        key = f"{warning.key}: " if warning.key else ""
        text.append(f"⚠ {key}{warning.rule}")
    return text


PLAN_MODE_WORDS = {"live": "applied live", "restart": "needs a restart", "noop": "nothing to change"}


def diff_table(diff: ProfileDiff) -> Table:
    table = Table(title=f"against what runs: {PLAN_MODE_WORDS[diff.plan.mode]}", expand=False)
    table.add_column("key")
    table.add_column("running", style="$bad")
    table.add_column("this profile", style="$ok")
    for change in diff.changes:
        table.add_row(
            change.key, human_setting(change.key, change.old), human_setting(change.key, change.new)
        )
    if not diff.changes:
        table.add_row("(no differences)", "", "")
    for reason in diff.plan.reasons:
        table.add_row(Text(reason, style="dim"), "", "")
    return table


def renamed(profile: Profile, new_name: str) -> Profile:
    """The running profile (the agent's, live changes included) under a new name."""
    return profile.model_copy(update={"identity": profile.identity.model_copy(update={"name": new_name})})


def running_mark(entry: ProfileEntry) -> str:
    """ "● running", or "● running, changed: topk" when what runs is no longer the saved file."""
    if not entry.running:
        return ""
    if not entry.changed:
        return "● running"
    keys = ", ".join(k.removeprefix("speculation.").removeprefix("server.") for k in entry.changed[:3])
    more = f" +{len(entry.changed) - 3}" if len(entry.changed) > 3 else ""
    return f"● running, changed: {keys}{more}"


class ProfilesScreen(LiveScreen):
    BINDINGS: ClassVar[list[BindingType]] = [*screen_bindings("profiles")]

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        self.entries: list[ProfileEntry] = []
        self.selected: str | None = None
        self.running: str | None = None
        self.pending: Pending | None = None
        self._actions_seen_at = -1.0

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="profiles-panes"):
            with Vertical(id="profiles-left"):
                yield Input(id="profile-filter", placeholder="/ filter", compact=True)
                table: DataTable[str | Text] = DataTable(id="profile-list", cursor_type="row")
                yield table
                yield Button("Diff", id="profile-diff", compact=True)
                yield Button("Load…", id="profile-load", classes="apply", compact=True)
                yield Input(id="profile-new-name", placeholder="new profile name", compact=True)
                yield Button("Save running as", id="profile-save", classes="apply", compact=True)
            with Vertical(id="profiles-right"):
                yield TextArea("", id="profile-toml", read_only=True, language=None, show_line_numbers=False)
                yield Static("", id="profile-result")

    def on_mount(self) -> None:
        if self.session.readonly:
            for widget in self.query("Button.apply, #profile-new-name"):
                widget.disabled = True
        self.reload()

    def paint_body(self, model: ConsoleModel) -> None:
        """The list follows the server: after any action ends, the running mark is fetched again, and
        a profile load that restarts the engine says how it ended when the agent says so."""
        latest = model.latest
        if latest is None:
            return
        ended = model.actions.ended_since(self._actions_seen_at)
        if self._actions_seen_at < 0:
            self._actions_seen_at = latest.time  # what ended before this screen opened is in the list
            return
        if ended:
            self._actions_seen_at = max(s.time for s in ended) + 1e-6
            self.reload()
        pending = self.pending
        state = model.actions.get(pending.action_id) if pending is not None else None
        if pending is not None and state is not None and state.ended:
            self.pending = None
            self._say(ended_text(pending.request, state))

    def _say(self, text: Text | Table | str) -> None:
        self.query_one("#profile-result", Static).update(text)

    @work(exclusive=True, group="profiles-list")
    async def reload(self, select: str | None = None, note: Text | None = None) -> None:
        """The list again; ``select``: a profile just saved, put under the cursor and shown with
        ``note`` (what the save said) kept below it."""
        try:
            profiles = (await self.session.client.profiles()).profiles
        except LinkError as exc:
            self._say(Text(f"Cannot list profiles: {exc}", style="$bad"))
            return
        self.entries = profiles
        self.running = next((e.name for e in profiles if e.running), None)
        self._fill()
        if (self.selected is None or select is not None) and profiles:
            first = select or self.running or profiles[0].name
            self.selected = first
            table: DataTable[str | Text] = self.query_one(DataTable)
            if first in table.rows:
                table.move_cursor(row=table.get_row_index(first))
            self.show_profile(first, note)

    def _fill(self) -> None:
        """The list as the filter keeps it, one column as wide as the panel: the running profile's row
        says under its name what changed since its file, wrapped rather than cut (a second column was
        cut to "● running," and scrolled sideways, its scrollbar a stray block in the panel)."""
        table: DataTable[str | Text] = self.query_one(DataTable)
        at = table.cursor_row
        width = max(8, (table.scrollable_content_region.width or table.size.width) - PADDING)
        table.clear(columns=True)
        table.add_column("profile", key="name", width=width)
        term = self.query_one("#profile-filter", Input).value.strip()
        shown = [e for e in self.entries if row_matches(term, e.name, running_mark(e))]
        for entry in shown:
            mark = running_mark(entry)
            cell = ended(entry.name, width)
            if mark:
                cell.append("\n")
                cell.append_text(wrapped(Text(mark, style="$ok")))
            table.add_row(cell, key=entry.name, height=None)
        if shown:
            table.move_cursor(row=min(at, len(shown) - 1))

    def on_resize(self) -> None:
        if self.entries:
            self._fill()

    @on(Input.Changed, "#profile-filter")
    def _filtered(self) -> None:
        self._fill()

    @on(Input.Submitted, "#profile-filter")
    def _filter_done(self) -> None:
        self.set_focus(self.query_one("#profile-list"))

    @on(Input.Submitted, "#profile-new-name")
    def _name_done(self) -> None:
        """A name typed and Enter: saves the running settings under it (as "Save running as" does)."""
        self.act("save")

    def action_profile(self, what: str) -> None:
        """The registry's "Load profile", "Save running as profile" (palette and help)."""
        self.act(what)

    def action_profile_diff(self) -> None:
        self.act("diff")

    def action_filter(self) -> None:
        self.query_one("#profile-filter", Input).focus()

    @on(DataTable.RowHighlighted, "#profile-list")
    def _highlighted(self, event: DataTable.RowHighlighted) -> None:
        """Only the operator's moves (keys or mouse, which focus the table) select a profile."""
        if not event.data_table.has_focus:
            return
        if event.row_key.value is not None and event.row_key.value != self.selected:
            self.show_profile(str(event.row_key.value))

    @work(exclusive=True, group="profiles-view")
    async def show_profile(self, name: str, note: Text | None = None) -> None:
        self.selected = name
        try:
            read = await self.session.client.profile(name)
        except LinkError as exc:
            self._say(Text(f"Cannot read {name}: {exc}", style="$bad"))
            return
        self.query_one(TextArea).text = read.toml
        self._say(warnings_text(read.warnings) if read.warnings else (note or ""))

    @on(Button.Pressed, "#profile-diff")
    def _diff_pressed(self) -> None:
        self.act("diff")

    @on(Button.Pressed, "#profile-load")
    def _load_pressed(self) -> None:
        self.act("load")

    @on(Button.Pressed, "#profile-save")
    def _save_pressed(self) -> None:
        self.act("save")

    @work(exclusive=True, group="profiles-act")
    async def act(self, what: str) -> None:
        client = self.session.client
        if what != "diff" and self.session.readonly:
            self._say(Text("Read-only: profiles cannot be loaded or saved.", style="$info"))
            return
        try:
            if what == "diff" and self.selected:
                self._say(diff_table(await client.profile_diff(self.selected)))
            elif what == "load" and self.selected:
                end = await self.session.plan_confirm_apply("apply_profile", self.selected, self._say)
                if end.result is not None and end.result.status == "applying":
                    self.pending = Pending(end.result.plan.request, end.result.action_id)
                    self.painted_version = -1
                    self.session.paint_now()
            elif what == "save":
                await self._save_running()
        except LinkError as exc:
            self._say(issues_text(exc.detail) if exc.status == 422 else Text(str(exc), style="$bad"))

    async def _save_running(self) -> None:
        new_name = self.query_one("#profile-new-name", Input).value.strip()
        if not new_name:
            self._say(Text("Type a name for the new profile first.", style="$bad"))
            return
        running = await self.session.client.running_profile()  # what runs now, live changes included
        try:
            profile = renamed(parse_profile(running.toml, "the running profile"), new_name)
        except (ProfileError, ValueError) as exc:
            self._say(Text(f"Cannot build the new profile: {exc}", style="$bad"))
            return
        # An existing name is replaced only on a confirm (its name typed for a production profile),
        # naming the version this list showed: a file changed since is refused (412), not overwritten.
        existing = next((e for e in self.entries if e.name == new_name), None)
        typed: str | None = None
        if existing is not None:
            dialog = ConfirmDialog(
                f"Replace {new_name}?",
                Text(f"{new_name} exists; the running settings replace it (the agent keeps the old file)."),
                challenge=new_name if existing.production else None,
            )
            if not await self.session.ask(dialog):
                self._say(Text(f"Cancelled; {new_name} is as it was.", style="$warn"))
                return
            typed = dialog.typed
        try:
            await self.session.client.save_profile(
                new_name,
                dump_profile(profile),
                replaces=existing.digest if existing is not None else None,
                confirm_production=typed,
                operator=self.session.operator,
            )
        except LinkError as exc:
            if exc.status not in (412, 428):
                raise
            self._say(Text(f"Not saved: {exc}", style="$bad"))
            self.reload()
            return
        saved = Text(f"Saved the running settings as {new_name}.", style="$ok")
        self._say(saved)
        # What was saved is under the list's cursor and shown (the name stays, for saving it again).
        self.reload(select=new_name, note=saved)
