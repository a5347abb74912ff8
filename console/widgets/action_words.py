"""An action in the console's words: its label, a rejection, a result, how it ended, a log line.

Every screen that shows actions (Controls, Profiles, Bench, Logs) and the session's plan → confirm
→ apply flow say them the same way.
"""

from __future__ import annotations

from rich.text import Text

from agent.wire import ActionEvent, ActionRequest, ActionResult, Event, Plan
from agent.wire.actions import setting_name, spec_of
from console.model.actions import ActionState, ActionTracker
from console.widgets.format import clock, human, human_setting

_STATUS_STYLE = {
    "applied": "$ok",
    "failed": "$bad",
    "rejected": "$bad",
    "expired": "$bad",
    "cancelled": "$warn",
}


def action_label(request: ActionRequest) -> str:
    """ "threshold → 64", "load profile kimi-k25-baseline", "release the step pin": the catalogue's."""
    return label_of(request.kind, request.value)


def label_of(kind: str, value: object) -> str:
    spec = spec_of(kind)
    return spec.action_label(value) if spec is not None else f"{kind} → {human(value)}"


def rejection_text(plan: Plan) -> Text:
    """The refusal in the agent's words; the field it names is said when it is not the setting the
    action changes (a profile's broken key), the reason names that one already."""
    spec = spec_of(plan.request.kind)
    own = spec is not None and plan.rejected_field == spec.key
    field = f" ({plan.rejected_field})" if plan.rejected_field and not own else ""
    return Text.assemble(
        ("Rejected", "$bad-bold"),
        f" {action_label(plan.request)}{field}: {plan.reason}. Nothing was changed.",
    )


def changes_words(plan: Plan) -> str:
    """The plan's changes, old → new in an operator's units: what an applied action did."""
    return "; ".join(
        f"{setting_name(c.key).removeprefix('speculation.')} {human_setting(c.key, c.old)} → "
        f"{human_setting(c.key, c.new)}"
        for c in plan.changes
    )


def result_text(request: ActionRequest, result: ActionResult) -> Text:
    if result.status == "applied":
        done = changes_words(result.plan)
        return Text(f"{action_label(request)}: applied" + (f" ({done})." if done else "."), style="$ok")
    if result.status == "applying":
        return Text(
            f"{action_label(request)}: applying — {result.message or 'the agent is carrying it out'}. "
            "This ends when the agent says the action ended.",
            style="$warn",
        )
    style = _STATUS_STYLE.get(result.status, "$warn")
    return Text(f"{action_label(request)}: {result.status}. {result.message}".strip(), style=style)


def ended_text(request: ActionRequest, state: ActionState) -> Text:
    """How an action that was applying ended, as the agent reported it."""
    style = _STATUS_STYLE.get(state.phase, "$warn")
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
    agent's record of another's, or the kind and value the event carries), the phase, and why it
    was refused, failed or expired (the event's ``detail``, said once). Only an action nobody could
    look up, or an event of another family, reads as the agent's message."""
    text = Text()
    if not isinstance(event, ActionEvent):
        text.append(event.message)
        return text
    data = event.data
    phase = event.name.removeprefix("action.")
    label = tracker.labels.get(data.action_id)
    if label is None and data.kind:
        label = label_of(data.kind, data.value)
    if label is None:
        text.append(event.message)
        return text
    text.append(f"{label}: ")
    text.append(phase, style=_STATUS_STYLE.get(phase, "$warn"))
    if phase in ("failed", "expired", "rejected") and data.detail:
        text.append(f" — {data.detail}", style="dim")
    return text
