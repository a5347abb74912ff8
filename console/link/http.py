"""The agent's HTTP API over a local UNIX socket, with the bearer token; shared by local and SSH links."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, Literal

import httpx
from pydantic import BaseModel, ConfigDict, JsonValue, TypeAdapter, ValidationError

from agent.wire.bench_request import FIELD_RULE
from console.link.base import Link, LinkError, StreamItem
from console.link.errors import agent_socket_error
from console.link.sse import SseParser

CALL_TIMEOUT_S = 10.0
"""Every API call is bounded: a frozen link must surface as an error, never as a hung screen."""

STREAM_READ_TIMEOUT_S = 40.0
"""The agent sends a keep-alive every 15 s; two missed ones mean the stream is dead."""


class ErrorBody(BaseModel):
    """The agent's error answer: FastAPI's ``{"detail": ...}``."""

    model_config = ConfigDict(extra="ignore")

    detail: JsonValue = None


def _detail(response: httpx.Response) -> Any:
    try:
        body = response.json()
    except ValueError:
        return response.text.strip() or response.reason_phrase
    if isinstance(body, dict):
        answer = ErrorBody.model_validate(body)
        return answer.detail if "detail" in answer.model_fields_set else body
    return body


def _message(status: int, detail: Any) -> str:
    if status == 401:
        return "the agent refused the token (401): the token file changed; reconnect to read it again"
    if isinstance(detail, str):
        return f"{detail} (HTTP {status})"
    refused = refusal_words(detail)
    if refused is not None:
        return f"{refused} (HTTP {status})"
    return f"the agent answered HTTP {status}: {detail}"


class Refusal(BaseModel):
    """One refusal of a 422 (``agent.api.errors``): where, in words, of which type."""

    model_config = ConfigDict(extra="ignore")

    loc: list[str | int] = []
    msg: str = ""
    type: str = ""


_REFUSALS = TypeAdapter(list[Refusal])


def refusal_words(detail: Any) -> str | None:
    """A 422's list of refusals as one line an operator reads, ``concurrency levels: a list of ...;
    mode: sweep or compare`` (a worded refusal names its field itself); None for another shape."""
    try:
        refusals = _REFUSALS.validate_python(detail)
    except ValidationError:
        return None
    if not refusals:
        return None
    lines = []
    for refusal in refusals[:3]:
        loc = [str(p) for p in refusal.loc if p != "body" and not isinstance(p, int)]
        worded = refusal.type in (FIELD_RULE, "more_errors") or not loc
        lines.append(refusal.msg if worded else f"{loc[-1]}: {refusal.msg}")
    return "; ".join(lines)


class UdsHttp:
    """An httpx client bound to one UNIX socket path and one token.

    ``connect_error`` words a failure to connect to the socket for the link that owns it: a local
    socket nobody listens on means no agent; an SSH forward's socket gone means the SSH link went.
    """

    def __init__(
        self,
        socket_path: str,
        token: str,
        connect_error: Callable[[BaseException], LinkError] | None = None,
    ) -> None:
        self.socket_path = socket_path
        self._connect_error = connect_error or (
            lambda exc: agent_socket_error(f"the agent's socket {socket_path}", exc)
        )
        self._client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=socket_path),
            base_url="http://agent",
            headers={"Authorization": f"Bearer {token}"},
            timeout=httpx.Timeout(CALL_TIMEOUT_S),
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        try:
            response = await self._client.request(method, path, params=params, json=body, headers=headers)
        except httpx.ConnectError as exc:
            raise self._connect_error(exc) from exc
        except httpx.HTTPError as exc:
            raise LinkError(f"lost the agent: {exc.__class__.__name__} {exc}".strip()) from exc
        if response.status_code >= 400:
            detail = _detail(response)
            raise LinkError(
                _message(response.status_code, detail),
                status=response.status_code,
                retryable=response.status_code >= 500,
                detail=detail,
            )
        return response.json()

    async def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        params = {} if since is None else {"since": since}
        timeout = httpx.Timeout(CALL_TIMEOUT_S, read=STREAM_READ_TIMEOUT_S)
        parser = SseParser()
        try:
            async with self._client.stream("GET", "/v1/stream", params=params, timeout=timeout) as response:
                if response.status_code >= 400:
                    await response.aread()
                    detail = _detail(response)
                    raise LinkError(
                        _message(response.status_code, detail),
                        status=response.status_code,
                        retryable=response.status_code != 401,
                    )
                async for line in response.aiter_lines():
                    item = parser.feed(line.rstrip("\r"))
                    if item is not None:
                        yield item
        except httpx.ConnectError as exc:
            raise self._connect_error(exc) from exc
        except httpx.HTTPError as exc:
            raise LinkError(f"the stream dropped: {exc.__class__.__name__} {exc}".strip()) from exc
        raise LinkError("the agent closed the stream")


class UdsHttpLink(Link):
    """A link whose last hop is the agent's HTTP API on a local UNIX socket (the agent's own, or an
    SSH forward of it): subclasses only open and close the path; calls go through ``UdsHttp``."""

    _http: UdsHttp | None = None

    def _require(self) -> UdsHttp:
        if self._http is None:
            raise LinkError("not connected to the agent")
        return self._http

    async def request(
        self,
        method: Literal["GET", "POST", "PUT", "DELETE"],
        path: str,
        *,
        params: Mapping[str, str | int] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        return await self._require().request(method, path, params=params, body=body, headers=headers)

    async def stream(self, since: int | None) -> AsyncIterator[StreamItem]:
        async for item in self._require().stream(since):
            yield item
