"""The KV what-if: how many requests of a context fit the launched profile's pool (agent.sglang.kv)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, HTTPException, Query

from agent.api.routes.common import DaemonDep
from agent.sglang.kv import kv_whatif as whatif
from agent.wire.api import KvWhatIf

router = APIRouter()


@router.get("/kv/whatif", response_model=KvWhatIf)
async def kv_whatif(
    daemon: DaemonDep,
    running: int = Query(ge=0, le=100_000),
    context: int = Query(ge=1, le=10_000_000),
    pool: int | None = Query(None, ge=1),
) -> dict[str, Any]:
    try:
        return whatif(daemon.launched_profile, running, context, pool).to_dict()
    except ValueError as exc:
        raise HTTPException(422, str(exc)) from None
