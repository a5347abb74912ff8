"""The one way the console changes anything: ask the agent for a plan, show a rejection as it is,
confirm old → new with the operator, then apply. Controls, Profiles and Bench all go through here, so
an action started from any screen is planned, confirmed and audited the same way.

A restart answers "applying" at once and ends minutes later; the screen that started it follows
the agent's terminal event for that action (``console.model.actions``) and says how it ended.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from rich.text import Text
from textual.screen import Screen

from agent.wire import ActionKind, ActionRequest, ActionResult, Event, Plan
from console.link import LinkError
from console.model.actions import ActionState, ActionTracker
from console.screens.confirm import ConfirmPlan
from console.widgets.format import clock, human, human_setting

if TYPE_CHECKING:
    from console.app import ConsoleApp

_STATUS_STYLE = {
    "applied": "green",
    "failed": "red",
    "rejected": "red",
    "expired": "red",
    "cancelled": "yellow",
}


def action_label(request: ActionRequest) -> str:
    """ "threshold → 64", "load profile kimi-k25-baseline", "adaptive → off"."""
    if request.kind == "apply_profile":
        return f"load profile {request.value}"
    if request.kind == "steps" and request.value == -1:
        return "release the step pin"
    return f"{request.kind} → {human(request.value)}"


def rejection_text(plan: Plan) -> Text:
    field = f" ({plan.rejected_field})" if plan.rejected_field else ""
    return Text.assemble(
        ("Rejected", "bold red"), f" {action_label(plan.request)}{field}: {plan.reason}. Nothing was changed."
    )


def changes_words(plan: Plan) -> str:
    """The plan's changes, old → new in an operator's units: what an applied action did."""
    return "; ".join(
        f"{c.key.removeprefix('speculation.')} {human_setting(c.key, c.old)} → {human_setting(c.key, c.new)}"
        for c in plan.changes
    )


def result_text(request: ActionRequest, result: ActionResult) -> Text:
    if result.status == "applied":
        done = changes_words(result.plan)
        return Text(f"{action_label(request)}: applied" + (f" ({done})." if done else "."), style="green")
    if result.status == "applying":
        return Text(
            f"{action_label(request)}: applying — {result.message or 'the agent is carrying it out'}. "
            "This ends when the agent says the action ended.",
            style="yellow",
        )
    style = _STATUS_STYLE.get(result.status, "yellow")
    return Text(f"{action_label(request)}: {result.status}. {result.message}".strip(), style=style)


def ended_text(request: ActionRequest, state: ActionState) -> Text:
    """How an action that was applying ended, as the agent reported it."""
    style = _STATUS_STYLE.get(state.phase, "yellow")
    return Text(
        f"{action_label(request)}: {state.phase} at {clock(state.time)} UTC. {state.message}".strip(),
        style=style,
    )


def action_line(event: Event, tracker: ActionTracker) -> Text:
    """One line of the actions log: the time, then ``action_words``."""
    text = Text(f"{clock(event.time)} ", style="dim")
    text.append_text(action_words(event, tracker))
    return text


def action_words(event: Event, tracker: ActionTracker) -> Text:
    """An action event in the console's words: what was asked (from this console's own request, the
    agent's record of another's, or the kind and value when the event carries them), the phase, and
    why it failed. Only an action nobody could look up falls back to the agent's message."""
    data = event.data
    action_id = str(data.get("action_id", ""))
    phase = event.name.removeprefix("action.")
    label = tracker.labels.get(action_id)
    if label is None and isinstance(data.get("kind"), str) and "value" in data:
        with contextlib.suppress(ValueError):  # a kind this console does not know: the agent's message
            label = action_label(ActionRequest(request_id="x" * 8, kind=data["kind"], value=data["value"]))
    text = Text()
    if label is None:
        text.append(event.message)
        return text
    text.append(f"{label}: ")
    text.append(phase, style=_STATUS_STYLE.get(phase, "yellow"))
    detail = event.message.partition(": ")[2]
    if phase in ("failed", "expired", "rejected") and detail:
        text.append(f" — {detail}", style="dim")
    return text


@dataclass(frozen=True)
class Pending:
    """An action this screen confirmed that is still applying (a restart): followed until it ends."""

    request: ActionRequest
    action_id: str


@dataclass(frozen=True)
class FlowEnd:
    """How the flow ended: before the agent acted (rejected, nothing to do, cancelled, unreachable),
    or ``confirmed`` with the agent's result (applied, failed, or applying for a restart)."""

    outcome: Literal["rejected", "noop", "cancelled", "unreachable", "confirmed"]
    result: ActionResult | None = None
    action_id: str | None = None
    """The agent's id of the plan, once there was one."""


async def plan_confirm_apply(
    screen: Screen[Any],
    kind: ActionKind,
    value: int | bool | str,
    say: Callable[[Text], None],
) -> FlowEnd:
    """Plan → (rejected or nothing to do: say why) → confirm → apply. Never changes anything without
    the operator's confirm."""
    app: ConsoleApp = screen.app  # type: ignore[assignment]
    client = app.client
    request = ActionRequest(request_id=uuid.uuid4().hex, kind=kind, value=value, operator=app.operator)
    try:
        plan = await client.plan(request)
    except LinkError as exc:
        say(Text(f"Could not ask the agent for a plan: {exc}", style="red"))
        return FlowEnd("unreachable")
    app.model.actions.label(plan.action_id, action_label(request))
    if plan.mode == "rejected":
        say(rejection_text(plan))
        screen.notify(plan.reason, title=f"{action_label(request)}: rejected", severity="error")
        return FlowEnd("rejected", action_id=plan.action_id)
    if plan.mode == "noop":
        say(Text(f"Nothing to do: {plan.reason}", style="yellow"))
        return FlowEnd("noop", action_id=plan.action_id)
    latest = app.model.latest
    running = latest.profile_name if latest is not None else None
    production = bool(latest and latest.production)
    if not await app.push_screen_wait(ConfirmPlan(plan, running=running, production=production)):
        try:
            told = await client.cancel_plan(plan.action_id, app.operator)
            note = "" if told else " (this agent keeps the unconfirmed plan until it expires)"
        except LinkError as exc:
            note = f" (could not tell the agent: {exc}; the unconfirmed plan expires there)"
        say(Text(f"Cancelled; nothing was changed{note}.", style="yellow"))
        return FlowEnd("cancelled", action_id=plan.action_id)
    say(Text("Applying…", style="yellow"))
    try:
        result = await client.confirm(plan.action_id)
    except LinkError as exc:
        say(Text(f"The agent did not confirm the change: {exc}", style="red"))
        return FlowEnd("unreachable", action_id=plan.action_id)
    say(result_text(request, result))
    return FlowEnd("confirmed", result, plan.action_id)
