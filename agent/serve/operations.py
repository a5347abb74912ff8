"""Audit lines for every state change that is not an operator action: the engine's start, stop and
restart, the agent's stop, benchmarks, profile saves. By whom (the ``operator`` a caller names)
and from where (the API's peer: the UNIX socket or a loopback address, and the client's name).

A change that the agent makes on request is written ahead: ``begin`` writes the intent (fsynced)
and raises ``AuditUnavailable`` when it cannot, so the route refuses and nothing happens; ``end``
writes the outcome. A change already made (a benchmark that ended, a profile saved) is one line.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable
from typing import Any

from agent.control.audit import AuditLog
from agent.profile.words import printable_words
from agent.serve.open_operations import SETTLED_BY_THE_NEXT_AGENT
from agent.wire.audit import AgentOperation

log = logging.getLogger(__name__)


CLIENT_MAX = 128
"""The most of a caller's User-Agent the audit keeps (escaped: it is the caller's text)."""


def source_of(request: Any) -> dict[str, Any]:
    """Where an API request came from (a Starlette ``Request``); the client's name as it says it,
    escaped and cut, since any caller may put a line break or a terminal escape in it."""
    client = getattr(request, "client", None)
    where = "unix socket" if not client or not client[0] else f"{client[0]}:{client[1]}"
    agent = request.headers.get("user-agent")
    return {
        "via": "api",
        "peer": where,
        "client": None if agent is None else printable_words(agent, CLIENT_MAX),
    }


class Operations:
    def __init__(self, audit: AuditLog) -> None:
        self.audit = audit

    def begin(
        self,
        kind: AgentOperation,
        *,
        operator: str | None,
        source: dict[str, Any] | None,
        detail: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The intent of ``kind``; raises ``AuditUnavailable`` (then do nothing). Returns the action."""
        action = {"kind": kind, "op_id": "op-" + secrets.token_hex(6), **(detail or {})}
        self.audit.append(operator=operator, action=action, before=None, after=None, phase="intent",
                          result={"status": "intent", "message": f"{kind} requested"}, source=source)  # fmt: skip
        return action | {"operator": operator, "source": source}

    def end(self, op: dict[str, Any], status: str, message: str) -> None:
        """The outcome of ``op`` (from ``begin``); a full disk here only costs the line (logged)."""
        action = {k: v for k, v in op.items() if k not in ("operator", "source")}
        self.audit.append_or_later(f"the outcome of {action['op_id']}", operator=op["operator"], action=action,
                                   before=None, after=None, phase="outcome",
                                   result={"status": status, "message": message}, source=op["source"])  # fmt: skip

    async def run(self, op: dict[str, Any], work: Awaitable[Any], after: Callable[[], str]) -> None:
        """Await ``work`` (in the background) and audit how it ended."""
        try:
            await work
        except asyncio.CancelledError:
            if op["kind"] in SETTLED_BY_THE_NEXT_AGENT:
                # Not failed: the engine record says what was under way, and the next agent
                # finishes it and writes the outcome (``agent.serve.open_operations``).
                log.info("the agent stops during %s; the next agent settles its outcome", op["op_id"])
            else:
                self.end(op, "failed", "the agent stopped before it ended")
            raise
        except Exception as exc:
            self.end(op, "failed", f"{type(exc).__name__}: {exc}")
            raise
        self.end(op, "applied", after())

    def record(
        self,
        kind: AgentOperation,
        *,
        operator: str | None,
        source: dict[str, Any] | None,
        detail: dict[str, Any] | None = None,
        status: str = "applied",
        message: str = "",
    ) -> bool:
        """One line for a change already made; False when it waits for room on the state disk."""
        action = {"kind": kind, "op_id": "op-" + secrets.token_hex(6), **(detail or {})}
        return self.audit.append_or_later(f"the line of {action['op_id']}", operator=operator, action=action,
                                          before=None, after=None, source=source,
                                          result={"status": status, "message": message or kind})  # fmt: skip
