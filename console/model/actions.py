"""Operator actions as the agent reports them on the stream, by action id.

A restart takes minutes; the confirm call returns "applying" at once. What the console shows after
that must come from the agent saying the action ended (applied, failed, expired or cancelled), not
from a guess or a timer: this is where those events are kept, so a screen asks "has action X ended?".
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Literal

from agent.wire import ActionEvent
from agent.wire.events import ActionName

ActionPhase = Literal["planned", "applying", "applied", "failed", "expired", "cancelled", "rejected"]

_PHASE_OF_EVENT: dict[ActionName, ActionPhase] = {
    "action.planned": "planned",
    "action.applying": "applying",
    "action.applied": "applied",
    "action.failed": "failed",
    "action.expired": "expired",
    "action.cancelled": "cancelled",
    "action.rejected": "rejected",
}
ENDED: frozenset[ActionPhase] = frozenset({"applied", "failed", "expired", "cancelled", "rejected"})

MAX_TRACKED = 500


@dataclass(frozen=True)
class ActionState:
    action_id: str
    phase: ActionPhase
    message: str
    time: float
    """The agent's time of the event that set this phase."""
    detail: str = ""
    """Why it was refused, failed or expired, or what applying it did (the event's, no prefix)."""

    @property
    def ended(self) -> bool:
        return self.phase in ENDED


class ActionTracker:
    """The newest phase of every action seen on the stream (bounded), and the words for the ones
    this console asked for (so its log says "threshold → 64: applied", not a message with a repr)."""

    def __init__(self) -> None:
        self._states: OrderedDict[str, ActionState] = OrderedDict()
        self.labels: dict[str, str] = {}
        self.looking_up: set[str] = set()
        """Actions of other consoles whose request is being fetched from the agent for its words."""

    def label(self, action_id: str, words: str | None) -> None:
        """The words for an action (None: the lookup failed; its lines fall back to the message)."""
        self.looking_up.discard(action_id)
        if words is not None:
            self.labels[action_id] = words
        while len(self.labels) > MAX_TRACKED:
            self.labels.pop(next(iter(self.labels)))

    def needs_label(self, event: ActionEvent) -> str | None:
        """The action id of an action event nobody has words for yet (and no lookup is running)."""
        action_id = event.data.action_id
        if action_id in self.labels or action_id in self.looking_up:
            return None
        if event.data.kind:
            return None  # the event says what was asked itself
        return action_id

    def ingest(self, event: ActionEvent) -> bool:
        """Take an action event; returns True when it moved an action to a new phase."""
        phase = _PHASE_OF_EVENT[event.name]
        action_id = event.data.action_id
        self._states[action_id] = ActionState(action_id, phase, event.message, event.time, event.data.detail)
        self._states.move_to_end(action_id)
        while len(self._states) > MAX_TRACKED:
            self._states.popitem(last=False)
        return True

    def get(self, action_id: str) -> ActionState | None:
        return self._states.get(action_id)

    def ended_since(self, time: float) -> list[ActionState]:
        """Actions that ended at or after ``time`` (agent time), oldest first."""
        return [s for s in self._states.values() if s.ended and s.time >= time]
