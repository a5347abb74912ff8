"""The wire protocol between agent and console: the only part of the agent the console imports
besides the profile schema. Pure pydantic models; no I/O.

``actions``: the catalogue of operator actions; ``plans``: a request and its plan; ``events`` and
``payloads``: the events, one typed payload per family; ``snapshot``: one telemetry tick; ``api``:
the answers of the HTTP routes; ``bench``: a benchmark's options and progress.
"""

from agent.wire.actions import CATALOGUE, ActionKind, ActionSpec
from agent.wire.autopilot import AutopilotMove, AutopilotState
from agent.wire.events import (
    EVENT,
    ActionEvent,
    BenchProgressEvent,
    BenchRunEvent,
    Event,
    EventBase,
    EventName,
    make_event,
    read_event,
)
from agent.wire.plans import ActionRequest, ActionResult, ActionStatus, Change, Plan, PlanMode
from agent.wire.snapshot import (
    WIRE_VERSION,
    Finding,
    Gpu,
    GpuProcess,
    Gpus,
    KvView,
    Latency,
    Load,
    Snapshot,
    Speculation,
    Throughput,
)

API_VERSION = 1
"""Version of the agent's HTTP API (routes under /v1)."""

__all__ = [
    "API_VERSION",
    "CATALOGUE",
    "EVENT",
    "WIRE_VERSION",
    "ActionEvent",
    "ActionKind",
    "ActionRequest",
    "ActionResult",
    "ActionSpec",
    "ActionStatus",
    "AutopilotMove",
    "AutopilotState",
    "BenchProgressEvent",
    "BenchRunEvent",
    "Change",
    "Event",
    "EventBase",
    "EventName",
    "Finding",
    "Gpu",
    "GpuProcess",
    "Gpus",
    "KvView",
    "Latency",
    "Load",
    "Plan",
    "PlanMode",
    "Snapshot",
    "Speculation",
    "Throughput",
    "make_event",
    "read_event",
]
