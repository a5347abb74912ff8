"""The audit log as ``GET /v1/audit`` answers it, and one line per change for a reader.

The agent writes a change ahead: its intent, then its outcome (``agent.control.audit``). A reader
(``agent audit``, the console's Audit screen) shows one line per change: an intent whose outcome is
in the same page is not shown again; one without (in flight, or the agent was killed between the
two) stays, and says so. Records of earlier versions (no ``phase``) read as single records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class AuditRecord(BaseModel):
    """One line of ``audit.jsonl``. Open beyond these fields: an action says what it changed."""

    model_config = ConfigDict(extra="allow")

    time: float | None = None
    id: str | None = None
    phase: str = "record"
    """"intent" (before a change), "outcome" (after it) or "record" (a change in one line)."""
    operator: str | None = None
    source: dict[str, Any] = Field(default_factory=dict)
    action: dict[str, Any] = Field(default_factory=dict)
    before: Any = None
    after: Any = None
    result: dict[str, Any] = Field(default_factory=dict)

    @property
    def kind(self) -> str:
        return str(self.action.get("kind") or "")

    @property
    def key(self) -> str | None:
        """What pairs an intent with its outcome: the operator action's id, or the operation's."""
        key = self.action.get("action_id") or self.action.get("op_id")
        return str(key) if key else None

    @property
    def change_id(self) -> str | None:
        """The fleet change this line belongs to: one id on every host's line of that change."""
        change = self.action.get("change_id")
        return str(change) if change else None

    @property
    def status(self) -> str:
        if self.phase == "intent":
            return "intent"
        return str(self.result.get("status") or "no outcome")

    @property
    def message(self) -> str:
        if self.phase == "intent":
            return "no outcome yet (in flight, or the agent stopped before it)"
        return str(self.result.get("message") or "")

    @property
    def where(self) -> str:
        """ "unix socket", "127.0.0.1:51234", or "the agent" for its own records."""
        if self.source.get("via") == "api":
            return str(self.source.get("peer") or "the API")
        return "the agent"


class AuditPage(BaseModel):
    lines: list[AuditRecord]
    corrupt: list[dict[str, Any]] = Field(default_factory=list)
    """Lines the agent skipped (torn or not JSON): ``{"offset", "length", "reason"}``."""
    cursor: int | None = None
    next_cursor: int | None = None


def one_line_per_change(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """Every record but the intents whose outcome is among ``records``."""
    records = list(records)
    settled = {r.key for r in records if r.phase == "outcome"} - {None}
    return [r for r in records if not (r.phase == "intent" and r.key in settled)]
