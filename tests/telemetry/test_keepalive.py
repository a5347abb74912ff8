"""The collector's lean GET: real sockets, servers that answer in each HTTP/1.1 framing."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

import httpx
import pytest

from agent.telemetry.keepalive import KeptAliveGet

Handler = Callable[[bytes, asyncio.StreamWriter], Awaitable[bool]]
"""Answers one request (its head); returns whether to keep the connection open."""


@asynccontextmanager
async def raw_server(handler: Handler) -> AsyncIterator[tuple[str, list[int]]]:
    """A hand-written HTTP server on 127.0.0.1; yields its URL and the number of connections it took."""
    connections: list[int] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections.append(1)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                if not await handler(head, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}", connections
    finally:
        server.close()
        await server.wait_closed()


async def test_content_length_body_on_one_kept_alive_connection() -> None:
    heads: list[bytes] = []
    body = b"x" * 300_000  # larger than one read, so it comes in several chunks

    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        heads.append(head)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body))
        for i in range(0, len(body), 50_000):
            writer.write(body[i : i + 50_000])
            await writer.drain()
        return True

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url, headers={"Authorization": "Bearer sk-1"})
        for _ in range(3):
            assert await get.get("/metrics") == (200, body)
        get.close()
    assert len(connections) == 1
    assert b"GET /metrics HTTP/1.1" in heads[0]
    assert b"Authorization: Bearer sk-1" in heads[0] and b"Accept-Encoding: identity" in heads[0]


async def test_chunked_body() -> None:
    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
        return True

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url)
        assert await get.get("/a") == (404, b"hello world")
        assert await get.get("/b") == (404, b"hello world")
        get.close()
    assert len(connections) == 1


async def test_connection_close_and_close_delimited_bodies_reconnect() -> None:
    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        if b"/close-delimited" in head:
            writer.write(b"HTTP/1.0 200 OK\r\n\r\nuntil the end")
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return False

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url)
        assert await get.get("/close-delimited") == (200, b"until the end")
        assert await get.get("/x") == (200, b"ok")
        assert await get.get("/x") == (200, b"ok")
        get.close()
    assert len(connections) == 3


async def test_an_idle_connection_the_server_dropped_is_replaced() -> None:
    """uvicorn closes an idle kept-alive connection after 5 s: the next GET must not fail for it."""
    writers: list[asyncio.StreamWriter] = []

    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        writers.append(writer)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url)
        assert await get.get("/m") == (200, b"ok")
        writers[0].close()  # the server's keep-alive timeout
        await writers[0].wait_closed()
        assert await get.get("/m") == (200, b"ok")
        get.close()
    assert len(connections) == 2


async def test_a_request_the_server_dropped_unanswered_is_sent_once_more() -> None:
    """The race behind the case above: the server closes the idle connection just as the next
    request arrives, so the request gets no answer at all. It goes again on a new connection."""
    per_connection: dict[int, int] = {}

    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        key = id(writer)
        per_connection[key] = per_connection.get(key, 0) + 1
        if per_connection[key] == 2:
            return False  # closed without a byte of answer
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url)
        assert await get.get("/m") == (200, b"ok")
        assert await get.get("/m") == (200, b"ok")
        get.close()
    assert len(connections) == 2 and sorted(per_connection.values()) == [1, 2]


async def test_a_half_answer_is_an_error_not_a_retry() -> None:
    """Once the server began to answer, sending the request again could repeat what it did."""
    calls: list[int] = []

    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        calls.append(1)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")
        await writer.drain()
        return False

    async with raw_server(handler) as (url, _):
        get = KeptAliveGet(url)
        with pytest.raises((httpx.RemoteProtocolError, httpx.ReadError)):
            await get.get("/m")
        get.close()
    assert len(calls) == 1


async def test_a_silent_server_times_out_and_the_connection_is_dropped() -> None:
    calls: list[int] = []

    async def handler(head: bytes, writer: asyncio.StreamWriter) -> bool:
        calls.append(1)
        if len(calls) == 1:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhalf")  # never finishes
            return True
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True

    async with raw_server(handler) as (url, connections):
        get = KeptAliveGet(url, timeout_s=0.2)
        with pytest.raises(httpx.ReadTimeout):
            await get.get("/m")
        assert await get.get("/m") == (200, b"ok")
        get.close()
    assert len(connections) == 2


async def test_errors_are_httpx_errors() -> None:
    async def garbage(head: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"SPEAKING NONSENSE\r\n\r\n")
        return True

    async with raw_server(garbage) as (url, _):
        get = KeptAliveGet(url)
        with pytest.raises(httpx.RemoteProtocolError):
            await get.get("/m")
        get.close()
    async with raw_server(garbage) as (url, _):
        pass  # the port is free again: nothing listens
    with pytest.raises(httpx.ConnectError):
        await KeptAliveGet(url).get("/m")
    with pytest.raises(ValueError, match="http://host"):
        KeptAliveGet("https://127.0.0.1:1")
