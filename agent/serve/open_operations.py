"""Operations a previous agent began and never saw end, given their outcome by the next agent.

An engine restart's outcome was written when the restart call returned: an agent killed before
that (while it drained or stopped the old engine) left "intent: no outcome yet" for good, even
where the next agent finished the restart from the engine record, and an agent stopped by SIGTERM
at that point wrote "failed" although the next one finished it. A restart cut short is no failure
while the next agent finishes it; so its intent is left open (``Operations.run``), and the first
time an engine is ready under the next agent, each open restart is settled on evidence: the engine
in force was launched after the restart was asked for (the restart happened, finished by whichever
agent) or it was not (the old engine runs on: the restart was not done).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from agent.control.audit import AuditLog
from agent.engine.running import RunningEngine

log = logging.getLogger(__name__)

SETTLED_BY_THE_NEXT_AGENT = frozenset({"engine_restart"})
"""Operations whose outcome, when the agent stops in the middle of them, the next agent writes."""
SOURCE = {"via": "agent", "what": "start-up reconciliation"}


def _when(seconds: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(seconds))


class OpenOperations:
    """The restarts left open as this agent found them at its start (``AuditIndex.open_ops``)."""

    def __init__(self, audit: AuditLog, open_ops: dict[str, dict[str, Any]]) -> None:
        self.audit = audit
        self.open = {
            op: intent
            for op, intent in open_ops.items()
            if (intent.get("action") or {}).get("kind") in SETTLED_BY_THE_NEXT_AGENT
        }

    def settle(self, engine: RunningEngine | None) -> None:
        """``engine`` is the first one ready under this agent: give every open restart its outcome
        (once; a full disk delays the line, never the engine)."""
        engine_pid = engine.pid if engine else None
        engine_launched_at = engine.launched_at if engine else None
        open_now, self.open = self.open, {}
        for op_id, intent in open_now.items():
            asked = float(intent.get("time") or 0)
            done = engine_launched_at is not None and engine_launched_at > asked
            if done:
                status = "applied"
                message = (
                    f"the agent stopped during the restart; the engine (pid {engine_pid}) launched at "
                    f"{_when(engine_launched_at or 0)} finished it and is ready (settled at the next agent's start)"
                )
            else:
                status = "failed"
                message = (
                    f"the agent stopped before the restart began: the engine (pid {engine_pid}) that ran "
                    "before it runs on, not restarted (settled at the next agent's start); ask again"
                )
            action = intent.get("action") or {}
            self.audit.append_or_later(
                f"the outcome of {op_id}",
                operator=intent.get("operator"),
                action=action,
                before=None,
                after=None,
                phase="outcome",
                result={"status": status, "message": message},
                source=intent.get("source") or SOURCE,
            )
            log.info("settled the open %s %s: %s", action.get("kind"), op_id, status)
