"""The live stream (server-sent events) and the ring's snapshots and events as lists."""

from __future__ import annotations

from fastapi import APIRouter, Header, Query
from fastapi.responses import Response, StreamingResponse
from pydantic import BaseModel

from agent.api.routes.common import DaemonDep
from agent.api.sse import sse_stream
from agent.serve.stream import json_list
from agent.wire import Event, Snapshot

router = APIRouter()


class SnapshotList(BaseModel):
    snapshots: list[Snapshot]


class EventList(BaseModel):
    events: list[Event]


@router.get(
    "/stream", response_class=StreamingResponse, responses={200: {"content": {"text/event-stream": {}}}}
)
async def stream(
    daemon: DaemonDep,
    since: int | None = Query(None, ge=0, description="Replay everything after this seq first"),
    last_event_id: int | None = Header(None, ge=0),
) -> StreamingResponse:
    cursor = (
        since if since is not None else (last_event_id if last_event_id is not None else daemon.hub.last_seq)
    )
    return StreamingResponse(
        sse_stream(daemon.hub, cursor),
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"},
    )


# The ring holds each item's JSON as the stream sent it: the lists are put together from those
# bytes (an hour of snapshots is 3,600+ of them), not decoded into models and encoded again.
@router.get("/snapshots", response_model=SnapshotList)
async def snapshots(
    daemon: DaemonDep, since: int = Query(0, ge=0), limit: int = Query(3600, ge=1, le=20_000)
) -> Response:
    items = daemon.hub.snapshots.since(since, limit)
    return Response(json_list("snapshots", items), media_type="application/json")


@router.get("/events", response_model=EventList)
async def events(daemon: DaemonDep, since: int = Query(0, ge=0)) -> Response:
    return Response(json_list("events", daemon.hub.events.since(since)), media_type="application/json")
