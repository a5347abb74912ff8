"""The plan's confirm dialog: what will change, named in an operator's words, old → new, and for a
restart the drain and downtime. The title names the action and its value (the profile to load, the
threshold to set), never an internal kind."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from agent.wire import Plan
from console.screens.confirm_dialog import ConfirmDialog
from console.widgets.format import human, human_setting

RELEASE_PINNED_STEPS = -1
"""The steps request that hands the step choice back to SGLang's policy (the patch's live key value)."""


def plan_title(plan: Plan, running: str | None = None) -> str:
    request = plan.request
    value = request.value
    on = f" on {running}" if running else ""
    if request.kind == "apply_profile":
        if running == value:
            return f"Load profile {value} again from its file, undoing what changed since it was loaded?"
        return f"Load profile {value}" + (f" in place of {running}?" if running else "?")
    if request.kind == "threshold":
        if value == 0:
            return f"Remove the speculation threshold{on} (speculate at every batch size)?"
        return f"Set the speculation threshold to {human(value)}{on}?"
    if request.kind == "steps" and value == RELEASE_PINNED_STEPS:
        return f"Release the pinned step count{on} (SGLang's adaptive policy chooses again)?"
    if request.kind == "steps":
        return f"Pin speculation steps at {human(value)}{on}?"
    if request.kind == "topk":
        return f"Set topk to {human(value)}{on}?"
    return f"Turn adaptive speculation {human(value)}{on}?"


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
            change.key,
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
