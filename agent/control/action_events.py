"""What an action's events say: the event name of each status, the words of a mode and of a request,
and the fields every action event carries, so that a console can follow one action from its plan to
its end. Apart from the action book, which decides when they are said."""

from __future__ import annotations

from typing import Any

from agent.wire import ActionRequest, ActionStatus, Plan
from agent.wire.actions import CATALOGUE

TERMINAL: frozenset[ActionStatus] = frozenset({"applied", "failed", "cancelled", "expired", "rejected"})
"""An action in one of these states is over: nothing more happens to it, and its event says so."""
EVENT_OF: dict[ActionStatus, str] = {
    "planned": "action.planned",
    "rejected": "action.rejected",
    "applying": "action.applying",
    "applied": "action.applied",
    "failed": "action.failed",
    "cancelled": "action.cancelled",
    "expired": "action.expired",
}
MODE_WORDS = {
    "live": "applied live, the server keeps serving",
    "restart": "needs an engine restart",
    "noop": "nothing to change",
    "rejected": "rejected",
}


def action_words(request: ActionRequest) -> str:
    """ "threshold → 64", "release the step pin", "load profile kimi-k25-eagle3": what the operator
    asked for, in the catalogue's words (the console's actions log says the same)."""
    return CATALOGUE[request.kind].action_label(request.value)


def event_data(plan: Plan, status: ActionStatus, detail: str = "") -> dict[str, Any]:
    """The same fields on every action event, so a console can follow one action from plan to end;
    ``detail`` is why it was refused, failed or expired (or what applying it did), without a prefix."""
    return {
        "detail": detail,
        "action_id": plan.action_id,
        "request_id": plan.request.request_id,
        "kind": plan.request.kind,
        "value": plan.request.value,
        "mode": plan.mode,
        "status": status,
        "terminal": status in TERMINAL,
        "rejected_field": plan.rejected_field,
        "change_id": plan.request.change_id,
    }
