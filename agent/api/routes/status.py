"""The agent's version (the one route without the token) and its status."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from agent.api.routes.common import DaemonDep
from agent.wire.api import AgentStatus, VersionInfo

public = APIRouter()
"""Routes that answer without the token (README "Access")."""

router = APIRouter()


@public.get("/version", response_model=VersionInfo)
async def version(daemon: DaemonDep) -> dict[str, Any]:
    return daemon.version()


@router.get("/status", response_model=AgentStatus)
async def status(daemon: DaemonDep) -> dict[str, Any]:
    return daemon.status()
