"""The plan's confirm dialog: what will change, named in an operator's words, old → new, and for a
restart the drain and downtime. The title names the action and its value (the profile to load, the
threshold to set), never an internal kind: both come from the action catalogue (``agent.wire.actions``)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from agent.wire import Plan
from agent.wire.actions import setting_name, spec_of
from console.screens.confirm_dialog import ConfirmDialog
from console.widgets.format import human, human_setting


def plan_title(plan: Plan, running: str | None = None) -> str:
    """The catalogue's question for the kind and value (``agent.wire.actions``); a kind this console
    does not know (a newer agent's) is asked about by its name."""
    request = plan.request
    spec = spec_of(request.kind)
    if spec is None:
        return f"Apply {request.kind} {human(request.value)}" + (f" on {running}?" if running else "?")
    return spec.confirm_title(request.value, running)


def plan_text(plan: Plan) -> Table:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="dim")
    table.add_column()
    mode = Text("LIVE — applied without a restart", style="$ok-bold")
    if plan.mode == "restart":
        mode = Text("RESTART — the engine drains, stops and starts again", style="$warn-bold")
    table.add_row("mode", mode)
    if plan.reason:
        table.add_row("why", plan.reason)
    if plan.mode == "restart":
        drain = f"{plan.drain_timeout_s:.0f} s at most" if plan.drain_timeout_s is not None else "until idle"
        down = (
            f"about {plan.expected_downtime_s:.0f} s" if plan.expected_downtime_s is not None else "unknown"
        )
        table.add_row("drain", drain)
        table.add_row("downtime", down)
    for change in plan.changes:
        table.add_row(
            setting_name(change.key),
            Text.assemble(
                (human_setting(change.key, change.old), "$bad"),
                " → ",
                (human_setting(change.key, change.new), "$ok"),
            ),
        )
    return table


class ConfirmPlan(ConfirmDialog):
    """A plan to confirm; on a production profile a restart asks for the profile's name typed."""

    def __init__(self, plan: Plan, *, running: str | None = None, production: bool = False) -> None:
        challenge = running if production and plan.mode == "restart" and running else None
        super().__init__(plan_title(plan, running), plan_text(plan), challenge=challenge)
        self.plan = plan
