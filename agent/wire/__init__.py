"""The wire protocol between agent and console: the only part of the agent the console imports
besides the profile schema. Pure pydantic models; no I/O.
"""

from agent.wire.actions import CATALOGUE, ActionKind, ActionSpec
from agent.wire.autopilot import AutopilotMove, AutopilotState
from agent.wire.events import (
    ActionRequest,
    ActionResult,
    ActionStatus,
    Change,
    Event,
    EventName,
    Plan,
    PlanMode,
)
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
    "WIRE_VERSION",
    "ActionKind",
    "ActionRequest",
    "ActionResult",
    "ActionSpec",
    "ActionStatus",
    "AutopilotMove",
    "AutopilotState",
    "Change",
    "Event",
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
]
