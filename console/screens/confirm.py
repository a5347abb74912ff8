"""The confirm dialog: the agent's plan, old → new, and for a restart the drain and downtime."""

from __future__ import annotations

from typing import ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static

from agent.wire import Plan


def plan_text(plan: Plan) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim")
    table.add_column()
    mode = Text("LIVE — applied without a restart", style="bold green")
    if plan.mode == "restart":
        mode = Text("RESTART — the engine drains, stops and starts again", style="bold yellow")
    table.add_row("mode", mode)
    table.add_row("why", plan.reason)
    if plan.mode == "restart":
        drain = f"{plan.drain_timeout_s:.0f} s at most" if plan.drain_timeout_s is not None else "until idle"
        down = (
            f"about {plan.expected_downtime_s:.0f} s" if plan.expected_downtime_s is not None else "unknown"
        )
        table.add_row("drain", drain)
        table.add_row("downtime", down)
    for change in plan.changes:
        table.add_row(change.key, Text.assemble((str(change.old), "red"), " → ", (str(change.new), "green")))
    return table


class ConfirmPlan(ModalScreen[bool]):
    """Returns True only on an explicit confirm; escape, n and the cancel button all return False."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Confirm"),
        Binding("n,escape", "answer(False)", "Cancel"),
    ]

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan

    def compose(self) -> ComposeResult:
        with Vertical(id="confirm-box"):
            yield Static(Text(f"Apply {self.plan.request.kind}?", style="bold"), id="confirm-title")
            yield Static(plan_text(self.plan), id="confirm-plan")
            with Horizontal(id="confirm-buttons"):
                yield Button("Confirm (y)", id="confirm-yes", variant="warning")
                yield Button("Cancel (n)", id="confirm-no")

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "confirm-yes")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
