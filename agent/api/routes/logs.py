"""The engine's log, its tail or the lines that match a search (read off the event loop)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query

from agent.api.routes.common import DaemonDep
from agent.wire.api import LogLines

router = APIRouter()


@router.get("/logs", response_model=LogLines)
async def logs(
    daemon: DaemonDep,
    tail: int = Query(200, ge=1, le=10_000),
    search: str | None = Query(None, min_length=1, max_length=200),
) -> dict[str, Any]:
    return {"lines": await asyncio.to_thread(daemon.log_lines, tail, search)}
