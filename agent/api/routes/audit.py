"""The audit log, paged from the file (the reading lives in control.audit)."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import APIRouter, Query

from agent.api.routes.common import DaemonDep

router = APIRouter()


@router.get("/audit")
async def audit(
    daemon: DaemonDep,
    limit: int = Query(100, ge=1, le=10_000),
    cursor: int | None = Query(None, ge=0, description="Byte offset: the page from there on"),
    before: int | None = Query(None, ge=0, description="Byte offset: the newest page before it"),
    since: float | None = Query(None, ge=0, description="Only records at or after this Unix time"),
) -> dict[str, Any]:
    """Streamed and paged; torn or corrupt lines are skipped and listed in ``corrupt``."""
    read = daemon.actions.audit.page
    page = await asyncio.to_thread(read, limit=limit, cursor=cursor, before=before, since=since)
    return page.as_dict()
