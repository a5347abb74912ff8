"""What an undo puts back: the last applied change, as the audit records it, and the request that reverses it.

An operator who changed the threshold at 3 a.m. and wants it back should not read the old value off
the Audit and type it. The audit already holds what every applied change found (``before``) and left
(``after``); the undo reads the newest applied operator change there and asks for its ``before``
again, as a request of the same kind, so the planner plans, the operator confirms and the audit
records it like any other change. An undo of an undo applies the undone change again (its record
names the kind it reversed). A profile load is not undone here: it changed the whole profile, and
the profile that ran before it may have changed since; the refusal says what to do instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agent.control.audit import AuditLog
from agent.wire.actions import CATALOGUE, ActionKind, spec_of

UNDONE_KINDS: frozenset[str] = frozenset(k for k in CATALOGUE if k != "undo") | {"undo"}
"""Audit kinds that are an operator's change (the autopilot's own moves, ``autopilot.move``, are not)."""
SCAN_LINES = 10_000
"""How far back the undo looks for the last applied change."""


@dataclass(frozen=True)
class LastChange:
    """The newest applied operator change in the audit."""

    action_id: str
    kind: ActionKind
    """The kind whose setting it changed (an undo's: the kind it reversed)."""
    operator: str | None
    time: float
    before: dict[str, Any]
    after: dict[str, Any]

    def words(self) -> str:
        """ "threshold none → 142" (the catalogue's words for the setting's values)."""
        spec = CATALOGUE[self.kind]
        key = spec.shown_keys[0] if spec.shown_keys else spec.key
        if key in self.before or key in self.after:
            return f"{spec.name} {spec.words(self.before.get(key))} → {spec.words(self.after.get(key))}"
        return spec.action_label(self.after.get(key))


def _changed(record: dict[str, Any]) -> bool:
    action, result = record.get("action") or {}, record.get("result") or {}
    if record.get("phase") not in ("outcome", "record") or result.get("status") != "applied":
        return False
    before, after = record.get("before"), record.get("after")
    return (
        action.get("kind") in UNDONE_KINDS
        and isinstance(before, dict)
        and isinstance(after, dict)
        and before != after
    )


def last_applied(audit: AuditLog) -> LastChange | None:
    """The newest applied change an operator asked for that changed something (a plan with nothing
    to change is no change), or None when the audit holds none."""
    record = audit.newest(_changed, most=SCAN_LINES)
    if record is None:
        return None
    action = record["action"]
    kind = str(action.get("kind"))
    if kind == "undo":
        kind = str((action.get("undoes") or {}).get("kind"))
    spec = spec_of(kind)
    if spec is None or spec.kind == "undo":
        return None
    return LastChange(
        action_id=str(action.get("action_id") or "an earlier action"),
        kind=spec.kind,
        operator=record.get("operator"),
        time=float(record.get("time") or 0.0),
        before=dict(record["before"]),
        after=dict(record["after"]),
    )


def reverse(last: LastChange) -> tuple[ActionKind, int | bool | str] | str:
    """The request (kind, value) that puts back what ``last`` found; else why it cannot, in words."""
    spec = CATALOGUE[last.kind]
    if spec.kind == "apply_profile":
        was = last.before.get("identity.name")
        instead = (
            f"load the profile that ran before it ({was}) from Profiles"
            if was
            else "load a profile from Profiles"
        )
        return (
            f"undo: the last applied change ({last.action_id}) loaded a whole profile; an undo puts back one "
            f"setting, so {instead} (agent control profile NAME)"
        )
    key = spec.shown_keys[0]
    if key not in last.before:
        return f"undo: the audit line of {last.action_id} keeps no earlier value of {spec.name}"
    value = last.before[key]
    if value is None:
        value = spec.unset
    if value is None or spec.wrong_type(value) is not None:
        return f"undo: the audit line of {last.action_id} keeps no earlier value of {spec.name} to put back"
    return spec.kind, value
