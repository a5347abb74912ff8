"""Fixtures for the telemetry tests: fixture paths, profiles, and a scripted SGLang HTTP endpoint.

``scripted_sglang`` is a real HTTP server (uvicorn on a loopback socket) whose ``/metrics`` and
``/server_info`` answers the test sets before each tick: the collector is driven over real HTTP with
pages whose numbers the test knows, so that rates and percentiles can be checked exactly. The
end-to-end check against the simulated engine lives in ``test_collector_sim.py``.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from agent.profile.schema import Profile
from agent.profile.store import load_profile

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
GPU = FIXTURES / "gpu"
PAGE_0523 = FIXTURES / "metrics" / "sglang-0.5.23-tp8-loaded.txt"


def profile(name: str) -> Profile:
    return load_profile(REPO / "profiles" / f"{name}.toml")


@dataclass
class ScriptedSglang:
    """What the fake server answers; tests change the fields between ticks."""

    url: str = ""
    metrics: str | None = ""
    """Page text; None → 404 (a server started without --enable-metrics)."""
    server_info: dict[str, Any] = field(default_factory=dict)
    api_key: str | None = None
    hits: dict[str, int] = field(default_factory=dict)
    auth_seen: list[str | None] = field(default_factory=list)


def _app(state: ScriptedSglang) -> Starlette:
    async def metrics(request: Request) -> Response:
        state.hits["/metrics"] = state.hits.get("/metrics", 0) + 1
        if state.metrics is None:
            return PlainTextResponse("Not Found", status_code=404)
        return PlainTextResponse(state.metrics, media_type="text/plain; version=0.0.4")

    async def server_info(request: Request) -> Response:
        state.hits["/server_info"] = state.hits.get("/server_info", 0) + 1
        auth = request.headers.get("authorization")
        state.auth_seen.append(auth)
        if state.api_key and auth != f"Bearer {state.api_key}":
            return JSONResponse({"error": "Unauthorized"}, status_code=401)
        return JSONResponse(state.server_info)

    return Starlette(routes=[Route("/metrics", metrics), Route("/server_info", server_info)])


@asynccontextmanager
async def serve_scripted(state: ScriptedSglang, port: int = 0) -> AsyncIterator[ScriptedSglang]:
    """Serve ``state`` with uvicorn on 127.0.0.1:``port`` (0: any) until the block ends."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    port = sock.getsockname()[1]
    config = uvicorn.Config(_app(state), log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    async with asyncio.timeout(10):
        while not server.started:  # uvicorn has no awaitable "started" event
            await asyncio.sleep(0.01)
    state.url = f"http://127.0.0.1:{port}"
    try:
        yield state
    finally:
        server.should_exit = True
        await task
        sock.close()


@pytest.fixture
async def scripted_sglang() -> AsyncIterator[ScriptedSglang]:
    async with serve_scripted(ScriptedSglang()) as state:
        yield state
