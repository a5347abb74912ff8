"""The app: one router per resource (agent/api/routes), the token guard, the schema behind it.

Each route reads or calls one part of the daemon, which it gets through a FastAPI dependency
(`routes.common.daemon_of`, the daemon this app's state holds); rules live in those parts, not in
the routes and not here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import APIRouter, Depends, FastAPI
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

import agent
from agent.api.auth import token_guard
from agent.api.errors import validation_error
from agent.api.limits import BodyLimit
from agent.api.routes import (
    actions,
    audit,
    bench,
    engine,
    kv,
    logs,
    profiles,
    sglang_router,
    status,
    stream,
    telemetry,
)
from agent.serve.daemon import Daemon

ROUTERS = (
    status.router,
    stream.router,
    actions.router,
    audit.router,
    profiles.router,
    kv.router,
    logs.router,
    telemetry.router,
    engine.router,
    sglang_router.router,
    bench.router,
)
"""The token-guarded routers, in the order their routes are matched and listed in the schema."""


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    yield
    app.state.daemon.hub.close()  # ends open streams so the server can shut down


def create_app(daemon: Daemon) -> FastAPI:
    app = FastAPI(
        title="k25console agent",
        version=agent.__version__,
        description="Control API of the k25console agent on the GPU host (UNIX socket or loopback only).",
        lifespan=_lifespan,
        # No docs UI and no open schema: the schema names every route and field of a control API, so
        # it is served below behind the token like the routes it describes (README "Access").
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    app.state.daemon = daemon
    app.state.background = set[asyncio.Task[Any]]()  # 202 work past its answer, held until done
    guard = Depends(token_guard(daemon.token))
    public = APIRouter(prefix="/v1")
    public.include_router(status.public)
    api = APIRouter(prefix="/v1", dependencies=[guard])
    for router in ROUTERS:
        api.include_router(router)

    app.include_router(public)
    app.include_router(api)

    @app.get("/openapi.json", include_in_schema=False, dependencies=[guard])
    async def openapi() -> dict[str, Any]:
        return app.openapi()

    app.add_middleware(BodyLimit)  # every body: its size limit and JSON the agent can take
    app.add_exception_handler(RequestValidationError, validation_error)

    @app.exception_handler(ValueError)
    async def value_error(_: Any, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    return app
