"""Every request body has a size limit, and JSON the agent cannot take is refused naming where.

One limit for every route (``MAX_BODY_BYTES``): a body announced larger is refused before a byte of
it is read, one that grows past it while streaming is refused there (413, naming the limit). The
fields have their own limits in the request models (a 422 names the field).

JSON that Python's parser takes but a number field cannot hold, or that would make the parser work
without bound, is refused here with the field it is in and what is allowed, instead of a 500 or
"There was an error parsing the body": ``NaN``/``Infinity`` and numbers out of a double's range
(``1e400``), integers longer than ``MAX_INT_DIGITS`` digits (Python refuses 4300 and more, and
converting them costs time), nesting deeper than ``MAX_DEPTH``, bytes that are not UTF-8, and text
that is not JSON. The answer never quotes what was sent.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from starlette.responses import JSONResponse

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY_BYTES = 1024 * 1024
"""The largest request body the agent reads (a 256 KiB profile fits with its JSON escaping)."""
MAX_DEPTH = 32
"""The deepest nesting of arrays and objects in a body (the agent's deepest is 3)."""
MAX_INT_DIGITS = 20
"""The longest integer a body may hold: every count, size and id the agent takes fits 64 bits."""

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}:,]')
_WITHOUT_BODY = frozenset({"GET", "HEAD", "OPTIONS"})


class BadJson(Exception):
    def __init__(self, loc: list[str | int], msg: str, kind: str) -> None:
        super().__init__(msg)
        self.loc, self.msg, self.kind = loc, msg, kind

    def detail(self) -> list[dict[str, Any]]:
        return [{"loc": ["body", *self.loc], "msg": self.msg, "type": self.kind}]


class _Bad:
    """A number the JSON parser read that no field of the agent can hold: what it was, in words."""

    def __init__(self, msg: str, kind: str) -> None:
        self.msg, self.kind = msg, kind


def _float(text: str) -> float | _Bad:
    value = float(text)
    if math.isfinite(value):
        return value
    return _Bad("a number out of range (beyond ±1.8e308): send a finite number", "number_out_of_range")


def _int(text: str) -> int | _Bad:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Bad(
            f"a number of {digits} digits: at most {MAX_INT_DIGITS} digits are taken", "number_too_long"
        )
    return int(text)


def _constant(name: str) -> _Bad:
    return _Bad(f"{name} is no number JSON allows: send a finite number", "number_not_finite")


def _find(value: Any, want: Callable[[Any], bool]) -> tuple[list[str | int], Any] | None:
    """The path to the first value ``want`` holds for (depth is bounded before this runs)."""
    stack: list[tuple[list[str | int], Any]] = [([], value)]
    while stack:
        path, item = stack.pop()
        if want(item):
            return path, item
        if isinstance(item, dict):
            stack.extend(([*path, str(k)[:64]], v) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend(([*path, i], v) for i, v in reversed(list(enumerate(item))))
    return None


def _too_deep(text: str) -> list[str | int] | None:
    """Where nesting passes ``MAX_DEPTH`` (the keys and indices down to there), or None."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return None
    path: list[str | int] = []
    kinds: list[str] = []
    last_string: str | None = None
    for match in _TOKEN.finditer(text):
        token = match.group(0)
        if token in "[{":
            kinds.append(token)
            if len(kinds) > MAX_DEPTH:
                return path[:4]  # where it starts is enough to name the field
            path.append(0 if token == "[" else "")
        elif token in "]}":
            if kinds:
                kinds.pop()
                path.pop()
        elif token == ":" and last_string is not None and path:
            path[-1] = last_string[1:-1][:64]
        elif token == "," and kinds and kinds[-1] == "[" and isinstance(path[-1], int):
            path[-1] += 1
        last_string = token if token.startswith('"') else None
    return None


def _not_utf8(raw: bytes, error: UnicodeDecodeError) -> BadJson:
    """Bytes that are not UTF-8, named by the field whose text holds them where that can be found."""
    where: list[str | int] = []
    try:
        parsed = json.loads(raw.decode("utf-8", errors="surrogateescape"))
        found = _find(parsed, lambda v: isinstance(v, str) and any("\udc80" <= c <= "\udcff" for c in v))
        where = found[0] if found else []
    except (ValueError, RecursionError):
        pass
    byte = raw[error.start]
    return BadJson(
        where,
        f"not UTF-8 text (byte 0x{byte:02x} at offset {error.start}): send JSON in UTF-8",
        "utf8_invalid",
    )


def check_json(raw: bytes) -> None:
    """Raise ``BadJson`` when ``raw`` is JSON the agent does not take (see the module)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(raw, exc) from None
    deep = _too_deep(text)
    if deep is not None:
        raise BadJson(deep, f"nested deeper than {MAX_DEPTH} levels of arrays and objects", "too_deep")
    try:
        parsed = json.loads(text, parse_float=_float, parse_int=_int, parse_constant=_constant)
    except json.JSONDecodeError as exc:
        raise BadJson([], f"not valid JSON at character {exc.pos}: {exc.msg}", "json_invalid") from None
    except RecursionError:
        raise BadJson(
            [], f"nested deeper than {MAX_DEPTH} levels of arrays and objects", "too_deep"
        ) from None
    found = _find(parsed, lambda v: isinstance(v, _Bad))
    if found is not None:
        path, bad = found
        raise BadJson(path, bad.msg, bad.kind)


def _too_large(announced: int | None = None) -> JSONResponse:
    said = f" ({announced} bytes announced)" if announced is not None else ""
    return JSONResponse(
        status_code=413,
        content={
            "detail": f"the request body is larger than {MAX_BODY_BYTES} bytes (1 MiB), the most the agent "
            f"reads{said}; nothing was done"
        },
    )


def _is_json(scope: Scope) -> bool:
    """FastAPI parses a body as JSON when it says so, or says nothing."""
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            kind: str = bytes(value).decode("latin-1").split(";")[0].strip().lower()
            return kind == "application/json" or kind.endswith("+json")
    return True


class BodyLimit:
    """ASGI middleware: the size limit and the JSON checks before any route reads a body."""

    def __init__(self, app: App) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] in _WITHOUT_BODY:
            await self.app(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > MAX_BODY_BYTES:
            await _too_large(length)(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay(b"", receive, message), send)
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                await _too_large()(scope, receive, send)
                return
            chunks.append(chunk)
            more = message.get("more_body", False) is True
        raw = b"".join(chunks)
        if raw and _is_json(scope):
            try:
                check_json(raw)
            except BadJson as bad:
                await JSONResponse(status_code=422, content={"detail": bad.detail()})(scope, receive, send)
                return
        await self.app(scope, _replay(raw, receive), send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


def _replay(raw: bytes, receive: Receive, first: Message | None = None) -> Receive:
    """The body read once, handed to the app as one message; then the client's own messages."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return first if first is not None else {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return again
