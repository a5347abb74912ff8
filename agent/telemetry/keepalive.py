"""A lean HTTP/1.1 GET on one kept-alive connection, for the requests the collector makes every tick.

The collector reads SGLang's ``/metrics`` (a 100+ kB page) four times a second. Through httpx that
read cost more CPU than parsing the page: the client, the connection pool, anyio's stream wrappers
and the response object run for every tick. Here one ``asyncio.Protocol`` feeds the bytes the event
loop reads straight into h11 (the HTTP/1.1 state machine httpx itself uses, so chunked and
content-length bodies, keep-alive and ``Connection: close`` follow the RFC) and wakes the caller once
the message is complete: no task, no stream object, no per-request client state.

What a real client must still do is kept: a bearer token, a connect timeout and a whole-request
timeout, a bounded body, and a fresh connection when the server dropped the kept-alive one (uvicorn
closes idle connections after 5 s, and a restarted engine has none of the old ones): a request that
fails on a reused connection before any answer arrived is sent once more on a new one. Errors are
httpx's own exception types, so callers and their messages are the same as with the httpx client.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final
from urllib.parse import urlsplit

import h11
import httpx

MAX_BODY_BYTES: Final = 32 * 1024 * 1024
"""A /metrics page is ~140 kB and /server_info a few tens of kB; anything near this is not SGLang."""


class _Exchange(asyncio.Protocol):
    """One TCP connection, one request at a time.

    h11 reads each response's status line and headers. A body with a ``Content-Length`` (what
    SGLang's uvicorn sends for /metrics and /server_info) is then collected as the chunks the event
    loop read, joined once: h11's own receive buffer would copy a 140 kB page four times over per
    tick. Chunked and close-delimited bodies stay with h11 to the end.
    """

    def __init__(self) -> None:
        self.h11 = h11.Connection(h11.CLIENT)
        self.transport: asyncio.Transport | None = None
        self.lost = False
        self.answered = False
        """Whether any byte of the current response arrived (a retry then would repeat a request
        the server saw; without one, the server closed an idle connection before reading it)."""
        self.status = 0
        self.keep_alive = False
        self.body_left: int | None = None
        """Bytes of a Content-Length body still to come (None: h11 reads the body)."""
        self.chunks: list[bytes] = []
        self.size = 0
        self.waiter: asyncio.Future[None] | None = None

    # -- asyncio.Protocol ---------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.answered = True
        if self.body_left is not None:
            self._body(data)
            return
        try:
            self.h11.receive_data(data)
        except RuntimeError as exc:  # bytes after h11 saw the connection closed
            self._fail(httpx.RemoteProtocolError(str(exc)))
            return
        self._pump()

    def eof_received(self) -> bool:
        if self.body_left is None:
            with contextlib.suppress(RuntimeError):  # a body delimited by the connection's end ends here
                self.h11.receive_data(b"")
            self._pump()
        self._fail(httpx.RemoteProtocolError("the server closed the connection without a full answer"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = True
        detail = f": {exc}" if exc else ""
        self._fail(httpx.ReadError(f"the connection was closed{detail}"))

    # -- reading a response -------------------------------------------------------------------
    def _pump(self) -> None:
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        while True:
            try:
                event = self.h11.next_event()
            except h11.RemoteProtocolError as exc:
                self._fail(httpx.RemoteProtocolError(f"malformed HTTP answer: {exc}"))
                return
            if event is h11.NEED_DATA or event is h11.PAUSED:
                return
            if isinstance(event, h11.Response):
                self.status = event.status_code
                length = _content_length(event)
                if length is not None:
                    self.keep_alive = _keeps_alive(event)
                    self.body_left = length
                    buffered, _ = self.h11.trailing_data
                    self._body(buffered)
                    return
            elif isinstance(event, h11.Data):
                self._add(bytes(event.data))
            elif isinstance(event, h11.EndOfMessage):
                self.keep_alive = self.h11.their_state is h11.DONE
                waiter.set_result(None)
                return
            elif isinstance(event, h11.ConnectionClosed):
                self._fail(httpx.RemoteProtocolError("the server closed the connection mid-answer"))
                return
            # InformationalResponse (1xx): wait for the real one.

    def _body(self, data: bytes) -> None:
        assert self.body_left is not None
        if data:
            self._add(data)
            self.body_left -= len(data)
        if self.body_left < 0:
            self._fail(httpx.RemoteProtocolError("more bytes than the Content-Length announced"))
        elif self.body_left == 0 and self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    def _add(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > MAX_BODY_BYTES:
            self._fail(httpx.RemoteProtocolError(f"answer larger than {MAX_BODY_BYTES} bytes"))
        else:
            self.chunks.append(data)

    def _fail(self, exc: Exception) -> None:
        self.keep_alive = False
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_exception(exc)

    # -- one request --------------------------------------------------------------------------
    def start(self, request: h11.Request) -> asyncio.Future[None]:
        """Send ``request``; the future completes when the whole answer is in ``chunks``.

        Each request gets a fresh h11 state machine (a kept-alive connection carries no state
        between requests that h11 would need)."""
        assert self.transport is not None
        self.h11 = h11.Connection(h11.CLIENT)
        self.status, self.chunks, self.size, self.answered = 0, [], 0, False
        self.keep_alive, self.body_left = False, None
        self.waiter = asyncio.get_running_loop().create_future()
        self.transport.write(self.h11.send(request) + self.h11.send(h11.EndOfMessage()))
        return self.waiter

    def reusable(self) -> bool:
        """Whether the last request ended cleanly on a connection the server keeps open."""
        return (
            self.keep_alive
            and not self.lost
            and self.transport is not None
            and not self.transport.is_closing()
            and self.waiter is not None
            and self.waiter.done()
        )

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()
        self.lost = True


def _content_length(response: h11.Response) -> int | None:
    """The body length of a response framed by ``Content-Length`` alone (None: chunked, no body
    by status, or read to the end of the connection, which h11 handles)."""
    if response.status_code in (204, 304):
        return None
    length: int | None = None
    for name, value in response.headers:
        if name == b"transfer-encoding":
            return None
        if name == b"content-length":
            length = int(value)  # h11 has checked it is a number, and that copies agree
    return length


def _keeps_alive(response: h11.Response) -> bool:
    if response.http_version != b"1.1":
        return False
    for name, value in response.headers:
        if name == b"connection" and b"close" in [t.strip() for t in value.lower().split(b",")]:
            return False
    return True


class KeptAliveGet:
    """GETs to one ``http://host:port`` on one kept-alive connection, one request at a time.

    Not for concurrent use: a caller that wants two requests in flight makes two of these.
    ``https`` URLs are refused (the caller uses its full client for those).
    """

    def __init__(
        self,
        base_url: str,
        *,
        headers: dict[str, str] | None = None,
        timeout_s: float = 5.0,
    ) -> None:
        parts = urlsplit(base_url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"KeptAliveGet takes an http://host[:port] URL, not {base_url!r}")
        self._host = parts.hostname
        self._port = parts.port or 80
        self._prefix = parts.path.rstrip("/")
        self._headers = [
            ("Host", parts.netloc),
            ("User-Agent", "k25console-agent"),
            ("Accept-Encoding", "identity"),  # SGLang need not gzip 100 kB four times a second
            *(headers or {}).items(),
        ]
        self._timeout = timeout_s
        self._exchange: _Exchange | None = None
        self._requests: dict[str, h11.Request] = {}

    async def get(self, path: str) -> tuple[int, bytes]:
        """``(status, body)`` of ``GET path``; raises httpx's ``ConnectError``, ``ReadTimeout``,
        ``ReadError`` or ``RemoteProtocolError`` (the connection is then dropped, not reused)."""
        request = self._requests.get(path)
        if request is None:
            request = self._requests[path] = h11.Request(
                method="GET", target=self._prefix + path, headers=self._headers
            )
        exchange = self._exchange
        if exchange is not None and exchange.reusable():
            try:
                return await self._send(exchange, request)
            except (httpx.ReadError, httpx.RemoteProtocolError):
                if exchange.answered:
                    raise
                # The server closed the idle connection as we reused it: once more, on a new one.
        return await self._send(await self._connect(), request)

    async def _connect(self) -> _Exchange:
        self.close()
        loop = asyncio.get_running_loop()
        try:
            # asyncio.timeout, not wait_for: on 3.11 wait_for swallowed a cancel that landed as the
            # connection opened, and the telemetry tick (and the agent's shutdown behind it) went on.
            async with asyncio.timeout(self._timeout):
                _, exchange = await loop.create_connection(_Exchange, self._host, self._port)
        except TimeoutError:
            raise httpx.ConnectTimeout(
                f"no connection to {self._host}:{self._port} within {self._timeout:g} s"
            ) from None
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from None
        self._exchange = exchange
        return exchange

    async def _send(self, exchange: _Exchange, request: h11.Request) -> tuple[int, bytes]:
        waiter = exchange.start(request)
        timer = asyncio.get_running_loop().call_later(self._timeout, self._expire, exchange)
        try:
            await waiter
        except BaseException:
            exchange.close()  # half a response in flight: the connection cannot be reused
            if self._exchange is exchange:
                self._exchange = None
            raise
        finally:
            timer.cancel()
        body = exchange.chunks[0] if len(exchange.chunks) == 1 else b"".join(exchange.chunks)
        exchange.chunks = []
        if not exchange.reusable():  # Connection: close, or an HTTP/1.0 answer
            exchange.close()
            self._exchange = None
        return exchange.status, body

    def _expire(self, exchange: _Exchange) -> None:
        exchange._fail(httpx.ReadTimeout(f"no full answer within {self._timeout:g} s"))

    def close(self) -> None:
        """Drop the connection (a later ``get`` opens a new one)."""
        if self._exchange is not None:
            self._exchange.close()
            self._exchange = None
