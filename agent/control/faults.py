"""Named points of an action where the fault suite (tests/faults) kills the agent for real.

With ``K25_FAULT_POINT=<name>`` in its environment, the agent sends itself SIGKILL when it reaches
that point: the kill is the kernel's, at a place the test chose (between the audit's intent and the
engine's change, say), which a signal from outside cannot hit reliably. Unset, a point costs one
dictionary lookup.
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "K25_FAULT_POINT"
POINTS = ("plan", "intent", "apply", "outcome")
"""After the plan is made, after the intent is durable, after the engine took the change, after
the outcome is durable."""


def fault_point(name: str) -> None:
    if os.environ.get(FAULT_ENV) == name:
        os.kill(os.getpid(), signal.SIGKILL)
