"""Events on the wire: what the agent did or saw, each family with its typed payload.

``Event`` is the union of the families, discriminated on the event's name: a console that reads an
``engine.ready`` gets an :class:`EngineEvent` whose ``data`` is an ``EngineProcess``, and reads
``event.data.url``, never ``event.data.get("url")``. The agent publishes through :func:`make_event`
(its parts hand over plain fields; the payload checks them); a console reads with :func:`read_event`,
which keeps an event of a name it does not know (a newer agent's) as ``agent.unknown_event``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from agent.wire.api import PortHolderView
from agent.wire.payloads import (
    ActionPhase,
    AgentNotice,
    AutopilotNotice,
    BenchProgressLine,
    BenchRunLine,
    EngineDrain,
    EngineProcess,
    FindingChange,
    LiveValues,
    ProfileDiffers,
    Reconciled,
    RecordUnreadable,
    SpeculationChange,
    Unrecognised,
)


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

EngineName = Literal[
    "engine.starting",
    "engine.ready",
    "engine.start_failed",
    "engine.start_timeout",
    "engine.crashed",
    "engine.crash_loop",
    "engine.restarting",
    "engine.reattached",
    "engine.record_stale",
    "engine.stopped",
    "engine.killed",
    "engine.supervisor_error",
    "engine.restart_resumed",
    "engine.waiting_for_disk",
]
EngineDrainName = Literal["engine.draining", "engine.drain_timeout"]
EngineLiveName = Literal["engine.live_restored", "engine.live_restore_failed"]
ActionName = Literal[
    "action.planned",
    "action.rejected",
    "action.applying",
    "action.applied",
    "action.failed",
    "action.expired",
    "action.cancelled",
]
SpeculationName = Literal["speculation.on", "speculation.off", "speculation.steps", "speculation.threshold"]
FindingName = Literal["finding.raised", "finding.cleared"]
BenchRunName = Literal["bench.started", "bench.finished", "bench.failed", "bench.cancelled"]
AutopilotName = Literal[
    "autopilot.enabled",
    "autopilot.disabled",
    "autopilot.unavailable",
    "autopilot.move",
    "autopilot.probe",
    "autopilot.probe_end",
    "autopilot.reverted",
    "autopilot.resumed",
    "autopilot.failed",
    "autopilot.held",
]
AgentName = Literal["agent.started", "agent.stopping", "agent.gpu_sampler", "agent.audit_damaged"]

EventName = Literal[
    EngineName,
    EngineDrainName,
    "engine.profile_differs",
    "engine.port_held",
    "engine.record_unreadable",
    EngineLiveName,
    ActionName,
    SpeculationName,
    FindingName,
    BenchRunName,
    "bench.progress",
    AutopilotName,
    AgentName,
    "agent.reconciled",
    "agent.unknown_event",
]
"""Every event name the agent publishes: ``<kind>.<what>``. ``speculation.on``/``speculation.off``
are the speculation switches (a console draws its switch markers from them); ``agent.unknown_event``
carries an event whose name a newer part of the agent made up (``data.name`` holds it)."""

EVENT_NAMES: frozenset[str] = frozenset(get_args(EventName))


class EventBase(_Wire):
    """What every event has; ``kind`` and ``data`` are its family's."""

    seq: int = Field(description="Shares the stream cursor with snapshots")
    time: float
    message: str = Field(description="One line an operator can read")


class EngineEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: EngineName = Field(description="<kind>.<what>, e.g. 'engine.crashed'")
    data: EngineProcess = EngineProcess()


class EngineDrainEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: EngineDrainName
    data: EngineDrain = EngineDrain()


class EngineProfileEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: Literal["engine.profile_differs"]
    data: ProfileDiffers


class EnginePortEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: Literal["engine.port_held"]
    data: PortHolderView


class EngineRecordEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: Literal["engine.record_unreadable"]
    data: RecordUnreadable


class EngineLiveEvent(EventBase):
    kind: Literal["engine"] = "engine"
    name: EngineLiveName
    data: LiveValues = LiveValues()


class ActionEvent(EventBase):
    kind: Literal["action"] = "action"
    name: ActionName
    data: ActionPhase


class SpeculationEvent(EventBase):
    kind: Literal["speculation"] = "speculation"
    name: SpeculationName
    data: SpeculationChange = SpeculationChange()


class FindingEvent(EventBase):
    kind: Literal["finding"] = "finding"
    name: FindingName
    data: FindingChange


class BenchRunEvent(EventBase):
    kind: Literal["bench"] = "bench"
    name: BenchRunName
    data: BenchRunLine


class BenchProgressEvent(EventBase):
    kind: Literal["bench"] = "bench"
    name: Literal["bench.progress"]
    data: BenchProgressLine


class AutopilotEvent(EventBase):
    kind: Literal["autopilot"] = "autopilot"
    name: AutopilotName
    data: AutopilotNotice = AutopilotNotice()


class AgentEvent(EventBase):
    kind: Literal["agent"] = "agent"
    name: AgentName
    data: AgentNotice = AgentNotice()


class ReconciledEvent(EventBase):
    kind: Literal["agent"] = "agent"
    name: Literal["agent.reconciled"]
    data: Reconciled = Reconciled()


class UnknownEvent(EventBase):
    kind: EventKind = "agent"
    name: Literal["agent.unknown_event"] = "agent.unknown_event"
    data: Unrecognised


Event = Annotated[
    EngineEvent
    | EngineDrainEvent
    | EngineProfileEvent
    | EnginePortEvent
    | EngineRecordEvent
    | EngineLiveEvent
    | ActionEvent
    | SpeculationEvent
    | FindingEvent
    | BenchRunEvent
    | BenchProgressEvent
    | AutopilotEvent
    | AgentEvent
    | ReconciledEvent
    | UnknownEvent,
    Field(discriminator="name"),
]
"""Any event: its class (and so its payload's) follows from its name."""

EVENT: TypeAdapter[Event] = TypeAdapter(Event)


def make_event(
    seq: int, time: float, name: str, message: str, data: Mapping[str, object] | BaseModel | None = None
) -> Event:
    """The event of ``name`` with its payload; raises ValidationError when ``data`` does not fit it."""
    payload = data.model_dump() if isinstance(data, BaseModel) else dict(data or {})
    return EVENT.validate_python(
        {"seq": seq, "time": time, "name": name, "message": message, "data": payload}
    )


def dropped_keys(event: Event, data: Mapping[str, object] | None) -> list[str]:
    """Keys of ``data`` the event's payload does not have (it ignores them): an agent part that sends
    one has a field the wire does not list (a test checks the agent sends none)."""
    return sorted(set(data or {}) - set(type(event.data).model_fields))


class _Envelope(BaseModel):
    """What any event has, read leniently: for one whose name this side does not know."""

    model_config = ConfigDict(extra="ignore")

    seq: int = 0
    time: float = 0.0
    name: str = ""
    message: str = ""


def read_event(raw: object) -> Event:
    """An event as a console reads it: a name this side does not know (a newer agent's) is kept as
    ``agent.unknown_event`` with its name, never a failure of the stream."""
    try:
        return EVENT.validate_python(raw)
    except ValidationError as exc:
        if not any(error["type"] == "union_tag_invalid" for error in exc.errors()):
            raise
        seen = _Envelope.model_validate(raw)
        return UnknownEvent(
            seq=seen.seq,
            time=seen.time,
            message=seen.message,
            data=Unrecognised(name=seen.name, problem="a name this side does not know"),
        )


def read_event_json(text: str | bytes) -> Event:
    return read_event(_JSON.validate_json(text))


_JSON: TypeAdapter[object] = TypeAdapter(object)
