"""Server-sent events framing for the stream: ``id``, ``event`` and one ``data`` line per item."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent.serve.stream import StreamHub
from agent.wire import Snapshot

KEEPALIVE = b": ping\n\n"


def frame(item: object) -> bytes:
    kind = "snapshot" if isinstance(item, Snapshot) else "event"
    seq = getattr(item, "seq", 0)
    data = item.model_dump_json() if hasattr(item, "model_dump_json") else str(item)
    return f"id: {seq}\nevent: {kind}\ndata: {data}\n\n".encode()


async def sse_stream(hub: StreamHub, since: int, keepalive_s: float = 15.0) -> AsyncIterator[bytes]:
    # A first comment line lets the client see the stream is open before the first tick.
    yield b": k25console agent stream\n\n"
    async for item in hub.follow(since, keepalive_s):
        yield KEEPALIVE if item is None else frame(item)
