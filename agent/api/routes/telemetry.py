"""The telemetry tick, set within the bounds the daemon allows."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from pydantic import Field

from agent.api.routes.common import Body, DaemonDep
from agent.serve.daemon import MAX_TICK_S, MIN_TICK_S

router = APIRouter()


class TelemetrySettings(Body):
    tick_interval_s: float = Field(ge=MIN_TICK_S, le=MAX_TICK_S)


@router.put("/telemetry")
async def telemetry(daemon: DaemonDep, body: TelemetrySettings) -> dict[str, Any]:
    daemon.set_tick_interval(body.tick_interval_s)
    return {"tick_interval_s": daemon.tick_interval_s}
