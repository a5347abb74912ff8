"""Events and operator actions on the wire: what the agent did, and what the operator asked for."""

from __future__ import annotations

from typing import Annotated, Any, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
)
from pydantic_core import PydanticCustomError

from agent.wire.actions import ActionKind, spec_of


class _Wire(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


EventKind = Literal[
    "engine",  # started, ready, crashed, restarting, reattached, stopped, crash_loop
    "action",  # an operator action was planned, applied, rejected or failed
    "speculation",  # speculation switched on/off or changed steps (seen in telemetry)
    "bench",  # benchmark started, progress, finished, failed
    "agent",  # agent started, stopping
    "finding",  # a health finding appeared or cleared
    "autopilot",  # the speculation autopilot moved, probed, reverted, was turned on or off
]


EventName = Literal[
    # engine (the supervisor)
    "engine.starting",
    "engine.ready",
    "engine.start_failed",
    "engine.start_timeout",
    "engine.crashed",
    "engine.crash_loop",
    "engine.restarting",
    "engine.reattached",
    "engine.profile_differs",
    "engine.record_stale",
    "engine.draining",
    "engine.drain_timeout",
    "engine.stopped",
    "engine.killed",
    "engine.supervisor_error",
    "engine.port_held",
    "engine.live_restored",
    "engine.live_restore_failed",
    "engine.restart_resumed",
    "engine.record_unreadable",
    "engine.waiting_for_disk",
    # action (plan -> confirm -> apply)
    "action.planned",
    "action.rejected",
    "action.applying",
    "action.applied",
    "action.failed",
    "action.expired",
    "action.cancelled",
    # speculation (seen in telemetry, agent.telemetry.changes)
    "speculation.on",
    "speculation.off",
    "speculation.steps",
    "speculation.threshold",
    # finding (seen in telemetry)
    "finding.raised",
    "finding.cleared",
    # bench
    "bench.started",
    "bench.progress",
    "bench.finished",
    "bench.failed",
    "bench.cancelled",
    # autopilot (agent.control.autopilot)
    "autopilot.enabled",
    "autopilot.disabled",
    "autopilot.unavailable",
    "autopilot.move",
    "autopilot.probe",
    "autopilot.probe_end",
    "autopilot.reverted",
    "autopilot.resumed",
    "autopilot.failed",
    # agent
    "agent.started",
    "agent.stopping",
    "agent.gpu_sampler",
    "agent.reconciled",
    "agent.audit_damaged",
    "agent.unknown_event",
]
"""Every event name the agent publishes: ``<kind>.<what>``. ``speculation.on``/``speculation.off``
are the speculation switches (a console draws its switch markers from them); ``agent.unknown_event``
carries an event whose name a newer part of the agent made up (``data.name`` holds it)."""

EVENT_NAMES: frozenset[str] = frozenset(get_args(EventName))


class Event(_Wire):
    seq: int = Field(description="Shares the stream cursor with snapshots")
    time: float
    kind: EventKind
    name: EventName = Field(description="<kind>.<what>, e.g. 'engine.crashed', 'speculation.off'")
    message: str = Field(description="One line an operator can read")
    data: dict[str, Any] = Field(default_factory=dict)


PRINTABLE = r"^[^\p{C}\p{Zl}\p{Zp}]*$"
"""A name that reaches the logs, the audit and an operator's terminal (``operator``): printable
characters only, no control characters, line breaks or terminal escapes (one could forge a line)."""
NAME_MAX = 64
"""The longest ``operator`` or text ``value`` (a profile name) a request may carry."""

PlanMode = Literal["live", "restart", "rejected", "noop"]


class ActionRequest(_Wire):
    """An operator's request; ``request_id`` makes a repeated request (after a timeout) idempotent.
    Strict: ``3.0`` is no step count and ``"true"`` no boolean (the planner names what each kind wants)."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    request_id: str = Field(min_length=8, max_length=64, pattern=r"^[A-Za-z0-9_.:-]+$")
    kind: ActionKind
    value: int | bool | Annotated[str, Field(max_length=NAME_MAX)] | None = Field(
        None,
        description="What the kind takes (agent.wire.actions.CATALOGUE): threshold, steps, topk: a whole "
        "number (threshold 0: none; steps -1: release the pin); adaptive, autopilot: true or false; "
        "apply_profile: a profile's name",
    )
    operator: str | None = Field(
        None, max_length=NAME_MAX, pattern=PRINTABLE, description="SSH user as the console passes it"
    )
    change_id: str | None = Field(
        None,
        min_length=8,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="One change asked of several hosts at once (the console's fleet change): every "
        "host's audit records it, so the hosts' lines of one change can be found together",
    )

    @field_validator("value", mode="wrap")
    @classmethod
    def _fits_its_kind(
        cls, value: object, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> object:
        """A value of the wrong type is refused naming what its kind takes (never pydantic's list of
        types, never the value itself: it may be anything a client sent)."""
        spec = spec_of(str(info.data.get("kind", "")))
        if spec is not None:
            wrong = spec.wrong_type(value)
            if wrong is not None:
                raise PydanticCustomError("action_value", wrong)
        return handler(value)


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
