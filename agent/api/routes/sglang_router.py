"""SGLang's router as this agent reads it (``--router-url``); the reading lives in ``agent.sglang.router``."""

from __future__ import annotations

from fastapi import APIRouter

from agent.api.routes.common import DaemonDep
from agent.sglang.router import read_router
from agent.wire.router import RouterView

router = APIRouter()


@router.get("/router", response_model=RouterView)
async def router_view(daemon: DaemonDep) -> RouterView:
    url = daemon.config.router_url
    if url is None:
        return RouterView(configured=False)
    return await read_router(url, daemon.config.router_metrics_url)
