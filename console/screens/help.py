"""`?` help: every command of the registry, grouped, with its key; the same list the palette searches."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from rich.table import Table
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

from console.registry import COMMANDS, key_label


def help_table(readonly: bool, words: Mapping[str, str] | None = None) -> Table:
    table = Table(title="k25console commands (also in the palette: ctrl+p)", expand=True)
    table.add_column("key", style="bold", width=7)
    table.add_column("command", style="$info")
    table.add_column("what it does")
    group = None
    for command in COMMANDS:
        if command.group != group:
            group = command.group
            table.add_row("", f"[b]{group}[/b]", "")
        note = " (read-only: disabled)" if readonly and command.writes else ""
        key = key_label(command) if command.key else "palette"
        table.add_row(key, command.title_in(words), command.help + note)
    return table


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, readonly: bool, words: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self.readonly = readonly
        self.words = words

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):
            yield Static(help_table(self.readonly, self.words))

    async def action_dismiss(self, result: None = None) -> None:
        self.dismiss()
