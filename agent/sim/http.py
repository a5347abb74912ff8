"""The few lines of ASGI the simulated server needs: a request, its answers, routes, SSE framing.

No framework: at speedup 20 and 250 streaming clients the simulator writes ~15,000 SSE chunks a
second on one core, and a framework's per-chunk middleware would make it the bottleneck
(``agent.sim.server``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from agent.sim import responses
from agent.sim.protocol import BadRequest

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]


class Auth(Enum):
    OPEN = "open"
    NORMAL = "normal"
    ADMIN_OPTIONAL = "admin_optional"


@dataclass
class HttpRequest:
    """What a handler needs of an ASGI request."""

    scope: Scope
    receive: Receive
    send: Send

    @property
    def method(self) -> str:
        return str(self.scope["method"])

    def header(self, name: str) -> str:
        key = name.lower().encode()
        for k, v in self.scope.get("headers", ()):
            if k == key:
                return bytes(v).decode("latin-1")
        return ""

    async def body(self) -> bytes:
        chunks = []
        while True:
            message = await self.receive()
            if message["type"] == "http.disconnect":
                raise ConnectionResetError("client disconnected")
            chunks.append(message.get("body", b""))
            if not message.get("more_body", False):
                return b"".join(chunks)

    async def json(self) -> Any:
        try:
            return json.loads(await self.body())
        except ValueError:
            raise BadRequest("the request body is not valid JSON") from None

    async def respond(self, status: int, body: bytes, content_type: str) -> None:
        await self.send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", content_type.encode()),
                    (b"content-length", str(len(body)).encode()),
                ],
            }
        )
        await self.send({"type": "http.response.body", "body": body})

    async def respond_json(self, obj: Any, status: int = 200) -> None:
        await self.respond(status, responses.dumps(obj), "application/json")

    async def respond_text(self, content: str, status: int = 200) -> None:
        await self.respond(status, content.encode(), "text/plain; charset=utf-8")

    async def respond_error(self, status: int, message: str, err_type: str = "BadRequestError") -> None:
        """0.5.23's ``ErrorResponse`` shape (``openai/protocol.py``)."""
        body = {"object": "error", "message": message, "type": err_type, "param": None, "code": status}
        await self.respond_json(body, status)


Handler = Callable[[HttpRequest], Awaitable[None]]


@dataclass(frozen=True)
class Route:
    handler: Handler
    methods: frozenset[str]
    auth: Auth


def sse(data: bytes) -> bytes:
    return b"data: " + data + b"\n\n"


SSE_DONE = b"data: [DONE]\n\n"


def http_impl() -> str:
    """uvicorn's HTTP parser: httptools when installed (the faster one), else h11."""
    try:
        # Here, not at the top: whether the optional fast parser is installed is the question asked.
        import httptools  # noqa: F401
    except ImportError:
        return "h11"
    return "httptools"
