"""The audit log as ``GET /v1/audit`` answers it, and one line per change for a reader.

The agent writes a change ahead: its intent, then its outcome (``agent.control.audit``). A reader
(``agent audit``, the console's Audit screen) shows one line per change: an intent whose outcome is
in the same page is not shown again; one without (in flight, or the agent was killed between the
two) stays, and says so. Records of earlier versions (no ``phase``) read as single records.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from agent.wire.actions import spec_of
from agent.wire.autopilot import MoveKind

AgentOperation = Literal[
    "engine_start", "engine_stop", "engine_restart", "agent_stop", "profile_save", "profile_delete",
    "bench_start", "bench_end", "bench_cancel", "bench_force",
]  # fmt: skip
"""The changes the agent audits that are no operator action of the catalogue (``agent.wire.actions``):
the engine's and the agent's start and stop, profile saves, benchmarks (``agent.serve.operations``)."""
AGENT_KINDS: Final[tuple[str, ...]] = (
    *get_args(AgentOperation),
    "reconcile",
    "live_restore",
    *(f"autopilot.{move}" for move in get_args(MoveKind)),
)
"""Every audit kind besides the catalogue's actions: the operations above, the start-up reconcile and
live restore (``agent.serve.reconcile``) and the autopilot's moves (``agent.control.autopilot``)."""


class _Open(BaseModel):
    """Typed where read; what else a record holds is kept as it is (``agent audit --json`` prints it)."""

    model_config = ConfigDict(extra="allow")


class AuditSource(_Open):
    """Where a request came from: the API (its peer and client) or the agent itself (and what part)."""

    via: str | None = None
    peer: str | None = Field(None, description="'unix socket' or host:port")
    client: str | None = Field(None, description="The client's User-Agent")
    what: str | None = Field(None, description="The agent's own part that wrote it")


class AuditAction(_Open):
    """What was acted on: an operator action (its id and request), or an operation of the agent's."""

    kind: str | None = None
    action_id: str | None = None
    op_id: str | None = None
    request_id: str | None = None
    change_id: str | None = Field(None, description="The fleet change it belongs to (one id on every host)")
    value: JsonValue = None
    mode: str | None = None


class AuditResult(_Open):
    status: str | None = None
    message: str | None = None


class AuditRecord(_Open):
    """One line of ``audit.jsonl``. Open beyond these fields: an action says what it changed."""

    time: float | None = None
    id: str | None = None
    phase: str = "record"
    """"intent" (before a change), "outcome" (after it) or "record" (a change in one line)."""
    operator: str | None = None
    source: AuditSource = AuditSource()
    action: AuditAction = AuditAction()
    before: JsonValue = None
    after: JsonValue = None
    result: AuditResult = AuditResult()

    @property
    def kind(self) -> str:
        return self.action.kind or ""

    @property
    def key(self) -> str | None:
        """What pairs an intent with its outcome: the operator action's id, or the operation's."""
        return self.action.action_id or self.action.op_id or None

    @property
    def change_id(self) -> str | None:
        """The fleet change this line belongs to: one id on every host's line of that change."""
        return self.action.change_id or None

    @property
    def status(self) -> str:
        if self.phase == "intent":
            return "intent"
        return self.result.status or "no outcome"

    @property
    def message(self) -> str:
        if self.phase == "intent":
            return "no outcome yet (in flight, or the agent stopped before it)"
        return self.result.message or ""

    @property
    def where(self) -> str:
        """ "unix socket", "127.0.0.1:51234", or "the agent" for its own records."""
        if self.source.via == "api":
            return self.source.peer or "the API"
        return "the agent"

    @property
    def subject(self) -> str:
        """What was acted on, for a record that names no setting before and after: the profile saved
        ("profile night-shift"), the run started or ended with its mode and levels ("run 2026…-9c5c63
        (compare at 1, 8, 64)": the id a word of its own, for a table that wraps), the value an action
        asked for ("threshold → -5", when it was refused)."""
        action = self.action
        spec = spec_of(action.kind or "")
        if spec is not None:
            return spec.action_label(action.value) if action.value is not None else ""
        extra = action.model_extra or {}
        name, run = extra.get("name"), extra.get("bench_id")
        if isinstance(name, str) and name:
            return f"profile {name}"
        run_words = _run_words(action.mode, extra.get("levels"))
        if isinstance(run, str) and run:
            return f"run {run}" + (f" ({run_words})" if run_words else "")
        return run_words


def _run_words(mode: str | None, levels: object) -> str:
    """ "compare at 1, 8, 64": a benchmark's mode and levels, as its audit records keep them."""
    words = mode if mode in ("sweep", "compare") else ""
    if isinstance(levels, list) and levels and all(isinstance(n, int) for n in levels):
        words += (" at " if words else "at ") + ", ".join(map(str, levels))
    return words


def change_or_subject(record: AuditRecord, change: str) -> str:
    """An audit line's change column: the settings it changed (``change``, in the catalogue's words),
    else what it acted on (:attr:`AuditRecord.subject`), else a dash."""
    return change or record.subject or "–"


class CorruptLine(BaseModel):
    """A line of the audit file the agent skipped: where it is, how long, why."""

    offset: int
    length: int
    reason: str


class AuditPage(BaseModel):
    lines: list[AuditRecord]
    corrupt: list[CorruptLine] = Field(default_factory=list)
    """Lines the agent skipped (torn or not JSON)."""
    cursor: int | None = None
    next_cursor: int | None = None


def one_line_per_change(records: Iterable[AuditRecord]) -> list[AuditRecord]:
    """Every record but the intents whose outcome is among ``records``."""
    records = list(records)
    settled = {r.key for r in records if r.phase == "outcome"} - {None}
    return [r for r in records if not (r.phase == "intent" and r.key in settled)]
