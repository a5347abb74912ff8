"""The one way the console changes anything: ask the agent for a plan, show a rejection as it is,
confirm old → new with the operator, then apply. Controls, Profiles and Bench all go through here, so
an action started from any screen is planned, confirmed and audited the same way."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from rich.text import Text
from textual.screen import Screen

from agent.wire import ActionKind, ActionRequest, ActionResult, Plan
from console.link import LinkError
from console.link.client import AgentClient
from console.screens.confirm import ConfirmPlan


def rejection_text(plan: Plan) -> Text:
    field = f" ({plan.rejected_field})" if plan.rejected_field else ""
    return Text.assemble(("Rejected", "bold red"), f"{field}: {plan.reason}. Nothing was changed.")


def result_text(label: str, result: ActionResult) -> Text:
    style = {"applied": "green", "failed": "red", "rejected": "red"}.get(result.status, "yellow")
    return Text(f"{label}: {result.status}. {result.message}".strip(), style=style)


async def plan_confirm_apply(
    screen: Screen[Any],
    client: AgentClient,
    kind: ActionKind,
    value: int | bool | str,
    operator: str | None,
    say: Callable[[Text], None],
) -> ActionResult | None:
    """Plan → (rejected or nothing to do: say why) → confirm → apply. Never changes anything without
    the operator's confirm; returns the agent's result when something was applied."""
    request = ActionRequest(request_id=uuid.uuid4().hex, kind=kind, value=value, operator=operator)
    try:
        plan = await client.plan(request)
    except LinkError as exc:
        say(Text(f"Could not ask the agent for a plan: {exc}", style="red"))
        return None
    if plan.mode == "rejected":
        say(rejection_text(plan))
        screen.notify(plan.reason, title=f"{kind} rejected", severity="error")
        return None
    if plan.mode == "noop":
        say(Text(f"Nothing to do: {plan.reason}", style="yellow"))
        return None
    if not await screen.app.push_screen_wait(ConfirmPlan(plan)):
        say(Text("Cancelled; nothing was changed.", style="yellow"))
        return None
    say(Text("Applying…", style="yellow"))
    try:
        result = await client.confirm(plan.action_id)
    except LinkError as exc:
        say(Text(f"The agent did not confirm the change: {exc}", style="red"))
        return None
    say(result_text(str(kind), result))
    return result
