"""The routes. Each one reads or calls one part of the daemon; rules live in those parts, not here."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import APIRouter, Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

import agent
from agent.api.auth import token_guard
from agent.api.sse import sse_stream
from agent.control.actions import RequestConflict
from agent.control.audit import AuditUnavailable
from agent.control.library import UnknownProfile, issue_dict
from agent.control.profile_view import shown_profile, shown_toml
from agent.control.writes import PreconditionFailed, PreconditionRequired, WriteGuard
from agent.profile import ProfileError
from agent.serve.daemon import MAX_TICK_S, MIN_TICK_S, Daemon
from agent.serve.operations import source_of
from agent.serve.stream import json_list
from agent.sglang.kv import kv_whatif as whatif
from agent.wire import ActionRequest, ActionResult, Event, Plan, Snapshot
from agent.wire.api import (
    AgentStatus,
    KvWhatIf,
    LogLines,
    ProfileDeleted,
    ProfileDiff,
    ProfileList,
    ProfileRead,
    ProfileSaved,
    RunningProfile,
    VersionInfo,
)


class _Body(BaseModel):
    """Request bodies are strict: ``true`` or ``"5"`` is no number and ``1`` no boolean (a 422 names
    the field and the type it wants), and unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ProfileText(_Body):
    toml: str = Field(max_length=256 * 1024)
    confirm_production: str | None = Field(
        None, max_length=64, description="Replacing a production profile: its name, repeated"
    )


class ProfileDelete(_Body):
    confirm_production: str | None = Field(
        None, max_length=64, description="Deleting a production profile: its name, repeated"
    )


class TelemetrySettings(_Body):
    tick_interval_s: float = Field(ge=MIN_TICK_S, le=MAX_TICK_S)


_OPERATOR = Field(
    None, max_length=64, description="Who asks, for the audit (the console passes the SSH user)"
)


class EngineCommand(_Body):
    drain_timeout_s: float | None = Field(None, ge=0, le=3600)
    operator: str | None = _OPERATOR


class AgentStop(_Body):
    engine_too: bool = False
    operator: str | None = _OPERATOR


class ActionCancel(_Body):
    operator: str | None = Field(None, max_length=64, description="SSH user as the console passes it")


class SnapshotList(BaseModel):
    snapshots: list[Snapshot]


class EventList(BaseModel):
    events: list[Event]


def _issues(exc: ProfileError) -> dict[str, Any]:
    return {"issues": [issue_dict(i) for i in exc.issues]}


def create_app(daemon: Daemon) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        daemon.hub.close()  # ends open streams so the server can shut down

    app = FastAPI(
        title="k25console agent",
        version=agent.__version__,
        description="Control API of the k25console agent on the GPU host (UNIX socket or loopback only).",
        lifespan=lifespan,
        # No docs UI and no open schema: the schema names every route and field of a control API, so
        # it is served below behind the token like the routes it describes (README "Access").
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    guard = Depends(token_guard(daemon.token))
    public = APIRouter(prefix="/v1")
    api = APIRouter(prefix="/v1", dependencies=[guard])
    background: set[asyncio.Task[Any]] = set()

    def in_background(coro: Any, name: str) -> None:
        task = asyncio.create_task(coro, name=name)
        background.add(task)
        task.add_done_callback(background.discard)

    @public.get("/version", response_model=VersionInfo)
    async def version() -> dict[str, Any]:
        return daemon.version()

    @api.get("/status", response_model=AgentStatus)
    async def status() -> dict[str, Any]:
        return daemon.status()

    @api.get(
        "/stream", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}}
    )
    async def stream(
        since: int | None = Query(None, ge=0, description="Replay everything after this seq first"),
        last_event_id: int | None = Header(None, ge=0),
    ) -> StreamingResponse:
        cursor = (
            since
            if since is not None
            else (last_event_id if last_event_id is not None else daemon.hub.last_seq)
        )
        return StreamingResponse(
            sse_stream(daemon.hub, cursor),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
        )

    # The ring holds each item's JSON as the stream sent it: the lists are put together from those
    # bytes (an hour of snapshots is 3,600+ of them), not decoded into models and encoded again.
    @api.get("/snapshots", response_model=SnapshotList)
    async def snapshots(since: int = Query(0, ge=0), limit: int = Query(3600, ge=1, le=20_000)) -> Response:
        items = daemon.hub.snapshots.since(since, limit)
        return Response(json_list("snapshots", items), media_type="application/json")

    @api.get("/events", response_model=EventList)
    async def events(since: int = Query(0, ge=0)) -> Response:
        return Response(json_list("events", daemon.hub.events.since(since)), media_type="application/json")

    @api.post("/actions")
    async def plan_action(request: ActionRequest, http: Request) -> Plan:
        try:
            return daemon.actions.plan(request, source_of(http))
        except RequestConflict as exc:
            raise HTTPException(409, str(exc)) from None

    @api.post("/actions/{action_id}/confirm")
    async def confirm_action(action_id: str, http: Request) -> ActionResult:
        result = await daemon.actions.confirm(action_id, source_of(http))
        if result is None:
            raise HTTPException(404, f"no action {action_id!r}")
        return result

    @api.post("/actions/{action_id}/cancel")
    async def cancel_action(action_id: str, http: Request, body: ActionCancel | None = None) -> ActionResult:
        result = await daemon.actions.cancel(action_id, body.operator if body else None, source_of(http))
        if result is None:
            raise HTTPException(404, f"no action {action_id!r}")
        return result

    @api.get("/actions/{action_id}")
    async def get_action(action_id: str) -> ActionResult:
        result = daemon.actions.get(action_id)
        if result is None:
            raise HTTPException(404, f"no action {action_id!r}")
        return result

    @api.get("/audit")
    async def audit(
        limit: int = Query(100, ge=1, le=10_000),
        cursor: int | None = Query(None, ge=0, description="Byte offset: the page from there on"),
        before: int | None = Query(None, ge=0, description="Byte offset: the newest page before it"),
        since: float | None = Query(None, ge=0, description="Only records at or after this Unix time"),
    ) -> dict[str, Any]:
        """Streamed and paged; torn or corrupt lines are skipped and listed in ``corrupt``."""
        read = daemon.actions.audit.page
        page = await asyncio.to_thread(read, limit=limit, cursor=cursor, before=before, since=since)
        return page.as_dict()

    @api.get("/profiles", response_model=ProfileList)
    async def list_profiles() -> dict[str, Any]:
        running = daemon.profile.identity.name
        launched_from = daemon.config.profile_path.resolve()
        out = []
        for f in daemon.library.list():
            is_running = f.name == running or (
                f.path.resolve() == launched_from and daemon.profile == daemon.config.profile
            )
            changed = daemon.library.changed_keys(f.name, daemon.profile) if is_running else []
            out.append(
                {"name": f.name, "path": str(f.path), "running": is_running, "changed": changed}
                | {"digest": f.digest, "production": f.production}
            )
        return {"profiles": out}

    @api.get("/profile", response_model=RunningProfile)
    async def running_profile() -> dict[str, Any]:
        """The profile the engine runs now, live changes included (what Controls shows as current)."""
        profile = daemon.profile
        return {"name": profile.identity.name, "toml": shown_toml(profile), "profile": shown_profile(profile)}

    @api.get("/profiles/{name}", response_model=ProfileRead)
    async def read_profile(name: str, response: Response) -> dict[str, Any]:
        try:
            read = daemon.library.read(name)
        except UnknownProfile:
            raise HTTPException(404, f"no profile {name!r} in {daemon.library.directory}") from None
        except ProfileError as exc:
            raise HTTPException(422, _issues(exc)) from None
        response.headers["ETag"] = f'"{read["digest"]}"'
        return read

    def _guarded(write: Any) -> str:
        """A profile write's refusals as HTTP says them: 428 without If-Match, 412 for a stale one."""
        try:
            return str(write())
        except UnknownProfile as exc:
            raise HTTPException(404, f"no profile {str(exc)!r} in {daemon.library.directory}") from None
        except ProfileError as exc:
            raise HTTPException(422, _issues(exc)) from None
        except PreconditionRequired as exc:
            raise HTTPException(428, str(exc)) from None
        except PreconditionFailed as exc:
            raise HTTPException(412, str(exc)) from None

    def _audited(op: dict[str, Any], write: Any, done: str) -> str:
        """A profile write after its intent: the outcome says applied, or why it was refused."""
        try:
            result = _guarded(write)
        except HTTPException as exc:
            daemon.ops.end(op, "rejected", str(exc.detail))
            raise
        daemon.ops.end(op, "applied", done)
        return result

    @api.put("/profiles/{name}", response_model=ProfileSaved)
    async def save_profile(
        name: str,
        body: ProfileText,
        response: Response,
        http: Request,
        if_match: str | None = Header(None, max_length=512, description="The digest of the version replaced"),
        if_none_match: str | None = Header(None, max_length=16, description="'*': create only"),
    ) -> dict[str, Any]:
        guard = WriteGuard(if_match, if_none_match, body.confirm_production)
        op = _begin("profile_save", http, None, {"name": name})
        digest = _audited(op, lambda: daemon.library.save(name, body.toml, guard, daemon.profile), "saved")
        response.headers["ETag"] = f'"{digest}"'
        return {"name": name, "saved": True, "digest": digest}

    @api.delete("/profiles/{name}", response_model=ProfileDeleted)
    async def delete_profile(
        name: str,
        http: Request,
        body: ProfileDelete | None = None,
        if_match: str | None = Header(None, max_length=512, description="The digest of the version deleted"),
    ) -> dict[str, Any]:
        path = _guarded(lambda: daemon.library.path_of(name))  # a name that is a path: 422
        if Path(path).resolve() == daemon.config.profile_path.resolve():
            raise HTTPException(409, f"{name} is the profile this agent was started with; it stays")
        guard = WriteGuard(if_match, None, body.confirm_production if body else None)
        op = _begin("profile_delete", http, None, {"name": name})
        _audited(op, lambda: daemon.library.delete(name, guard), "deleted")
        return {"name": name, "deleted": True}

    @api.get("/profiles/{name}/diff", response_model=ProfileDiff)
    async def diff_profile(name: str) -> dict[str, Any]:
        try:
            return daemon.library.diff(name, daemon.profile, daemon.launched_profile)
        except UnknownProfile:
            raise HTTPException(404, f"no profile {name!r} in {daemon.library.directory}") from None
        except ProfileError as exc:
            raise HTTPException(422, _issues(exc)) from None

    @api.get("/kv/whatif", response_model=KvWhatIf)
    async def kv_whatif(
        running: int = Query(ge=0, le=100_000),
        context: int = Query(ge=1, le=10_000_000),
        pool: int | None = Query(None, ge=1),
    ) -> dict[str, Any]:
        try:
            return whatif(daemon.launched_profile, running, context, pool).to_dict()
        except ValueError as exc:
            raise HTTPException(422, str(exc)) from None

    @api.get("/logs", response_model=LogLines)
    async def logs(
        tail: int = Query(200, ge=1, le=10_000),
        search: str | None = Query(None, min_length=1, max_length=200),
    ) -> dict[str, Any]:
        return {"lines": await asyncio.to_thread(daemon.log_lines, tail, search)}

    @api.put("/telemetry")
    async def telemetry(body: TelemetrySettings) -> dict[str, Any]:
        daemon.set_tick_interval(body.tick_interval_s)
        return {"tick_interval_s": daemon.tick_interval_s}

    def _drain(body: EngineCommand | None) -> float:
        return (
            daemon.config.drain_timeout_s
            if body is None or body.drain_timeout_s is None
            else body.drain_timeout_s
        )

    def _begin(kind: str, http: Request, operator: str | None, detail: dict[str, Any]) -> dict[str, Any]:
        """The audit's intent first; when it cannot be written the request is refused (503)."""
        try:
            return daemon.ops.begin(kind, operator=operator, source=source_of(http), detail=detail)
        except AuditUnavailable as exc:
            raise HTTPException(503, f"refused: {exc}; nothing was done") from None

    def _engine_words() -> str:
        return f"the engine is {daemon.supervisor.state}"

    @api.post("/engine/restart", status_code=202)
    async def engine_restart(http: Request, body: EngineCommand | None = None) -> dict[str, Any]:
        op = _begin(
            "engine_restart", http, body.operator if body else None, {"drain_timeout_s": _drain(body)}
        )
        work = daemon.supervisor.restart(None, drain_timeout_s=_drain(body))
        in_background(daemon.ops.run(op, work, _engine_words), "engine-restart")
        return {"accepted": True, "action": "restart"}

    @api.post("/engine/stop", status_code=202)
    async def engine_stop(http: Request, body: EngineCommand | None = None) -> dict[str, Any]:
        op = _begin("engine_stop", http, body.operator if body else None, {"drain_timeout_s": _drain(body)})
        work = daemon.supervisor.stop(drain_timeout_s=_drain(body))
        in_background(daemon.ops.run(op, work, _engine_words), "engine-stop")
        return {"accepted": True, "action": "stop"}

    @api.post("/engine/start", status_code=202)
    async def engine_start(http: Request, body: EngineCommand | None = None) -> dict[str, Any]:
        op = _begin("engine_start", http, body.operator if body else None, {})
        started = await daemon.supervisor.start()
        daemon.ops.end(op, "applied" if started else "noop", "started" if started else "it runs already")
        return {"accepted": started, "action": "start", "engine_state": daemon.supervisor.state}

    @api.post("/agent/stop", status_code=202)
    async def agent_stop(http: Request, body: AgentStop | None = None) -> dict[str, Any]:
        engine_too = bool(body and body.engine_too)
        op = _begin("agent_stop", http, body.operator if body else None, {"engine_too": engine_too})
        daemon.ops.end(
            op, "applied", "the agent exits" + (" after stopping the engine" if engine_too else "")
        )
        daemon.request_exit(engine_too=engine_too)
        return {"accepted": True, "engine_too": daemon.stop_engine_on_exit}

    if daemon.bench is not None:
        daemon.bench.add_routes(api)

    app.include_router(public)
    app.include_router(api)

    @app.get("/openapi.json", include_in_schema=False, dependencies=[guard])
    async def openapi() -> dict[str, Any]:
        return app.openapi()

    @app.exception_handler(ValueError)
    async def value_error(_: Any, exc: ValueError) -> JSONResponse:
        return JSONResponse(status_code=422, content={"detail": str(exc)})

    return app
