"""The engine's restart, stop and start, and the agent's own stop: each written ahead to the audit.

Restart and stop answer 202 at once and run in the background (the supervisor drains first); the
outcome is the audit's and the stream's to say."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request
from pydantic import Field

from agent.api.routes.common import OPERATOR, Body, DaemonDep, begin, in_background
from agent.serve.daemon import Daemon

router = APIRouter()


class EngineCommand(Body):
    drain_timeout_s: float | None = Field(None, ge=0, le=3600)
    operator: str | None = OPERATOR


class AgentStop(Body):
    engine_too: bool = False
    operator: str | None = OPERATOR


def _drain(daemon: Daemon, body: EngineCommand | None) -> float:
    return (
        daemon.config.drain_timeout_s
        if body is None or body.drain_timeout_s is None
        else body.drain_timeout_s
    )


def _engine_words(daemon: Daemon) -> Callable[[], str]:
    """The outcome the audit records once the work is done: the engine's state by then."""
    return lambda: f"the engine is {daemon.supervisor.state}"


@router.post("/engine/restart", status_code=202)
async def engine_restart(
    daemon: DaemonDep, http: Request, body: EngineCommand | None = None
) -> dict[str, Any]:
    drain = _drain(daemon, body)
    op = begin(daemon, "engine_restart", http, body.operator if body else None, {"drain_timeout_s": drain})
    work = daemon.supervisor.restart(None, drain_timeout_s=drain)
    in_background(http, daemon.ops.run(op, work, _engine_words(daemon)), "engine-restart")
    return {"accepted": True, "action": "restart"}


@router.post("/engine/stop", status_code=202)
async def engine_stop(daemon: DaemonDep, http: Request, body: EngineCommand | None = None) -> dict[str, Any]:
    drain = _drain(daemon, body)
    op = begin(daemon, "engine_stop", http, body.operator if body else None, {"drain_timeout_s": drain})
    work = daemon.supervisor.stop(drain_timeout_s=drain)
    in_background(http, daemon.ops.run(op, work, _engine_words(daemon)), "engine-stop")
    return {"accepted": True, "action": "stop"}


@router.post("/engine/start", status_code=202)
async def engine_start(daemon: DaemonDep, http: Request, body: EngineCommand | None = None) -> dict[str, Any]:
    op = begin(daemon, "engine_start", http, body.operator if body else None, {})
    started = await daemon.supervisor.start()
    daemon.ops.end(op, "applied" if started else "noop", "started" if started else "it runs already")
    return {"accepted": started, "action": "start", "engine_state": daemon.supervisor.state}


@router.post("/agent/stop", status_code=202)
async def agent_stop(daemon: DaemonDep, http: Request, body: AgentStop | None = None) -> dict[str, Any]:
    engine_too = bool(body and body.engine_too)
    op = begin(daemon, "agent_stop", http, body.operator if body else None, {"engine_too": engine_too})
    daemon.ops.end(op, "applied", "the agent exits" + (" after stopping the engine" if engine_too else ""))
    daemon.request_exit(engine_too=engine_too)
    return {"accepted": True, "engine_too": daemon.stop_engine_on_exit}
