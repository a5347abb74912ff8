"""Named points of an action where the fault suite (tests/faults) kills the agent for real
(``agent.engine.faults`` says how; these are the action book's points).
"""

from __future__ import annotations

from agent.engine.faults import FAULT_ENV, fault_point

__all__ = ["FAULT_ENV", "POINTS", "fault_point"]

POINTS = ("plan", "intent", "apply", "outcome")
"""After the plan is made, after the intent is durable, after the engine took the change, after
the outcome is durable."""
