"""Named points where the fault suite (tests/faults) stops the agent for real.

With ``K25_FAULT_POINT=<name>`` in its environment, the agent sends itself SIGKILL when it reaches
that point: the kill is the kernel's, at a place the test chose (between the audit's intent and the
engine's change, say), which a signal from outside cannot hit reliably; ``<name>:term`` sends
SIGTERM instead (the agent's own orderly stop, from that point). Unset, a point costs one
dictionary lookup. The action book's points are ``agent.control.faults.POINTS``; the supervisor's:
"""

from __future__ import annotations

import os
import signal

FAULT_ENV = "K25_FAULT_POINT"
RESTART_POINTS = ("restart_requested", "restart_stopping", "restart_stopped", "restart_launched")
"""A restart asked for (its audit intent written) and not begun; the record saying what replaces
the engine written, the old engine not yet signalled; the old engine stopped and the new one not
yet launched; the new one launched (its record written) and not yet ready."""


def fault_point(name: str) -> None:
    wanted = os.environ.get(FAULT_ENV)
    if wanted == name:
        os.kill(os.getpid(), signal.SIGKILL)
    elif wanted == name + ":term":
        os.kill(os.getpid(), signal.SIGTERM)
