"""Server-sent events framing for the stream: ``id``, ``event`` and one ``data`` line per item."""

from __future__ import annotations

from collections.abc import AsyncIterator

from agent.serve.stream import Stored, StreamHub

KEEPALIVE = b": ping\n\n"


def frame(item: Stored) -> bytes:
    """The item's SSE frame, from the JSON serialised once when it was published."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (item.seq, item.kind.encode(), item.json())


async def sse_stream(hub: StreamHub, since: int, keepalive_s: float = 15.0) -> AsyncIterator[bytes]:
    # A first comment line lets the client see the stream is open before the first tick.
    yield b": k25console agent stream\n\n"
    async for item in hub.follow(since, keepalive_s):
        yield KEEPALIVE if item is None else frame(item)
