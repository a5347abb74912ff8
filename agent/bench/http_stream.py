"""A minimal HTTP/1.1 client for streamed POSTs over asyncio streams, one keep-alive connection each.

Why not httpx for the load itself: its connection pool scans every connection on each request start
and finish (O(n²) at 250 streams) and its per-chunk path costs ~35-55 µs; measured against a local
SSE server, the load generator then saturates a core at c=250 (bench/costs/loadgen_overhead.py). Each
closed-loop worker here owns one connection, and a chunk costs a readline and a readexactly. Control
endpoints (/server_info, /metrics, ...) still go through httpx.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit


class ConnectFailed(ConnectionError):
    """No TCP connection to the server (refused, unreachable, timed out)."""


class ProtocolFailure(ConnectionError):
    """The server broke the HTTP exchange (closed mid-stream, malformed framing)."""


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    tls: bool
    base_path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r}: expected http://HOST:PORT or https://HOST:PORT")
        tls = parts.scheme == "https"
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls, parts.path.rstrip("/"))


class StreamConnection:
    """One keep-alive connection; ``post_sse`` yields each ``data:`` payload of the response."""

    def __init__(self, target: Target, connect_timeout_s: float = 10.0) -> None:
        self.target = target
        self.connect_timeout_s = connect_timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def _connect(self) -> None:
        t = self.target
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallowed a cancel (a benchmark stopped)
            # that landed as the connection opened, and the stream went on to send its request.
            async with asyncio.timeout(self.connect_timeout_s):
                self._reader, self._writer = await asyncio.open_connection(
                    t.host, t.port, ssl=ssl.create_default_context() if t.tls else None
                )
        except (OSError, TimeoutError) as exc:
            raise ConnectFailed(f"{t.host}:{t.port}: {exc}") from exc

    async def close(self) -> None:
        writer, self._reader, self._writer = self._writer, None, None
        if writer is not None:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    def _request_bytes(self, path: str, body: bytes, headers: dict[str, str]) -> bytes:
        t = self.target
        lines = [
            f"POST {t.base_path}{path} HTTP/1.1",
            f"Host: {t.host}:{t.port}",
            "Content-Type: application/json",
            "Accept: text/event-stream",
            f"Content-Length: {len(body)}",
            *(f"{k}: {v}" for k, v in headers.items()),
        ]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    async def post_sse(
        self, path: str, payload: dict[str, Any], headers: dict[str, str]
    ) -> AsyncGenerator[tuple[int, bytes], None]:
        """Yield (status, data) for each SSE ``data:`` line; for a non-200 answer, one (status, body)."""
        body = json.dumps(payload).encode()
        request = self._request_bytes(path, body, headers)
        reused = self._writer is not None
        if not reused:
            await self._connect()
        try:
            status, reply_headers = await self._send_and_read_head(request)
        except ProtocolFailure:
            if not reused:
                raise
            # The server closed an idle keep-alive connection: one retry on a fresh one.
            await self.close()
            await self._connect()
            status, reply_headers = await self._send_and_read_head(request)
        keep_alive = reply_headers.get("connection", "").lower() != "close"
        try:
            if status != 200:
                yield status, await self._read_body(reply_headers)
                return
            async for data in self._sse_lines(reply_headers):
                yield status, data
        except BaseException:
            await self.close()
            raise
        if not keep_alive:
            await self.close()

    async def _send_and_read_head(self, request: bytes) -> tuple[int, dict[str, str]]:
        assert self._reader is not None and self._writer is not None
        try:
            self._writer.write(request)
            await self._writer.drain()
            head = await self._reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError) as exc:
            raise ProtocolFailure(f"no response head: {exc!r}") from exc
        lines = head.decode("latin-1").split("\r\n")
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError) as exc:
            raise ProtocolFailure(f"bad status line {lines[0]!r}") from exc
        headers = {}
        for line in lines[1:]:
            if ":" in line:
                key, value = line.split(":", 1)
                headers[key.strip().lower()] = value.strip()
        return status, headers

    async def _chunks(self, headers: dict[str, str]) -> AsyncIterator[bytes]:
        reader = self._reader
        assert reader is not None
        try:
            if "chunked" in headers.get("transfer-encoding", "").lower():
                while True:
                    size_line = await reader.readline()
                    size = int(size_line.split(b";", 1)[0].strip() or b"x", 16)
                    if size == 0:
                        await reader.readuntil(b"\r\n")  # trailer end (no trailers expected)
                        return
                    data = await reader.readexactly(size + 2)
                    yield data[:-2]
            elif "content-length" in headers:
                yield await reader.readexactly(int(headers["content-length"]))
            else:
                yield await reader.read()
                await self.close()
        except (asyncio.IncompleteReadError, ConnectionError, ValueError) as exc:
            raise ProtocolFailure(f"response cut short: {exc!r}") from exc

    async def _read_body(self, headers: dict[str, str]) -> bytes:
        return b"".join([chunk async for chunk in self._chunks(headers)])

    async def _sse_lines(self, headers: dict[str, str]) -> AsyncIterator[bytes]:
        pending = b""
        async for chunk in self._chunks(headers):
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.startswith(b"data:"):
                    yield line[5:].strip()
        if pending.startswith(b"data:"):
            yield pending[5:].strip()
