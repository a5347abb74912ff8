"""The demo's traffic leaves the engine to a benchmark: new requests wait, those in flight are cut off.

Against a real HTTP server (uvicorn on loopback) whose streaming answer runs until the client goes: the
demo traffic's request must end when a benchmark starts, and the server must see the client leave
(that is what aborts the request in SGLang and in the simulated engine).
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator

import httpx
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from console.demo.traffic import EngineAddress, _one_request, _unless_benchmark


class EndlessStream:
    """A chat endpoint that streams until its client disconnects."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.client_gone = asyncio.Event()

    async def chat(self, request: Request) -> StreamingResponse:
        async def chunks() -> AsyncIterator[bytes]:
            self.started.set()
            try:
                while True:
                    yield b'data: {"choices": []}\n\n'
                    await asyncio.sleep(0.02)
            finally:
                self.client_gone.set()

        return StreamingResponse(chunks(), media_type="text/event-stream")


async def test_a_benchmark_cuts_off_the_demo_requests_in_flight() -> None:
    endless = EndlessStream()
    app = Starlette(routes=[Route("/v1/chat/completions", endless.chat, methods=["POST"])])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=1)
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # uvicorn has no awaitable "started" event
                await asyncio.sleep(0.01)
        address = EngineAddress()
        address.set_url(url)
        async with httpx.AsyncClient(timeout=30.0) as client:
            request = asyncio.create_task(_unless_benchmark(address, _one_request(client, url, "hello")))
            async with asyncio.timeout(10):
                await endless.started.wait()
            assert not request.done()  # the stream runs until something ends it
            address.set_benchmark(True)
            async with asyncio.timeout(10):
                await request  # ends without an error
                await endless.client_gone.wait()
            assert not address.open  # and no new request goes out until the benchmark ends
    finally:
        server.should_exit = True
        await serving
        sock.close()
