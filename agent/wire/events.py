"""Events and operator actions on the wire: what the agent did, and what the operator asked for."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


EventKind = Literal[
    "engine",  # started, ready, crashed, restarting, reattached, stopped, crash_loop
    "action",  # an operator action was planned, applied, rejected or failed
    "speculation",  # speculation switched on/off or changed steps (seen in telemetry)
    "bench",  # benchmark started, progress, finished, failed
    "agent",  # agent started, stopping
    "finding",  # a health finding appeared or cleared
]


class Event(_Wire):
    seq: int = Field(description="Shares the stream cursor with snapshots")
    time: float
    kind: EventKind
    name: str = Field(description="e.g. 'engine.crashed', 'action.applied'")
    message: str = Field(description="One line an operator can read")
    data: dict[str, Any] = Field(default_factory=dict)


ActionKind = Literal["threshold", "steps", "topk", "adaptive", "apply_profile"]
PlanMode = Literal["live", "restart", "rejected", "noop"]


class ActionRequest(_Wire):
    """An operator's request; ``request_id`` makes a repeated request (after a timeout) idempotent."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    request_id: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: ActionKind
    value: int | bool | str | None = Field(
        None, description="threshold/steps/topk: int; adaptive: bool; apply_profile: profile name"
    )
    operator: str | None = Field(None, max_length=64, description="SSH user as the console passes it")


class Change(_Wire):
    key: str
    old: Any = None
    new: Any = None


class Plan(_Wire):
    action_id: str
    request: ActionRequest
    mode: PlanMode
    reason: str = Field(description="Why live / why a restart / why rejected, in an operator's words")
    changes: list[Change] = Field(default_factory=list)
    expected_downtime_s: float | None = None
    drain_timeout_s: float | None = None
    rejected_field: str | None = None


ActionStatus = Literal["planned", "applying", "applied", "rejected", "failed", "expired", "cancelled"]


class ActionResult(_Wire):
    action_id: str
    status: ActionStatus
    plan: Plan
    message: str = ""
    applied_at: float | None = None
